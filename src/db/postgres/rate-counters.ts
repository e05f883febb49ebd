// Rate counters every instance shares (sign-in failures, model calls): a key's sliding window is a row of
// `rate_windows`, read and rewritten under its row lock in one transaction, so attempts on two instances at once
// cannot both find room under the limit. The window's arithmetic is the one the counter of one process uses
// (`slideWindow`); times are the caller's clock, as there.
import type { PostgresEngine } from '../pg-engine.ts';
import { slideWindow, type RateCounter, type RateLimit } from '../../domain/rate-limiter.ts';

/** Every this many attempts, a counter sweeps its scope's expired windows: a row per key would otherwise stay forever. */
const SWEEP_EVERY = 64;
/** The most expired rows one sweep deletes: a sweep stays one short statement however many keys went quiet. */
const SWEEP_LIMIT = 500;

/** Returns the counter of the limit `scope` (`'sign_in'`, `'model_calls'`) over `rule`, shared by every instance on the database. */
export function createPgRateCounter(engine: PostgresEngine, scope: string, rule: RateLimit): RateCounter {
  let attempts = 0;

  /** Deletes expired windows no attempt holds right now (SKIP LOCKED: a sweep never waits, nor makes anyone wait long). */
  const sweep = async (now: number): Promise<void> => {
    await engine.transaction('read write', (tx) => tx`
      DELETE FROM rate_windows WHERE (scope, key) IN (
        SELECT scope, key FROM rate_windows WHERE scope = ${scope} AND expires_at <= ${now}
        LIMIT ${SWEEP_LIMIT} FOR UPDATE SKIP LOCKED)`);
  };

  return {
    async attempt(key, now) {
      const at = now.getTime();
      const wait = await engine.write(async (tx) => {
        // Creates the key's row, or locks the one there (waiting for an attempt under way), and reads its events.
        const [row] = await tx<{ events: number[] }[]>`
          INSERT INTO rate_windows (scope, key, events, expires_at) VALUES (${scope}, ${key}, '{}', 0)
          ON CONFLICT (scope, key) DO UPDATE SET events = rate_windows.events
          RETURNING events`;
        const next = slideWindow(row!.events.map(Number), at, rule);
        if (next.wait > 0) return next.wait;
        // Expires once its newest event has left the window: from then on it counts nothing.
        const expiresAt = next.events[next.events.length - 1]! + rule.windowMs;
        await tx`UPDATE rate_windows SET events = ${next.events}::bigint[], expires_at = ${expiresAt} WHERE scope = ${scope} AND key = ${key}`;
        return 0;
      });
      // Housekeeping: a sweep that fails (the database went away just now) is the next sweep's work, not this attempt's failure.
      if (++attempts % SWEEP_EVERY === 0) await sweep(at).catch(() => {});
      return wait;
    },

    async reset(key) {
      await engine.transaction('read write', (tx) => tx`DELETE FROM rate_windows WHERE scope = ${scope} AND key = ${key}`);
    },
  };
}
