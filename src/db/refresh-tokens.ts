// SQL for refresh tokens: random, single use, stored only as hashes, grouped in families per sign-in.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { SqliteEngine } from './engine.ts';

/** What a refresh token looks like: 32 random bytes in base64url. */
export const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** Returns what is stored of a token: its SHA-256. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** What exchanging a refresh token gives: the user and the token that replaces it, or nothing usable. */
export type Exchange = { ok: true; userId: string; refreshToken: string } | { ok: false };

/** The refresh tokens; every write is a single transaction. */
export interface RefreshTokenRepository {
  /** Starts a new family for a sign-in and resolves to its first token; drops the user's long-expired tokens. */
  startFamily(userId: string, now: Date, ttlSeconds: number): Promise<string>;
  /**
   * Revokes the presented token and resolves to a new one in its family; `{ ok: false }` for any unusable token.
   * A token presented a second time revokes its whole family.
   */
  exchangeToken(token: string, now: Date, ttlSeconds: number): Promise<Exchange>;
  /** Revokes the token if it is the user's and still active; anything else is a no-op. */
  revokeToken(token: string, userId: string, now: Date): Promise<void>;
}

/** Returns the refresh-token operations on the engine, prepared once. */
export function createRefreshTokenRepository(engine: SqliteEngine): RefreshTokenRepository {
  const { db } = engine;
  const insert = db.prepare(
    `INSERT INTO refresh_tokens (token_hash, family_id, user_id, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?)`,
  );
  const find = db.prepare<[string], { family_id: string; user_id: string; expires_at: number; revoked_reason: string | null; is_active: number }>(
    `SELECT t.family_id, t.user_id, t.expires_at, t.revoked_reason, u.is_active
     FROM refresh_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ?`,
  );
  const revokeOne = db.prepare(
    `UPDATE refresh_tokens SET revoked_at = ?, revoked_reason = ? WHERE token_hash = ? AND revoked_at IS NULL`,
  );
  const revokeOwn = db.prepare(
    `UPDATE refresh_tokens SET revoked_at = ?, revoked_reason = 'signed_out'
     WHERE token_hash = ? AND user_id = ? AND revoked_at IS NULL`,
  );
  const revokeFamily = db.prepare(
    `UPDATE refresh_tokens SET revoked_at = ?, revoked_reason = 'reused' WHERE family_id = ? AND revoked_at IS NULL`,
  );
  const pruneExpired = db.prepare(`DELETE FROM refresh_tokens WHERE user_id = ? AND expires_at < ?`);

  /** Stores a new token of the family and returns it; runs inside the caller's transaction. */
  const issue = (userId: string, familyId: string, now: number, ttlSeconds: number): string => {
    const token = randomBytes(32).toString('base64url');
    insert.run(hashToken(token), familyId, userId, now, now + ttlSeconds * 1000);
    return token;
  };

  /** The exchange as one transaction: the check, the revocation and the new token commit together. */
  const exchange = (token: string, now: number, ttlSeconds: number): Exchange => {
    if (!TOKEN_SHAPE.test(token)) return { ok: false };
    const hash = hashToken(token);
    const row = find.get(hash);
    if (!row) return { ok: false };
    if (row.revoked_reason === 'exchanged') {
      // A token presented a second time was stolen or replayed: end every session of its family (RFC 9700 4.14.2).
      revokeFamily.run(now, row.family_id);
      return { ok: false };
    }
    if (row.revoked_reason !== null || row.expires_at <= now || row.is_active !== 1) return { ok: false };
    revokeOne.run(now, 'exchanged', hash);
    return { ok: true, userId: row.user_id, refreshToken: issue(row.user_id, row.family_id, now, ttlSeconds) };
  };

  return {
    startFamily(userId, now, ttlSeconds) {
      return engine.write(() => {
        pruneExpired.run(userId, now.getTime() - 86_400_000);
        return issue(userId, randomUUID(), now.getTime(), ttlSeconds);
      });
    },

    exchangeToken(token, now, ttlSeconds) {
      return engine.write(() => exchange(token, now.getTime(), ttlSeconds));
    },

    async revokeToken(token, userId, now) {
      if (!TOKEN_SHAPE.test(token)) return;
      await engine.write(() => revokeOwn.run(now.getTime(), hashToken(token), userId));
    },
  };
}
