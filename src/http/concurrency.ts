// A cap on requests running at once, per signed-in user and over the whole service: for long-lived answers such as
// reply streams, where a rate per minute says nothing about how many are open.
import type { Guard } from './operation.ts';
import { HttpError } from './problem.ts';

/** Seconds a refused client is asked to wait: a slot frees when one of its answers ends, which we cannot foretell. */
const RETRY_AFTER_SECONDS = 1;

/**
 * Returns a guard holding one slot for as long as the rest of the request runs (a stream's whole life), refusing
 * with `rate_limited` when the user already holds `perUser` slots or the service `total`. Slots of every route
 * carrying the same guard are shared.
 */
export function concurrentPerUser({ perUser, total, what }: { perUser: number; total: number; what: string }): Guard {
  const held = new Map<string, number>();
  let all = 0;
  return {
    problems: ['rate_limited'],
    async middleware(ctx, next) {
      const key = ctx.user!.id;
      const mine = held.get(key) ?? 0;
      if (mine >= perUser) {
        throw new HttpError('rate_limited', `${what}: at most ${perUser} at once per user; wait for one to finish.`, { retryAfterSeconds: RETRY_AFTER_SECONDS });
      }
      if (all >= total) {
        throw new HttpError('rate_limited', `${what}: the service has ${total} open; try again shortly.`, { retryAfterSeconds: RETRY_AFTER_SECONDS });
      }
      held.set(key, mine + 1);
      all++;
      try {
        await next();
      } finally {
        all--;
        const left = (held.get(key) ?? 1) - 1;
        if (left > 0) held.set(key, left);
        else held.delete(key);
      }
    },
  };
}
