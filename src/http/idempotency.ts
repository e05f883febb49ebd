// Idempotency-Key: a retried request with the same key and body gets the stored reply instead of running again.
import { createHash } from 'node:crypto';
import type { Claim, IdempotencyKeyRepository } from '../db/idempotency-keys.ts';
import { canonicalJson } from '../domain/canonical-json.ts';
import type { Clock } from '../domain/clock.ts';
import { AppError, invalidField } from '../domain/errors.ts';
import type { Context } from './context.ts';
import type { InFlightRequests } from './in-flight.ts';
import type { Guard } from './operation.ts';

const KEY = /^[\x21-\x7e]{1,255}$/;
const HEADER = 'Idempotency-Key';

/**
 * Returns the guard: keys are scoped to the user and kept `ttlMs`. The same key, path and body (as canonical JSON) replays
 * the stored reply with `Idempotency-Replayed: true`; another body is `conflict`; a duplicate arriving while the first
 * runs waits for it (`running` says which run in this process; the repository waits for another instance's, until the
 * duplicate's client leaves). Only successes are stored, so a retry after a failure runs again.
 */
export function idempotentRequests(keys: IdempotencyKeyRepository, running: InFlightRequests, clock: Clock, ttlMs = 24 * 60 * 60 * 1000): Guard {
  const middleware = async (ctx: Context, next: () => Promise<void>): Promise<void> => {
    const header = ctx.req.headers['idempotency-key'];
    if (header === undefined) return next();
    if (typeof header !== 'string' || !KEY.test(header)) throw invalidField(HEADER, 'Must be 1 to 255 visible ASCII characters.');
    const userId = ctx.user!.id;
    const operation = ctx.route!.operation.operationId;
    // The path's ids are part of the request: one key and body on another campaign is another request.
    const params = ctx.input!.params as Record<string, unknown> | undefined;
    const request = params && Object.keys(params).length > 0 ? { params, body: ctx.input!.rawBody } : ctx.input!.rawBody;
    const hash = createHash('sha256').update(canonicalJson(request)).digest('hex');
    const slot = `${userId}\n${header}`;

    /**
     * Claims the key; a claimed one is marked running in the claim's own transaction, so a duplicate that finds our
     * marker also finds this request. `settle` ends the mark (a no-op unless claimed).
     */
    const claimKey = async (): Promise<{ claim: Claim; settle: () => void }> => {
      let settle = (): void => {};
      const markRunning = () => {
        settle = running.begin(slot);
      };
      try {
        const claim = await keys.claimKey(userId, header, operation, hash, clock(), ttlMs, markRunning);
        return { claim, settle };
      } catch (error) {
        settle(); // marked, then the transaction failed to commit
        throw error;
      }
    };

    for (;;) {
      const { claim, settle } = await claimKey();
      if (claim.kind === 'mismatch') throw new AppError('conflict', `The ${HEADER} was already used with a different request.`);
      if (claim.kind === 'replay') {
        ctx.reply = { status: claim.status, headers: { 'idempotency-replayed': 'true' }, body: null, raw: claim.body };
        return;
      }
      if (claim.kind === 'running' && claim.elsewhere) {
        // Another instance runs it: wait for it to store or release the key (or die), then look again.
        await keys.settledElsewhere(userId, header, ctx.signal);
        continue;
      }
      if (claim.kind === 'running') {
        const first = running.settled(slot);
        if (first) await first; // settled: look again (a stored reply, or a released key to claim)
        else await keys.releaseKey(userId, header); // a marker of ours that nothing runs for: never block the key
        continue;
      }
      try {
        await next();
        if (ctx.reply) await keys.completeKey(userId, header, ctx.reply.status, JSON.stringify(ctx.reply.body));
        else await keys.releaseKey(userId, header);
      } catch (error) {
        await keys.releaseKey(userId, header);
        throw error;
      } finally {
        settle();
      }
      return;
    }
  };

  return {
    middleware,
    problems: ['validation_failed', 'conflict'],
    headers: [{ name: HEADER, description: 'Makes a retry safe: 1-255 visible ASCII characters, scoped to you, kept 24 hours.', schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' } }],
    replyHeaders: { 'Idempotency-Replayed': { description: '`true` when this is the stored answer of an earlier request with the same key.', schema: { type: 'string', const: 'true' } } },
  };
}
