// The events the outbox writes, built without touching the database: each kind of change's type, data and
// recipients. The outbox on SQLite (outbox.ts, synchronous) and on PostgreSQL (pg-outbox.ts, asynchronous) both build
// their events here, so that the two engines send the same bodies; they differ only in how they read and write.
import { randomUUID } from 'node:crypto';
import type { CampaignMove } from '../db/campaigns.ts';
import type { OutboxEvent } from '../db/webhook-deliveries.ts';
import type { ImportJob } from '../customers/index.ts';
import type { Clock } from '../domain/clock.ts';
import type { EventType } from '../domain/webhooks.ts';

/** Who made a change, as events name them. */
export interface Actor {
  id: string;
  fullName?: string;
}

/** An event to write: its type, its `data`, when it happened, and the endpoints it goes to. */
export interface EventDraft {
  type: EventType;
  data: unknown;
  at: Date;
  /** The endpoints (sequence numbers) it goes to; absent: the enabled endpoints subscribed to its type. */
  to?: readonly number[];
}

/** Returns the actor of an event: the user's id, with the full name when the user is known. */
export function actorOf(id: string, fullName: string | undefined): Actor {
  return fullName === undefined ? { id } : { id, fullName };
}

/**
 * Returns the events of a campaign move: `campaign.status_changed` for every move, then `campaign.approved` with the
 * frozen audience and the absolute URL of its CSV export when the move approves.
 */
export function campaignMoveEvents(move: CampaignMove, by: Actor, publicUrl: () => string): EventDraft[] {
  const { campaign, from, to, note, audience, at } = move;
  const events: EventDraft[] = [{ type: 'campaign.status_changed', data: { campaign, from, to, by, ...(note === null ? {} : { note }) }, at }];
  if (to === 'approved' && audience) {
    const exportUrl = `${publicUrl()}/v1/campaigns/${encodeURIComponent(campaign.id)}/audience.csv`;
    events.push({ type: 'campaign.approved', data: { campaign, audience, exportUrl }, at });
  }
  return events;
}

/** Returns `customers.import_completed` with the job as it ended, dated when it finished (else now). */
export function importCompletedEvent(job: ImportJob, clock: Clock): EventDraft {
  return { type: 'customers.import_completed', data: job, at: job.finishedAt ? new Date(job.finishedAt) : clock() };
}

/** Returns the `webhook.test` event for one endpoint only (`seq`), enabled or not. */
export function testEvent(webhookId: string, seq: number, by: Actor, at: Date): EventDraft {
  return { type: 'webhook.test', data: { webhookId, by }, at, to: [seq] };
}

/** Returns the row the outbox stores for the event: a new id, and the body every delivery of it sends. */
export function outboxEvent({ type, data, at }: EventDraft): OutboxEvent {
  return { id: randomUUID(), type, body: JSON.stringify({ type, timestamp: at.toISOString(), data }), createdAt: at };
}
