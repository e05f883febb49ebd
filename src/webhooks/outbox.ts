// The outbox: turns changes into events and writes them, with a delivery per subscribed endpoint, inside the
// transaction of the change itself. Nothing here awaits: it runs within other code's transactions and joins them.
import { randomUUID } from 'node:crypto';
import type { CampaignMove } from '../db/campaigns.ts';
import type { DeliveryRepository } from '../db/webhook-deliveries.ts';
import type { WebhookRepository } from '../db/webhooks.ts';
import type { ImportJob } from '../customers/index.ts';
import type { Clock } from '../domain/clock.ts';
import type { EventType } from '../domain/webhooks.ts';

/** Who made a change, as events name them. */
export interface Actor {
  id: string;
  fullName?: string;
}

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
  const actor = (id: string): Actor => {
    const fullName = deliveries.userNameIn(id);
    return fullName === undefined ? { id } : { id, fullName };
  };

  /** Writes the event for the endpoints given (the subscribers of its type by default); returns the deliveries' ids. */
  const record = (type: EventType, data: unknown, at: Date, to: readonly number[] = webhooks.subscribersIn(type)): string[] => {
    if (to.length === 0) return [];
    const body = JSON.stringify({ type, timestamp: at.toISOString(), data });
    const ids = deliveries.writeEventIn({ id: randomUUID(), type, body, createdAt: at }, to);
    written();
    return ids;
  };

  return {
    campaignMoved(move) {
      const { campaign, from, to, by, note, audience, at } = move;
      record('campaign.status_changed', { campaign, from, to, by: actor(by), ...(note === null ? {} : { note }) }, at);
      if (to === 'approved' && audience) {
        const exportUrl = `${publicUrl()}/v1/campaigns/${encodeURIComponent(campaign.id)}/audience.csv`;
        record('campaign.approved', { campaign, audience, exportUrl }, at);
      }
    },

    importFinished(job) {
      record('customers.import_completed', job, job.finishedAt ? new Date(job.finishedAt) : clock());
    },

    sendTest(webhookId, by, at) {
      const { seq } = webhooks.endpointIn(webhookId);
      return record('webhook.test', { webhookId, by: actor(by) }, at, [seq])[0]!;
    },
  };
}
