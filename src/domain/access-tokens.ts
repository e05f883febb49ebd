// Short-lived access tokens: an HMAC-SHA256-signed JSON payload, `<payload>.<signature>` in base64url.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { ROLES, type Role } from './auth-user.ts';

export interface AccessClaims {
  /** user id */
  sub: string;
  role: Role;
  /** issued at, seconds since the epoch */
  iat: number;
  /** expires at, seconds since the epoch */
  exp: number;
  /** which key signed it */
  kid: string;
}

export interface AccessTokens {
  /** Returns a signed token for the user, valid for the configured lifetime from `now`. */
  issue(user: { id: string; role: Role }, now: Date): string;
  /** Returns the claims of a genuine, unexpired token; `null` for anything else. */
  verify(token: string, now: Date): AccessClaims | null;
}

/** Returns an issuer and verifier of access tokens signed with `secret`. */
export function createAccessTokens(secret: Buffer, ttlSeconds: number): AccessTokens {
  const kid = createHash('sha256').update(secret).digest('base64url').slice(0, 8);
  const sign = (payload: string) => createHmac('sha256', secret).update(payload).digest();

  return {
    issue(user, now) {
      const iat = Math.floor(now.getTime() / 1000);
      const claims: AccessClaims = { sub: user.id, role: user.role, iat, exp: iat + ttlSeconds, kid };
      const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
      return `${payload}.${sign(payload).toString('base64url')}`;
    },

    verify(token, now) {
      const parts = token.split('.');
      if (parts.length !== 2) return null;
      const [payload = '', signature = ''] = parts;
      const given = Buffer.from(signature, 'base64url');
      const expected = sign(payload);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
      const claims = parseClaims(Buffer.from(payload, 'base64url').toString('utf8'));
      if (!claims || claims.kid !== kid || claims.exp * 1000 <= now.getTime()) return null;
      return claims;
    },
  };
}

function parseClaims(json: string): AccessClaims | null {
  try {
    const value = JSON.parse(json) as Partial<AccessClaims>;
    const wellFormed =
      typeof value.sub === 'string' &&
      ROLES.includes(value.role as Role) &&
      Number.isSafeInteger(value.iat) &&
      Number.isSafeInteger(value.exp) &&
      typeof value.kid === 'string';
    return wellFormed ? (value as AccessClaims) : null;
  } catch {
    return null;
  }
}
