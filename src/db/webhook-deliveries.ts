// SQL for the webhook outbox: events, one delivery per event and endpoint, and the outcome of each attempt.
// Knows no HTTP: the dispatcher decides what an answer means; this stores it.
import { randomUUID } from 'node:crypto';
import { AppError } from '../domain/errors.ts';
import type { DeliveryStatus, EventType } from '../domain/webhooks.ts';
import type { SqliteEngine } from './engine.ts';
import type { WebhookRepository } from './webhooks.ts';

/** A delivery as the API shows it. `attempt` counts the attempts made; `nextAttemptAt` is set while pending. */
export interface Delivery {
  id: string;
  eventId: string;
  type: EventType;
  attempt: number;
  status: DeliveryStatus;
  responseStatus?: number;
  error?: string;
  createdAt: string;
  nextAttemptAt?: string;
}

/** An event as written to the outbox: its id (the `webhook-id` header) and the exact body to sign and send. */
export interface OutboxEvent {
  id: string;
  type: EventType;
  body: string;
  createdAt: Date;
}

/** A pending delivery with what its next attempt sends. */
export interface DueDelivery {
  id: string;
  webhookSeq: number;
  eventId: string;
  body: string;
  /** Attempts made before this one. */
  attempt: number;
}

/** What an attempt came to: still pending (with the next attempt's time), succeeded or failed for good. */
export interface AttemptResult {
  status: DeliveryStatus;
  responseStatus: number | undefined;
  error: string | undefined;
  nextAttemptAt: Date | undefined;
  /** Set when the answer disables the endpoint: why. */
  disable?: string;
}

/** A delivery row joined with its event (shared with the PostgreSQL repository). */
export interface DeliveryRow {
  id: string;
  event_id: string;
  type: EventType;
  attempt: number;
  status: DeliveryStatus;
  response_status: number | null;
  error: string | null;
  created_at: number;
  next_attempt_at: number | null;
}

/** The delivery as the API shows it, from its row (both engines). */
export function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    eventId: row.event_id,
    type: row.type,
    attempt: row.attempt,
    status: row.status,
    ...(row.response_status === null ? {} : { responseStatus: row.response_status }),
    ...(row.error === null ? {} : { error: row.error }),
    createdAt: new Date(row.created_at).toISOString(),
    ...(row.next_attempt_at === null ? {} : { nextAttemptAt: new Date(row.next_attempt_at).toISOString() }),
  };
}

/** The columns of a Delivery and the join they come from (both engines). */
export const DELIVERY_COLUMNS = `d.id, e.id AS event_id, e.type, d.attempt, d.status, d.response_status, d.error, d.created_at, d.next_attempt_at
  FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq`;

/**
 * The outbox queries. Those marked "joins" are synchronous: they run inside the transaction of the change that caused
 * the event (a campaign's move, the end of an import job), so the event commits or rolls back with it.
 */
export interface DeliveryRepository {
  /** Joins: writes the event and one pending delivery, due at once, for each endpoint; returns the deliveries' ids. */
  writeEventIn(event: OutboxEvent, webhookSeqs: readonly number[]): string[];
  /** Joins: returns the user's full name, as events name who made a change, or undefined when the user is unknown. */
  userNameIn(userId: string): string | undefined;
  /** Resolves to the delivery; rejects with `not_found`. */
  getDelivery(id: string): Promise<Delivery>;
  /** Resolves to one page of the endpoint's deliveries, newest first, and how many it has. */
  listDeliveries(webhookSeq: number, pageNumber: number, limit: number): Promise<{ items: Delivery[]; total: number }>;
  /** Resolves to up to `limit` of the endpoint's pending deliveries due at `now`, the earliest due first. */
  dueDeliveries(webhookSeq: number, now: Date, limit: number): Promise<DueDelivery[]>;
  /** Resolves to the delivery if it is still pending, due or not. */
  findPending(id: string): Promise<DueDelivery | undefined>;
  /** Resolves to when the earliest pending delivery due after `now` is due, or undefined when there is none. */
  nextDueAfter(now: Date): Promise<Date | undefined>;
  /**
   * Stores the outcome of an attempt of a pending delivery (and disables the endpoint when `result.disable` says
   * so); resolves to false when the delivery was no longer pending (its endpoint disabled or deleted meanwhile).
   */
  recordAttempt(id: string, webhookSeq: number, result: AttemptResult, now: Date): Promise<boolean>;
}

