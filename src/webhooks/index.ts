// The webhook subsystem's one door: nothing outside src/webhooks/ imports anything but this file.
//
//   events.ts      the events of each kind of change (type, data, recipients), built alike for both engines
//   outbox.ts      events written inside the transaction of the change that caused them, one delivery per endpoint
//   pg-outbox.ts   the same on PostgreSQL, asynchronous, joining the change's transaction through the engine
//   dispatcher.ts  sends due deliveries a few at once, retries on the schedule, resumes from the tables after a crash
//                  (in one instance of a deployment: the leader of `webhook-dispatcher`)
//   post.ts        one attempt over HTTP: no redirects followed, a timeout, a few KB of the answer read
//   signing.ts     secrets and Standard Webhooks signatures
import type { Leadership, SqliteEngine } from '../db/engine.ts';
import type { PostgresEngine } from '../db/pg-engine.ts';
import { createPgDeliveryRepository } from '../db/postgres/webhook-deliveries.ts';
import { createPgWebhookRepository } from '../db/postgres/webhooks.ts';
import { createDeliveryRepository, type Delivery, type DeliveryRepository } from '../db/webhook-deliveries.ts';
import { createWebhookRepository, type NewWebhook, type Webhook, type WebhookRepository } from '../db/webhooks.ts';
import type { Clock } from '../domain/clock.ts';
import { AppError } from '../domain/errors.ts';
import { PREVIOUS_SECRET_MS } from '../domain/webhooks.ts';
import type { Logger } from '../http/logger.ts';
import { createDispatcher } from './dispatcher.ts';
import { createOutbox, type Outbox } from './outbox.ts';
import { createPgOutbox, type PgOutbox } from './pg-outbox.ts';
import { newSigningSecret } from './signing.ts';

export type { Outbox } from './outbox.ts';
export type { PgOutbox } from './pg-outbox.ts';

/** The channel on which the outbox tells the dispatchers (of every instance) that it has written. */
const WRITTEN = 'webhook_outbox';

/** What the webhooks need besides the engine. */
export interface WebhooksOptions {
  clock: Clock;
  fetch: typeof globalThis.fetch;
  logger: Logger;
  /** Waits before the retries of a failed delivery, ms. */
  retryScheduleMs: readonly number[];
  /** How long an attempt waits for an answer, ms. */
  timeoutMs: number;
  /** The origin (and path prefix) clients reach the service at, without a trailing slash. */
  publicUrl: () => string;
  /** Who sends the deliveries: the engine's leadership unless given (tests give a sibling, as a second instance). */
  leadership?: Leadership;
}

/** An endpoint with its signing secret: the answer of a create or a rotation, the only ones that show it. */
export type WebhookWithSecret = Webhook & { secret: string };

/** The endpoint queries both engines answer alike (those joining a transaction are synchronous on SQLite only). */
export type WebhookEndpoints = Omit<WebhookRepository, 'subscribersIn' | 'endpointIn' | 'disableWebhook'>;
/** The delivery queries both engines answer alike (those joining a transaction are synchronous on SQLite only). */
export type DeliveryLog = Omit<DeliveryRepository, 'writeEventIn' | 'userNameIn'>;

/**
 * The webhook subsystem: endpoints, delivery log, the outbox's hooks, and its dispatcher's lifecycle. `O` is its
 * outbox: synchronous on SQLite (`Outbox`), asynchronous on PostgreSQL (`PgOutbox`); either, when not said.
 */
export interface Webhooks<O extends Outbox | PgOutbox = Outbox | PgOutbox> {
  endpoints: WebhookEndpoints;
  deliveries: DeliveryLog;
  outbox: O;
  /** Stores a new enabled endpoint with a new secret; resolves to it with the secret. */
  createWebhook(webhook: NewWebhook, now: Date): Promise<WebhookWithSecret>;
  /** Gives the endpoint a new secret, the old one signing too for 24 hours; resolves to it with the new secret. Rejects with `not_found`. */
  rotateSecret(id: string, now: Date): Promise<WebhookWithSecret>;
  /**
   * Sends a `webhook.test` event to the endpoint alone and resolves to its delivery after the first attempt (within
   * the attempt timeout). Rejects with `not_found`, or `conflict` when the endpoint is disabled.
   */
  sendTest(id: string, userId: string, now: Date): Promise<Delivery>;
  /** Starts no more attempts; resolves once those under way have ended. */
  stop(): Promise<void>;
  /** Cuts the attempts under way short; they are sent again after the next start. */
  abort(): void;
}

