// What claims across instances need besides their SQL (an idempotency key's marker, a proposal's confirm): letting go
// of one even when the database is away for a moment, and waiting while another live instance holds one.
import type { PostgresEngine } from '../pg-engine.ts';

/** Waits between attempts, and how many are made: about as long as the instances' leases are meant to be. */
const RETRY_MS = 1_000;
const ATTEMPTS = 120;
/** How often a wait looks again without a notification: one may be lost in a reconnection, or the holder may die. */
const POLL_MS = 250;

/**
 * Runs `work` (which lets go of a claim, or stores its outcome); when it fails, tries it again every second in the
 * background until it succeeds (or for two minutes: after that, ending the lease lets go of everything), and
 * rethrows the first failure to the caller. A claim left under this live instance would keep the others waiting.
 */
export async function settleOrRetry(work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    let left = ATTEMPTS;
    const again = (): void => {
      if (left-- > 0) setTimeout(() => void work().catch(again), RETRY_MS).unref();
    };
    again();
    throw error;
  }
}

/**
 * Resolves once `heldElsewhere()` says the claim is no longer another live instance's: looked at again when
 * `payload` is notified on `channel` (its holder let go, in that transaction) and every POLL_MS (a lost notification,
 * a holder whose lease ended). Rejects with the signal's reason when it aborts first (the client left).
 */
export async function whileHeldElsewhere(engine: PostgresEngine, channel: string, payload: string, heldElsewhere: () => Promise<boolean>, signal: AbortSignal): Promise<void> {
  let wake = (): void => {};
  const stopListening = engine.listen(channel, (heard) => {
    if (heard === payload) wake();
  });
  try {
    for (;;) {
      signal.throwIfAborted();
      if (!(await heldElsewhere())) return;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, POLL_MS);
        wake = done;
        signal.addEventListener('abort', done, { once: true });
        if (signal.aborted) done(); // aborted while the look above ran
      });
    }
  } finally {
    stopListening();
  }
}
