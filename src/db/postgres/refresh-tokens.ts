// Refresh tokens on PostgreSQL: the same contract as ../refresh-tokens.ts. Under READ COMMITTED, two exchanges of one
// token would both see it unused and both succeed, and a reuse could revoke a family while an exchange in it adds a
// token the revocation does not see. So each exchange first takes its family's lock: the exchanges and reuses of one
// family run one after another, each seeing what the previous one committed, as on SQLite.
import { randomBytes, randomUUID } from 'node:crypto';
import type { PgSql, PostgresEngine } from '../pg-engine.ts';
import { hashToken, TOKEN_SHAPE, type Exchange, type RefreshTokenRepository } from '../refresh-tokens.ts';

/** The first key of the families' transaction advisory locks (the second is the hash of the family): "rt". */
const FAMILY_LOCKS = 0x7274;

interface TokenRow {
  family_id: string;
  user_id: string;
  expires_at: number;
  revoked_reason: string | null;
  is_active: number;
}

/** Stores a new token of the family and returns it. */
async function issue(tx: PgSql, userId: string, familyId: string, now: number, ttlSeconds: number): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await tx`INSERT INTO refresh_tokens (token_hash, family_id, user_id, created_at, expires_at)
    VALUES (${hashToken(token)}, ${familyId}, ${userId}, ${now}, ${now + ttlSeconds * 1000})`;
  return token;
}

/** Waits for the lock of the token's family (held until this transaction ends); false when there is no such token. */
async function lockFamily(tx: PgSql, hash: string): Promise<boolean> {
  const rows = await tx`SELECT pg_advisory_xact_lock(${FAMILY_LOCKS}::integer, hashtext(family_id))
    FROM refresh_tokens WHERE token_hash = ${hash}`;
  return rows.length > 0;
}

/** The exchange in the caller's transaction: the check, the revocation and the new token commit together. */
async function exchange(tx: PgSql, token: string, now: number, ttlSeconds: number): Promise<Exchange> {
  if (!TOKEN_SHAPE.test(token)) return { ok: false };
  const hash = hashToken(token);
  if (!(await lockFamily(tx, hash))) return { ok: false };
  // Read after the lock: this statement's snapshot includes what the family's previous holder committed.
  const [row] = await tx<TokenRow[]>`
    SELECT t.family_id, t.user_id, t.expires_at, t.revoked_reason, u.is_active
    FROM refresh_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ${hash}`;
  if (!row) return { ok: false };
  if (row.revoked_reason === 'exchanged') {
    // A token presented a second time was stolen or replayed: end every session of its family (RFC 9700 4.14.2).
    await tx`UPDATE refresh_tokens SET revoked_at = ${now}, revoked_reason = 'reused'
      WHERE family_id = ${row.family_id} AND revoked_at IS NULL`;
    return { ok: false };
  }
  // BIGINT arrives as a string unless the engine parses it: compare numbers.
  if (row.revoked_reason !== null || row.expires_at <= now || row.is_active !== 1) return { ok: false };
  // Conditional: a sign-out or a deactivation (which take no family lock) may have revoked it since the read.
  const revoked = await tx`UPDATE refresh_tokens SET revoked_at = ${now}, revoked_reason = 'exchanged'
    WHERE token_hash = ${hash} AND revoked_at IS NULL RETURNING 1`;
  if (revoked.length === 0) return { ok: false };
  return { ok: true, userId: row.user_id, refreshToken: await issue(tx, row.user_id, row.family_id, now, ttlSeconds) };
}

/** Returns the refresh-token operations on the PostgreSQL engine. */
export function createPgRefreshTokenRepository(engine: PostgresEngine): RefreshTokenRepository {
  return {
    startFamily(userId, now, ttlSeconds) {
      return engine.write(async (tx) => {
        await tx`DELETE FROM refresh_tokens WHERE user_id = ${userId} AND expires_at < ${now.getTime() - 86_400_000}`;
        return issue(tx, userId, randomUUID(), now.getTime(), ttlSeconds);
      });
    },

    exchangeToken(token, now, ttlSeconds) {
      return engine.write((tx) => exchange(tx, token, now.getTime(), ttlSeconds));
    },

    async revokeToken(token, userId, now) {
      if (!TOKEN_SHAPE.test(token)) return;
      await engine.write(
        (tx) => tx`UPDATE refresh_tokens SET revoked_at = ${now.getTime()}, revoked_reason = 'signed_out'
          WHERE token_hash = ${hashToken(token)} AND user_id = ${userId} AND revoked_at IS NULL`,
      );
    },
  };
}
