// Idempotency-Key records on PostgreSQL: the same contract as ../idempotency-keys.ts. Under READ COMMITTED, requests
// with one key at once would each find no marker and each claim it; here the claim is one INSERT ... ON CONFLICT, which
// either writes the marker or waits for the one being written and locks it: exactly one claimant wins.
import type { PostgresEngine } from '../pg-engine.ts';
import type { Claim, IdempotencyKeyRepository, KeyRow } from '../idempotency-keys.ts';

/** Returns the idempotency key statements on the PostgreSQL engine. `owner` names this process, as on SQLite. */
export function createPgIdempotencyKeyRepository(engine: PostgresEngine, owner: string): IdempotencyKeyRepository {
  return {
    claimKey(userId, key, operation, hash, now, ttlMs, onClaimed) {
      return engine.write(async (tx): Promise<Claim> => {
        await tx`DELETE FROM idempotency_keys WHERE expires_at <= ${now.getTime()}`;
        // Writes a new marker, or takes over one left by another process (one that stopped or crashed mid-request:
        // nobody will finish it). Any other marker is left as it is, but locked, so the read below sees it settled.
        const claimed = await tx`
          INSERT INTO idempotency_keys (user_id, key, operation, request_hash, owner, created_at, expires_at)
          VALUES (${userId}, ${key}, ${operation}, ${hash}, ${owner}, ${now.getTime()}, ${now.getTime() + ttlMs})
          ON CONFLICT (user_id, key) DO UPDATE SET operation = excluded.operation, request_hash = excluded.request_hash,
            owner = excluded.owner, status = NULL, body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at
          WHERE idempotency_keys.owner IS NOT NULL AND idempotency_keys.owner <> excluded.owner
          RETURNING 1`;
        if (claimed.length > 0) {
          onClaimed();
          return { kind: 'claimed' };
        }
        const [row] = await tx<KeyRow[]>`
          SELECT operation, request_hash, owner, status, body FROM idempotency_keys WHERE user_id = ${userId} AND key = ${key}`;
        if (row!.operation !== operation || row!.request_hash !== hash) return { kind: 'mismatch' };
        if (row!.owner !== null) return { kind: 'running' };
        return { kind: 'replay', status: row!.status!, body: row!.body! };
      });
    },

    async completeKey(userId, key, status, body) {
      await engine.write(
        (tx) => tx`UPDATE idempotency_keys SET owner = NULL, status = ${status}, body = ${body}
          WHERE user_id = ${userId} AND key = ${key} AND owner = ${owner}`,
      );
    },

    async releaseKey(userId, key) {
      await engine.write((tx) => tx`DELETE FROM idempotency_keys WHERE user_id = ${userId} AND key = ${key} AND owner = ${owner}`);
    },
  };
}
