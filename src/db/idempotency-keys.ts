// SQL for Idempotency-Key records: claimed by a running request, completed with its reply, swept after expiry.
import type { Db } from './database.ts';

interface KeyRow {
  operation: string;
  request_hash: string;
  owner: string | null;
  status: number | null;
  body: string | null;
}

/** What a request with a key finds. */
export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay'; status: number; body: string }
  | { kind: 'running' }
  | { kind: 'mismatch' };

export type IdempotencyKeyRepository = ReturnType<typeof createIdempotencyKeyRepository>;

/** Returns the idempotency key queries, prepared once. `owner` names this process, so markers of a crashed one are taken over. */
export function createIdempotencyKeyRepository(db: Db, owner: string) {
  const sweep = db.prepare('DELETE FROM idempotency_keys WHERE expires_at <= ?');
  const find = db.prepare<[string, string], KeyRow>('SELECT operation, request_hash, owner, status, body FROM idempotency_keys WHERE user_id = ? AND key = ?');
  const claim = db.prepare(
    `INSERT INTO idempotency_keys (user_id, key, operation, request_hash, owner, created_at, expires_at)
     VALUES (@userId, @key, @operation, @hash, @owner, @now, @expiresAt)
     ON CONFLICT (user_id, key) DO UPDATE SET operation = excluded.operation, request_hash = excluded.request_hash,
       owner = excluded.owner, status = NULL, body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at`,
  );
  const complete = db.prepare('UPDATE idempotency_keys SET owner = NULL, status = ?, body = ? WHERE user_id = ? AND key = ? AND owner = ?');
  const release = db.prepare('DELETE FROM idempotency_keys WHERE user_id = ? AND key = ? AND owner = ?');

  const claimKey = db.transaction((userId: string, key: string, operation: string, hash: string, now: number, ttlMs: number): Claim => {
    sweep.run(now);
    const row = find.get(userId, key);
    // A marker left by another process is from one that stopped or crashed mid-request: nobody will finish it.
    if (!row || (row.owner !== null && row.owner !== owner)) {
      claim.run({ userId, key, operation, hash, owner, now, expiresAt: now + ttlMs });
      return { kind: 'claimed' };
    }
    if (row.operation !== operation || row.request_hash !== hash) return { kind: 'mismatch' };
    if (row.owner !== null) return { kind: 'running' };
    return { kind: 'replay', status: row.status!, body: row.body! };
  });

  return {
    /** Claims the key for this request, or says what holds it. Expired keys are swept first. */
    claimKey(userId: string, key: string, operation: string, hash: string, now: Date, ttlMs: number): Claim {
      return claimKey.immediate(userId, key, operation, hash, now.getTime(), ttlMs);
    },

    /** Stores the successful reply of a claimed key. */
    completeKey(userId: string, key: string, status: number, body: string): void {
      complete.run(status, body, userId, key, owner);
    },

    /** Forgets a claimed key whose request failed, so a retry runs again. */
    releaseKey(userId: string, key: string): void {
      release.run(userId, key, owner);
    },
  };
}
