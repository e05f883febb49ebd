// Rate limits a route can carry: calls per signed-in user, and failures per key (sign-in).
import type { Clock } from '../domain/clock.ts';
import type { RateCounter } from '../domain/rate-limiter.ts';
import type { Context } from './context.ts';
import type { Guard } from './operation.ts';
import { HttpError } from './problem.ts';

const RATE_LIMITED = ['rate_limited'] as const;

function refuse(wait: number, what: string): HttpError {
  return new HttpError('rate_limited', `${what}; try again in ${wait} second${wait === 1 ? '' : 's'}.`, { retryAfterSeconds: wait });
}

/** Returns a guard allowing each signed-in user the counter's number of calls per window, shared by every route carrying it. */
export function callsPerUser(counter: RateCounter, clock: Clock, what = 'Too many model requests'): Guard {
  return {
    problems: RATE_LIMITED,
    async middleware(ctx, next) {
      const key = ctx.user!.id;
      const wait = await counter.attempt(key, clock());
      if (wait > 0) throw refuse(wait, what);
      await next();
    },
  };
}

/**
 * Returns a guard refusing a key once it has the counter's number of failures in the window. Every attempt counts
 * before it runs, so parallel guesses cannot slip past the limit; a success forgets the key's attempts.
 */
export function failuresPerKey(counter: RateCounter, keyOf: (ctx: Context) => string, clock: Clock, what: string): Guard {
  return {
    problems: RATE_LIMITED,
    async middleware(ctx, next) {
      const key = keyOf(ctx);
      const wait = await counter.attempt(key, clock());
      if (wait > 0) throw refuse(wait, what);
      await next();
      await counter.reset(key);
    },
  };
}
