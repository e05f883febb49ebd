// The outbox: turns changes into events and writes them, with a delivery per subscribed endpoint, inside the
// transaction of the change itself. Nothing here awaits: it runs within other code's transactions and joins them.
// The events themselves are built in events.ts, shared with the outbox on PostgreSQL (pg-outbox.ts).
import type { CampaignMove } from '../db/campaigns.ts';
import type { DeliveryRepository } from '../db/webhook-deliveries.ts';
import type { WebhookRepository } from '../db/webhooks.ts';
import type { ImportJob } from '../customers/index.ts';
import type { Clock } from '../domain/clock.ts';
import { actorOf, campaignMoveEvents, importCompletedEvent, outboxEvent, testEvent, type Actor, type EventDraft } from './events.ts';

export type { Actor } from './events.ts';

/** What the outbox writes with, and whom it tells. */
export interface OutboxOptions {
  webhooks: WebhookRepository;
  deliveries: DeliveryRepository;
  /** The origin (and path prefix) clients reach the service at, without a trailing slash. */
  publicUrl: () => string;
  /** Told after each write, inside the transaction; the dispatcher looks for due deliveries once it has committed. */
  written: () => void;
  clock: Clock;
}

/** The outbox's writers: one per kind of change, each synchronous, to be called inside that change's transaction. */
export interface Outbox {
  /**
   * The campaigns' `onMove`: `campaign.status_changed` for every move, and `campaign.approved` with the frozen
   * audience and the absolute URL of its CSV export when the move approves.
   */
  campaignMoved(move: CampaignMove): void;
  /** The import jobs' `onFinish`: `customers.import_completed` with the job as it ended, `completed` or `failed`. */
  importFinished(job: ImportJob): void;
  /** Writes a `webhook.test` event for one endpoint only, enabled or not; returns its delivery's id. Throws `not_found`. */
  sendTest(webhookId: string, by: string, at: Date): string;
}

/** Returns the outbox's writers over the repositories. */
export function createOutbox({ webhooks, deliveries, publicUrl, written, clock }: OutboxOptions): Outbox {
  // Read in the change's transaction: the user as of the change, and nothing here awaits.
  const actor = (id: string): Actor => actorOf(id, deliveries.userNameIn(id));

  /** Writes the event for its endpoints (the subscribers of its type by default); returns the deliveries' ids. */
  const record = (event: EventDraft): string[] => {
    const to = event.to ?? webhooks.subscribersIn(event.type);
    if (to.length === 0) return [];
    const ids = deliveries.writeEventIn(outboxEvent(event), to);
    written();
    return ids;
  };

  return {
    campaignMoved(move) {
      for (const event of campaignMoveEvents(move, actor(move.by), publicUrl)) record(event);
    },

    importFinished(job) {
      record(importCompletedEvent(job, clock));
    },

    sendTest(webhookId, by, at) {
      const { seq } = webhooks.endpointIn(webhookId);
      return record(testEvent(webhookId, seq, actor(by), at))[0]!;
    },
  };
}
