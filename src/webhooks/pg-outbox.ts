// The outbox on PostgreSQL: the same events as outbox.ts (built in events.ts), written by asynchronous writers that
// join the transaction of the change through the engine (`engine.write` inside an open transaction runs in it), so
// that an event and its deliveries commit or roll back with the change. Called outside a transaction, a writer runs
// in one of its own: a move's two events commit together.
import type { CampaignMove } from '../db/campaigns.ts';
import type { PostgresEngine } from '../db/pg-engine.ts';
import type { PgDeliveryRepository } from '../db/postgres/webhook-deliveries.ts';
import type { PgWebhookRepository } from '../db/postgres/webhooks.ts';
import type { ImportJob } from '../customers/index.ts';
import type { Clock } from '../domain/clock.ts';
import { actorOf, campaignMoveEvents, importCompletedEvent, outboxEvent, testEvent, type Actor, type EventDraft } from './events.ts';

/** What the outbox on PostgreSQL writes with, and whom it tells. */
export interface PgOutboxOptions {
  engine: PostgresEngine;
  webhooks: PgWebhookRepository;
  deliveries: PgDeliveryRepository;
  /** The origin (and path prefix) clients reach the service at, without a trailing slash. */
  publicUrl: () => string;
  /** Told after each write of a change's event, inside the transaction (a NOTIFY, sent at its commit). */
  written: () => void;
  clock: Clock;
}

/** The outbox's writers on PostgreSQL: each resolves once written, inside the caller's transaction when there is one. */
export interface PgOutbox {
  /**
   * The campaigns' `onMove`, awaited in the move's transaction: `campaign.status_changed` for every move, and
   * `campaign.approved` with the frozen audience and the absolute URL of its CSV export when the move approves.
   */
  campaignMoved(move: CampaignMove): Promise<void>;
  /** The import jobs' `onFinish`, awaited in the transaction that ends the job: `customers.import_completed`. */
  importFinished(job: ImportJob): Promise<void>;
  /**
   * Writes a `webhook.test` event for one endpoint only, enabled or not; resolves to its delivery's id. Rejects with
   * `not_found`. It does not tell the dispatchers: the caller attempts it at once, then tells them (so that another
   * instance's dispatcher does not take it first).
   */
  sendTest(webhookId: string, by: string, at: Date): Promise<string>;
}

/** Returns the outbox's writers over the PostgreSQL repositories. */
export function createPgOutbox({ engine, webhooks, deliveries, publicUrl, written, clock }: PgOutboxOptions): PgOutbox {
  // Read in the change's transaction: the user as of the change.
  const actor = async (id: string): Promise<Actor> => actorOf(id, await deliveries.userNameIn(id));

  /** Writes the event for its endpoints (the subscribers of its type by default); resolves to the deliveries' ids. */
  const record = async (event: EventDraft): Promise<string[]> => {
    const to = event.to ?? (await webhooks.subscribersIn(event.type));
    if (to.length === 0) return [];
    return deliveries.writeEventIn(outboxEvent(event), to);
  };

  /** Records the change's events in order, then tells the dispatchers when any was written. */
  const recordAll = async (events: EventDraft[]): Promise<void> => {
    let wrote = false;
    for (const event of events) wrote = (await record(event)).length > 0 || wrote;
    if (wrote) written();
  };

  return {
    campaignMoved(move) {
      return engine.write(async () => recordAll(campaignMoveEvents(move, await actor(move.by), publicUrl)));
    },

    importFinished(job) {
      return engine.write(() => recordAll([importCompletedEvent(job, clock)]));
    },

    sendTest(webhookId, by, at) {
      return engine.write(async () => {
        const { seq } = await webhooks.endpointIn(webhookId);
        return (await record(testEvent(webhookId, seq, await actor(by), at)))[0]!;
      });
    },
  };
}
