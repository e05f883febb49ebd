// The outbox: turns changes into events and writes them, with a delivery per subscribed endpoint, inside the
// transaction of the change itself. Nothing here awaits: it runs within other code's transactions.
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

export interface OutboxOptions {
  webhooks: WebhookRepository;
  deliveries: DeliveryRepository;
  /** The user's full name, or undefined when the user is unknown. */
  userName: (id: string) => string | undefined;
  /** The origin (and path prefix) clients reach the service at, without a trailing slash. */
  publicUrl: () => string;
  /** Told after each write; looks for due deliveries once the transaction has committed. */
  written: () => void;
  clock: Clock;
}

export type Outbox = ReturnType<typeof createOutbox>;

/** Returns the outbox's writers: one per kind of change, each to be called inside that change's transaction. */
export function createOutbox({ webhooks, deliveries, userName, publicUrl, written, clock }: OutboxOptions) {
  const actor = (id: string): Actor => {
    const fullName = userName(id);
    return fullName === undefined ? { id } : { id, fullName };
  };

  /** Writes the event for the endpoints given (the subscribers of its type by default); returns the deliveries' ids. */
  const record = (type: EventType, data: unknown, at: Date, to: readonly number[] = webhooks.subscribers(type)): string[] => {
    if (to.length === 0) return [];
    const body = JSON.stringify({ type, timestamp: at.toISOString(), data });
    const ids = deliveries.writeEvent({ id: randomUUID(), type, body, createdAt: at }, to);
    written();
    return ids;
  };

  return {
    /**
     * The campaigns' `onMove`: `campaign.status_changed` for every move, and `campaign.approved` with the frozen
     * audience and the absolute URL of its CSV export when the move approves.
     */
    campaignMoved(move: CampaignMove): void {
      const { campaign, from, to, by, note, audience, at } = move;
      record('campaign.status_changed', { campaign, from, to, by: actor(by), ...(note === null ? {} : { note }) }, at);
      if (to === 'approved' && audience) {
        const exportUrl = `${publicUrl()}/v1/campaigns/${encodeURIComponent(campaign.id)}/audience.csv`;
        record('campaign.approved', { campaign, audience, exportUrl }, at);
      }
    },

    /** The import jobs' `onFinish`: `customers.import_completed` with the job as it ended, `completed` or `failed`. */
    importFinished(job: ImportJob): void {
      record('customers.import_completed', job, job.finishedAt ? new Date(job.finishedAt) : clock());
    },

    /** Writes a `webhook.test` event for one endpoint only, enabled or not; returns its delivery's id. */
    sendTest(webhookId: string, by: string, at: Date): string {
      const seq = webhooks.seqOf(webhookId);
      return record('webhook.test', { webhookId, by: actor(by) }, at, [seq])[0]!;
    },
  };
}
