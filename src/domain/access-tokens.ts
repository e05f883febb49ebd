// Short-lived access tokens: an HMAC-SHA256-signed JSON payload, `<payload>.<signature>` in base64url.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
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
  /** random token id: two tokens issued in the same second still differ */
  jti: string;
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
  const sign = (payload: string) => createHmac('sha256', secret).update(payload).digest('base64url');

  return {
    issue(user, now) {
      const iat = Math.floor(now.getTime() / 1000);
      const claims: AccessClaims = { sub: user.id, role: user.role, iat, exp: iat + ttlSeconds, kid, jti: randomBytes(9).toString('base64url') };
      const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
      return `${payload}.${sign(payload)}`;
    },

    verify(token, now) {
      // Compared as canonical base64url text: decoding first would accept many spellings of one signature.
      const match = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(token);
      if (!match) return null;
      const [, payload = '', signature = ''] = match;
      const given = Buffer.from(signature, 'latin1');
      const expected = Buffer.from(sign(payload), 'latin1');
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
      typeof value.kid === 'string' &&
      typeof value.jti === 'string';
    return wellFormed ? (value as AccessClaims) : null;
  } catch {
    return null;
  }
}