/** Returns the outbox queries over `engine`, prepared once; `webhooks` disables an endpoint when an answer says so. */
export function createDeliveryRepository(engine: SqliteEngine, webhooks: WebhookRepository): DeliveryRepository {
  const { db } = engine;
  const insertEvent = db.prepare('INSERT INTO webhook_events (id, type, body, created_at) VALUES (@id, @type, @body, @createdAt)');
  const insertDelivery = db.prepare(
    `INSERT INTO webhook_deliveries (id, webhook_seq, event_seq, status, created_at, next_attempt_at)
     VALUES (@id, @webhookSeq, @eventSeq, 'pending', @createdAt, @createdAt)`,
  );
  const nameOf = db.prepare<[string], string>('SELECT full_name FROM users WHERE id = ?').pluck();
  const byId = db.prepare<[string], DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} WHERE d.id = ?`);
  const page = db.prepare<[number, number, number], DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} WHERE d.webhook_seq = ? ORDER BY d.seq DESC LIMIT ? OFFSET ?`);
  const count = db.prepare<[number], number>('SELECT count(*) FROM webhook_deliveries WHERE webhook_seq = ?').pluck();
  const due = db.prepare<[number, number, number], DueDelivery>(
    `SELECT d.id, d.webhook_seq AS webhookSeq, e.id AS eventId, e.body, d.attempt
     FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
     WHERE d.webhook_seq = ? AND d.status = 'pending' AND d.next_attempt_at <= ?
     ORDER BY d.next_attempt_at, d.seq LIMIT ?`,
  );
  const pendingById = db.prepare<[string], DueDelivery>(
    `SELECT d.id, d.webhook_seq AS webhookSeq, e.id AS eventId, e.body, d.attempt
     FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq WHERE d.id = ? AND d.status = 'pending'`,
  );
  const nextDue = db.prepare<[number], number | null>(`SELECT min(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at > ?`).pluck();
  const record = db.prepare(
    `UPDATE webhook_deliveries SET status = @status, attempt = attempt + 1, response_status = @responseStatus, error = @error,
       next_attempt_at = @nextAttemptAt
     WHERE id = @id AND status = 'pending'`,
  );

  // Nested in the caller's transaction this is a savepoint: the event and all of its deliveries, or none.
  const writeEvent = db.transaction((event: OutboxEvent, webhookSeqs: readonly number[]): string[] => {
    const createdAt = event.createdAt.getTime();
    const eventSeq = insertEvent.run({ id: event.id, type: event.type, body: event.body, createdAt }).lastInsertRowid;
    return webhookSeqs.map((webhookSeq) => {
      const id = randomUUID();
      insertDelivery.run({ id, webhookSeq, eventSeq, createdAt });
      return id;
    });
  });

  return {
    writeEventIn(event, webhookSeqs) {
      return writeEvent(event, webhookSeqs);
    },

    userNameIn(userId) {
      return nameOf.get(userId);
    },

    async getDelivery(id) {
      const row = byId.get(id);
      if (!row) throw new AppError('not_found', `No delivery with id ${id}.`);
      return toDelivery(row);
    },

    listDeliveries(webhookSeq, pageNumber, limit) {
      // The total and the page from one snapshot, so they agree while deliveries are written.
      return engine.read(() => {
        const total = count.get(webhookSeq)!;
        const offset = (pageNumber - 1) * limit;
        return { items: offset < total ? page.all(webhookSeq, limit, offset).map(toDelivery) : [], total };
      });
    },

    async dueDeliveries(webhookSeq, now, limit) {
      return due.all(webhookSeq, now.getTime(), limit);
    },

    async findPending(id) {
      return pendingById.get(id);
    },

    async nextDueAfter(now) {
      const at = nextDue.get(now.getTime());
      return at === null || at === undefined ? undefined : new Date(at);
    },

    recordAttempt(id, webhookSeq, result, now) {
      return engine.write(() => {
        const changed = record.run({
          id,
          status: result.status,
          responseStatus: result.responseStatus ?? null,
          error: result.error ?? null,
          nextAttemptAt: result.nextAttemptAt?.getTime() ?? null,
        }).changes;
        if (changed && result.disable !== undefined) webhooks.disableWebhook(webhookSeq, result.disable, now);
        return changed > 0;
      });
    },
  };
}
