// The webhook subsystem's one door: nothing outside src/webhooks/ imports anything but this file.
//
//   outbox.ts      events written inside the transaction of the change that caused them, one delivery per endpoint
//   dispatcher.ts  sends due deliveries a few at once, retries on the schedule, resumes from the tables after a crash
//   post.ts        one attempt over HTTP: no redirects followed, a timeout, a few KB of the answer read
//   signing.ts     secrets and Standard Webhooks signatures
import type { Db } from '../db/database.ts';
import { createDeliveryRepository, type Delivery, type DeliveryRepository } from '../db/webhook-deliveries.ts';
import { createWebhookRepository, type NewWebhook, type Webhook, type WebhookRepository } from '../db/webhooks.ts';
import type { Clock } from '../domain/clock.ts';
import { AppError } from '../domain/errors.ts';
import { PREVIOUS_SECRET_MS } from '../domain/webhooks.ts';
import type { Logger } from '../http/logger.ts';
import { createDispatcher } from './dispatcher.ts';
import { createOutbox, type Outbox } from './outbox.ts';
import { newSigningSecret } from './signing.ts';

export type { Outbox } from './outbox.ts';

export interface WebhooksOptions {
  clock: Clock;
  fetch: typeof globalThis.fetch;
  logger: Logger;
  /** Waits before the retries of a failed delivery, ms. */
  retryScheduleMs: readonly number[];
  /** How long an attempt waits for an answer, ms. */
  timeoutMs: number;
  /** The user's full name, or undefined when the user is unknown. */
  userName: (id: string) => string | undefined;
  /** The origin (and path prefix) clients reach the service at, without a trailing slash. */
  publicUrl: () => string;
}

/** An endpoint with its signing secret: the answer of a create or a rotation, the only ones that show it. */
export type WebhookWithSecret = Webhook & { secret: string };

export type Webhooks = ReturnType<typeof openWebhooks>;

/** Returns the webhooks of `db` with their dispatcher started; `stop()` it before closing the database. */
export function openWebhooks(db: Db, options: WebhooksOptions) {
  const endpoints: WebhookRepository = createWebhookRepository(db);
  const deliveries: DeliveryRepository = createDeliveryRepository(db, endpoints);
  const dispatcher = createDispatcher({ webhooks: endpoints, deliveries, isOpen: () => db.open, ...options });
  const outbox: Outbox = createOutbox({ webhooks: endpoints, deliveries, written: dispatcher.wake, ...options });
  const sendTest = db.transaction((id: string, userId: string, now: Date) => {
    if (!endpoints.getWebhook(id).enabled) throw new AppError('conflict', 'The webhook is disabled: enable it before sending a test event.');
    return outbox.sendTest(id, userId, now);
  });

  return {
    endpoints,
    deliveries,
    outbox,

    /** Stores a new enabled endpoint with a new secret; returns it with the secret. */
    createWebhook(webhook: NewWebhook, now: Date): WebhookWithSecret {
      const secret = newSigningSecret();
      return { ...endpoints.insertWebhook(webhook, secret, now), secret };
    },

    /** Gives the endpoint a new secret, the old one signing too for 24 hours; returns it with the new secret. Throws `not_found`. */
    rotateSecret(id: string, now: Date): WebhookWithSecret {
      const secret = newSigningSecret();
      return { ...endpoints.rotateSecret(id, secret, new Date(now.getTime() + PREVIOUS_SECRET_MS), now), secret };
    },

    /**
     * Sends a `webhook.test` event to the endpoint alone and returns its delivery after the first attempt (within the
     * attempt timeout). Throws `not_found`, or `conflict` when the endpoint is disabled.
     */
    async sendTest(id: string, userId: string, now: Date): Promise<Delivery> {
      const deliveryId = sendTest.immediate(id, userId, now);
      await dispatcher.attemptNow(deliveryId);
      return deliveries.getDelivery(deliveryId);
    },

    /** Starts no more attempts; resolves once those under way have ended. */
    stop: dispatcher.stop,
    /** Cuts the attempts under way short; they are sent again after the next start. */
    abort: dispatcher.abort,
  };
}