/** The webhooks on SQLite. */
export type SqliteWebhooks = Webhooks<Outbox>;
/** The webhooks on PostgreSQL. */
export type PgWebhooks = Webhooks<PgOutbox>;
/** The webhooks on either engine, as the service composes them (its routes need only `Webhooks`). */
export type AnyWebhooks = SqliteWebhooks | PgWebhooks;

const disabled = () => new AppError('conflict', 'The webhook is disabled: enable it before sending a test event.');

/** The operations on secrets, the same on both engines. */
function secretOperations(endpoints: WebhookEndpoints): Pick<Webhooks, 'createWebhook' | 'rotateSecret'> {
  return {
    async createWebhook(webhook, now) {
      const secret = newSigningSecret();
      return { ...(await endpoints.insertWebhook(webhook, secret, now)), secret };
    },

    async rotateSecret(id, now) {
      const secret = newSigningSecret();
      return { ...(await endpoints.rotateSecret(id, secret, new Date(now.getTime() + PREVIOUS_SECRET_MS), now)), secret };
    },
  };
}

/** Returns the webhooks over `engine` with their dispatcher started; `stop()` it before closing the engine. */
export function openWebhooks(engine: SqliteEngine, { leadership = engine.leadership, ...options }: WebhooksOptions): SqliteWebhooks {
  const endpoints = createWebhookRepository(engine);
  const deliveries = createDeliveryRepository(engine, endpoints);
  const dispatcher = createDispatcher({
    webhooks: endpoints,
    deliveries,
    isOpen: () => engine.db.open,
    leadership,
    onWritten: (wake) => engine.listen(WRITTEN, wake),
    ...options,
  });
  const outbox = createOutbox({ webhooks: endpoints, deliveries, written: () => engine.notify(WRITTEN, ''), ...options });

  return {
    endpoints,
    deliveries,
    outbox,
    ...secretOperations(endpoints),

    async sendTest(id, userId, now) {
      const deliveryId = await engine.write(() => {
        if (!endpoints.endpointIn(id).enabled) throw disabled();
        return outbox.sendTest(id, userId, now);
      });
      await dispatcher.attemptNow(deliveryId);
      return deliveries.getDelivery(deliveryId);
    },

    stop: dispatcher.stop,
    abort: dispatcher.abort,
  };
}

/**
 * Returns the webhooks over the PostgreSQL `engine` with their dispatcher started; `stop()` it before closing the
 * engine. Every instance's outbox writes and tells every instance's dispatcher (LISTEN); the leader sends, each
 * delivery claimed by one instance at a time (src/db/postgres/webhook-deliveries.ts).
 */
export function openPgWebhooks(engine: PostgresEngine, { leadership = engine.leadership, ...options }: WebhooksOptions): PgWebhooks {
  const endpoints = createPgWebhookRepository(engine);
  const deliveries = createPgDeliveryRepository(engine, endpoints);
  /** Inside a transaction, sent at its commit (and dropped on rollback); outside one, at once. */
  const tell = () => engine.notify(WRITTEN, '');
  const dispatcher = createDispatcher({
    webhooks: endpoints,
    deliveries,
    // The engine is closed only after stop(), and a stopped dispatcher starts nothing.
    isOpen: () => true,
    leadership,
    onWritten: (wake) => engine.listen(WRITTEN, wake),
    ...options,
  });
  const outbox = createPgOutbox({ engine, webhooks: endpoints, deliveries, written: tell, ...options });

  return {
    endpoints,
    deliveries,
    outbox,
    ...secretOperations(endpoints),

    async sendTest(id, userId, now) {
      const deliveryId = await engine.write(async () => {
        if (!(await endpoints.endpointIn(id)).enabled) throw disabled();
        return outbox.sendTest(id, userId, now);
      });
      // The dispatchers are told only after this instance's attempt (which claims the delivery), so that another
      // instance's leader does not take it first; telling them then also lets the leader plan a retry it stored.
      try {
        await dispatcher.attemptNow(deliveryId);
      } finally {
        tell();
      }
      return deliveries.getDelivery(deliveryId);
    },

    async stop() {
      await dispatcher.stop();
      // Deliveries claimed and not attempted (read ahead, or cut short by abort) go to the next leader at once.
      await deliveries.releaseClaims();
    },

    abort: dispatcher.abort,
  };
}
