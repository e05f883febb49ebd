// SQL for Idempotency-Key records: claimed by a running request, completed with its reply, swept after expiry.
import type { SqliteEngine } from './engine.ts';

/** What a claim reads of a stored key. */
export interface KeyRow {
  operation: string;
  request_hash: string;
  owner: string | null;
  status: number | null;
  body: string | null;
}

/**
 * What a request with a key finds. `running` with `elsewhere`: the request runs in another live instance of the
 * service, which this process cannot watch (see `settledElsewhere`); without it, in this process.
 */
export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay'; status: number; body: string }
  | { kind: 'running'; elsewhere?: true }
  | { kind: 'mismatch' };

/**
 * The Idempotency-Key records of this process (`owner`). A marker of another process is taken over when that process
 * is gone (on SQLite always: another process there is one that stopped or crashed), and waited for while it lives.
 */
export interface IdempotencyKeyRepository {
  /**
   * Claims the key for this request, or says what holds it, in one transaction; expired keys are swept first.
   * `onClaimed` runs inside that transaction when the key is claimed, synchronously: the caller marks its request as
   * running in the same step as the marker is written, so whoever finds the marker also finds the request.
   */
  claimKey(userId: string, key: string, operation: string, hash: string, now: Date, ttlMs: number, onClaimed: () => void): Promise<Claim>;
  /** Stores the successful reply of a claimed key. */
  completeKey(userId: string, key: string, status: number, body: string): Promise<void>;
  /** Forgets a claimed key whose request failed, so a retry runs again. */
  releaseKey(userId: string, key: string): Promise<void>;
  /**
   * Resolves once the key is no longer held by another live process (after a claim found it `running` `elsewhere`):
   * its reply stored, its key released, or its process gone. Rejects with the signal's reason when `signal` aborts.
   */
  settledElsewhere(userId: string, key: string, signal: AbortSignal): Promise<void>;
}

/** Returns the idempotency key queries, prepared once. `owner` names this process, so markers of a crashed one are taken over. */
export function createIdempotencyKeyRepository(engine: SqliteEngine, owner: string): IdempotencyKeyRepository {
  const { db } = engine;
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

  return {
    claimKey(userId, key, operation, hash, now, ttlMs, onClaimed) {
      return engine.write((): Claim => {
        sweep.run(now.getTime());
        const row = find.get(userId, key);
        // A marker left by another process is from one that stopped or crashed mid-request: nobody will finish it.
        if (!row || (row.owner !== null && row.owner !== owner)) {
          claim.run({ userId, key, operation, hash, owner, now: now.getTime(), expiresAt: now.getTime() + ttlMs });
          onClaimed();
          return { kind: 'claimed' };
        }
        if (row.operation !== operation || row.request_hash !== hash) return { kind: 'mismatch' };
        if (row.owner !== null) return { kind: 'running' };
        return { kind: 'replay', status: row.status!, body: row.body! };
      });
    },

    async completeKey(userId, key, status, body) {
      await engine.write(() => complete.run(status, body, userId, key, owner));
    },

    async releaseKey(userId, key) {
      await engine.write(() => release.run(userId, key, owner));
    },

    // Never asked: a claim here takes over every other process's marker, so none is ever running `elsewhere`.
    async settledElsewhere() {},
  };
}
