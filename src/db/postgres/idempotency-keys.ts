// Idempotency-Key records on PostgreSQL: the same contract as ../idempotency-keys.ts. Under READ COMMITTED, requests
// with one key at once would each find no marker and each claim it; here the claim is one INSERT ... ON CONFLICT, which
// either writes the marker or waits for the one being written and locks it: exactly one claimant wins. Several
// instances share the records: a marker names its instance (`owner`), taken over only once that instance's lease has
// ended; while it lives, a duplicate waits for it, woken by the NOTIFY its completion or release sends.
import type { PostgresEngine } from '../pg-engine.ts';
import type { Claim, IdempotencyKeyRepository, KeyRow } from '../idempotency-keys.ts';
import { settleOrRetry, whileHeldElsewhere } from './claims.ts';

/** The channel a stored or released key is announced on; the payload is `settledSlot(userId, key)`. */
const SETTLED_CHANNEL = 'idempotency_keys';

/** The payload naming one user's key. */
const settledSlot = (userId: string, key: string): string => `${userId}\n${key}`;

/** Returns the idempotency key statements on the PostgreSQL engine. `owner` names this instance (db/postgres/instances.ts). */
export function createPgIdempotencyKeyRepository(engine: PostgresEngine, owner: string): IdempotencyKeyRepository {
  /** Whether another live instance still holds the key's marker. */
  const heldElsewhere = async (userId: string, key: string): Promise<boolean> => {
    const rows = await engine.transaction('read only', (tx) => tx`
      SELECT 1 FROM idempotency_keys WHERE user_id = ${userId} AND key = ${key}
        AND owner IS NOT NULL AND owner <> ${owner} AND campaigns_instance_alive(owner)`);
    return rows.length > 0;
  };

  return {
    claimKey(userId, key, operation, hash, now, ttlMs, onClaimed) {
      return engine.write(async (tx): Promise<Claim> => {
        await tx`DELETE FROM idempotency_keys WHERE expires_at <= ${now.getTime()}`;
        // Writes a new marker, or takes over one left by an instance whose lease has ended (it stopped or crashed
        // mid-request: nobody will finish it). Any other marker is left as it is, but locked, so the read below sees
        // it settled.
        const claimed = await tx`
          INSERT INTO idempotency_keys (user_id, key, operation, request_hash, owner, created_at, expires_at)
          VALUES (${userId}, ${key}, ${operation}, ${hash}, ${owner}, ${now.getTime()}, ${now.getTime() + ttlMs})
          ON CONFLICT (user_id, key) DO UPDATE SET operation = excluded.operation, request_hash = excluded.request_hash,
            owner = excluded.owner, status = NULL, body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at
          WHERE idempotency_keys.owner IS NOT NULL AND idempotency_keys.owner <> excluded.owner
            AND NOT campaigns_instance_alive(idempotency_keys.owner)
          RETURNING 1`;
        if (claimed.length > 0) {
          onClaimed();
          return { kind: 'claimed' };
        }
        const [row] = await tx<KeyRow[]>`
          SELECT operation, request_hash, owner, status, body FROM idempotency_keys WHERE user_id = ${userId} AND key = ${key}`;
        if (row!.operation !== operation || row!.request_hash !== hash) return { kind: 'mismatch' };
        if (row!.owner !== null) return row!.owner === owner ? { kind: 'running' } : { kind: 'running', elsewhere: true };
        return { kind: 'replay', status: row!.status!, body: row!.body! };
      });
    },

    // Both tried again in the background when they fail: a marker left under this live instance would keep the
    // other instances' duplicates waiting.
    async completeKey(userId, key, status, body) {
      await settleOrRetry(() =>
        engine.write(async (tx) => {
          const stored = await tx`UPDATE idempotency_keys SET owner = NULL, status = ${status}, body = ${body}
            WHERE user_id = ${userId} AND key = ${key} AND owner = ${owner}`;
          if (stored.count > 0) engine.notify(SETTLED_CHANNEL, settledSlot(userId, key)); // sent at commit
        }),
      );
    },

    async releaseKey(userId, key) {
      await settleOrRetry(() =>
        engine.write(async (tx) => {
          const released = await tx`DELETE FROM idempotency_keys WHERE user_id = ${userId} AND key = ${key} AND owner = ${owner}`;
          if (released.count > 0) engine.notify(SETTLED_CHANNEL, settledSlot(userId, key)); // sent at commit
        }),
      );
    },

    settledElsewhere(userId, key, signal) {
      return whileHeldElsewhere(engine, SETTLED_CHANNEL, settledSlot(userId, key), () => heldElsewhere(userId, key), signal);
    },
  };
}
