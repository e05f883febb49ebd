// A cap on requests running at once, per signed-in user and over the whole service: for long-lived answers such as
// reply streams, where a rate per minute says nothing about how many are open.
import type { SlotPool } from '../domain/slot-pool.ts';
import type { Guard } from './operation.ts';
import { HttpError } from './problem.ts';

/** Seconds a refused client is asked to wait: a slot frees when one of its answers ends, which we cannot foretell. */
const RETRY_AFTER_SECONDS = 1;

/**
 * Returns a guard holding one slot of the pool for as long as the rest of the request runs (a stream's whole life),
 * refusing with `rate_limited` when the user already holds the pool's `perHolder` slots or the service its `total`.
 * Slots of every route carrying the same guard are shared.
 */
export function concurrentPerUser({ slots, what }: { slots: SlotPool; what: string }): Guard {
  return {
    problems: ['rate_limited'],
    async middleware(ctx, next) {
      const claim = await slots.acquire(ctx.user!.id);
      if (!claim.held && claim.full === 'holder') {
        throw new HttpError('rate_limited', `${what}: at most ${slots.perHolder} at once per user; wait for one to finish.`, { retryAfterSeconds: RETRY_AFTER_SECONDS });
      }
      if (!claim.held) {
        throw new HttpError('rate_limited', `${what}: the service has ${slots.total} open; try again shortly.`, { retryAfterSeconds: RETRY_AFTER_SECONDS });
      }
      try {
        await next();
      } finally {
        await claim.release();
      }
    },
  };
}
