// Waiting between model calls and stream pieces, injected so tests need not wait.
import { setTimeout as delay } from 'node:timers/promises';

/** Resolves after `ms`; may reject with the signal's reason when it aborts first. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/** Returns a real timer that rejects with the signal's reason on abort. */
export const realSleep: Sleep = async (ms, signal) => {
  await delay(ms, undefined, { signal }).catch((error: unknown) => {
    throw signal.aborted ? signal.reason : error;
  });
};

/** Resolves when `sleep` does; rejects with the signal's reason the moment it aborts, even if `sleep` ignores it. */
export function pause(sleep: Sleep, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    sleep(ms, signal)
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}
