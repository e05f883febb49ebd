// SQL for webhook endpoints and their signing secrets. Knows no HTTP: returns data, or throws `not_found`.
import { randomUUID } from 'node:crypto';
import { AppError } from '../domain/errors.ts';
import type { EventType } from '../domain/webhooks.ts';
import type { SqliteEngine } from './engine.ts';

/** An endpoint as the API shows it: never its secret. */
export interface Webhook {
  id: string;
  url: string;
  events: EventType[];
  description?: string;
  enabled: boolean;
  /** Why the service disabled it (a 410 answer); absent when enabled, or disabled by an admin. */
  disabledReason?: string;
  /** Until when the secret before the last rotation signs too. */
  previousSecretExpiresAt?: string;
  createdAt: string;
  updatedAt: string;
}

/** A new endpoint as an admin registers it. */
export interface NewWebhook {
  url: string;
  events: EventType[];
  description: string | undefined;
}

/** Changes of an endpoint; `description` null or empty removes it. */
export interface WebhookChanges {
  url?: string;
  events?: EventType[];
  description?: string | null;
  enabled?: boolean;
}

/** What signing and sending to an endpoint needs. */
export interface WebhookTarget {
  seq: number;
  url: string;
  enabled: boolean;
  /** The current secret, then the previous one while it still signs. */
  secrets: string[];
}

/** A row of `webhooks` (shared with the PostgreSQL repository). */
export interface WebhookRow {
  seq: number;
  id: string;
  url: string;
  events: string;
  description: string | null;
  enabled: number;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

/** The endpoint as the API shows it, from its row (both engines). */
export function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as EventType[],
    ...(row.description ? { description: row.description } : {}),
    enabled: row.enabled === 1,
    ...(row.disabled_reason === null ? {} : { disabledReason: row.disabled_reason }),
    ...(row.previous_secret_expires_at === null ? {} : { previousSecretExpiresAt: new Date(row.previous_secret_expires_at).toISOString() }),
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** The endpoint queries. Those marked "joins" are synchronous: they run inside a transaction already under way. */
export interface WebhookRepository {
  /** Resolves to the endpoint; rejects with `not_found`. */
  getWebhook(id: string): Promise<Webhook>;
  /** Resolves to every endpoint, oldest first. */
  listWebhooks(): Promise<Webhook[]>;
  /** Stores a new enabled endpoint signing with `secret`; resolves to it. */
  insertWebhook(webhook: NewWebhook, secret: string, now: Date): Promise<Webhook>;
  /** Applies the changes and resolves to the endpoint; disabling ends its pending deliveries as `failed`. Rejects with `not_found`. */
  updateWebhook(id: string, changes: WebhookChanges, now: Date): Promise<Webhook>;
  /** Replaces the secret by `secret`; the old one keeps signing until `previousUntil`. Rejects with `not_found`. */
  rotateSecret(id: string, secret: string, previousUntil: Date, now: Date): Promise<Webhook>;
  /** Deletes the endpoint with its deliveries, and the events no other endpoint receives; rejects with `not_found`. */
  deleteWebhook(id: string): Promise<void>;
  /** Resolves to the sequence numbers of the enabled endpoints. */
  enabledWebhooks(): Promise<number[]>;
  /** Resolves to what sending to the endpoint needs at `now`, or undefined when it is gone. */
  findTarget(seq: number, now: Date): Promise<WebhookTarget | undefined>;
  /** Resolves to the sequence number of the endpoint; rejects with `not_found`. */
  seqOf(id: string): Promise<number>;
  /** Joins: returns the sequence numbers of the enabled endpoints subscribed to `type`. */
  subscribersIn(type: EventType): number[];
  /** Joins: returns the endpoint's sequence number and whether it is enabled; throws `not_found`. */
  endpointIn(id: string): { seq: number; enabled: boolean };
  /** Joins: disables the endpoint and ends its pending deliveries as `failed`; nothing when it is disabled already. */
  disableWebhook(seq: number, reason: string | null, now: Date): void;
}

/** Returns the endpoint queries over `engine`, prepared once. */
export function createWebhookRepository(engine: SqliteEngine): WebhookRepository {
  const { db } = engine;
  const byId = db.prepare<[string], WebhookRow>('SELECT * FROM webhooks WHERE id = ?');
  const bySeq = db.prepare<[number], WebhookRow>('SELECT * FROM webhooks WHERE seq = ?');
  const all = db.prepare<[], WebhookRow>('SELECT * FROM webhooks ORDER BY seq');
  const enabledSeqs = db.prepare<[], number>('SELECT seq FROM webhooks WHERE enabled = 1 ORDER BY seq').pluck();
  // A handful of endpoints at most: scanning them beats keeping a table of subscriptions. SQLite's json_each here;
  // PostgreSQL's text will test the jsonb array with `?`.
  const subscribed = db
    .prepare<[string], number>('SELECT seq FROM webhooks WHERE enabled = 1 AND EXISTS (SELECT 1 FROM json_each(webhooks.events) WHERE value = ?) ORDER BY seq')
    .pluck();
  const insert = db.prepare(
    `INSERT INTO webhooks (id, url, events, description, enabled, secret, created_at, updated_at)
     VALUES (@id, @url, @events, @description, 1, @secret, @now, @now)`,
  );
  const update = db.prepare(
    `UPDATE webhooks SET url = coalesce(@url, url), events = coalesce(@events, events),
       description = CASE WHEN @keepDescription THEN description ELSE @description END,
       enabled = coalesce(@enabled, enabled),
       disabled_reason = CASE WHEN @enabled IS NULL OR @enabled = enabled THEN disabled_reason ELSE NULL END, -- kept while it stays disabled
       updated_at = @now
     WHERE id = @id`,
  );
  const disable = db.prepare('UPDATE webhooks SET enabled = 0, disabled_reason = @reason, updated_at = @now WHERE seq = @seq AND enabled = 1');
  const failPending = db.prepare(
    `UPDATE webhook_deliveries SET status = 'failed', error = @error, next_attempt_at = NULL WHERE webhook_seq = @seq AND status = 'pending'`,
  );
  const rotate = db.prepare(
    `UPDATE webhooks SET previous_secret = secret, previous_secret_expires_at = @until, secret = @secret, updated_at = @now WHERE id = @id`,
  );
  const remove = db.prepare('DELETE FROM webhooks WHERE id = ?');
  // SQLite's json_each; PostgreSQL's text will take the sequence numbers as an array parameter (`= ANY($1)`).
  const removeOrphanEvents = db.prepare(
    'DELETE FROM webhook_events WHERE seq IN (SELECT value FROM json_each(?)) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries WHERE event_seq = webhook_events.seq)',
  );
  const eventsOf = db.prepare<[number], number>('SELECT DISTINCT event_seq FROM webhook_deliveries WHERE webhook_seq = ?').pluck();

  const getRow = (id: string): WebhookRow => {
    const row = byId.get(id);
    if (!row) throw new AppError('not_found', `No webhook with id ${id}.`);
    return row;
  };

  const disableWebhook = (seq: number, reason: string | null, now: Date): void => {
    // Nested in the caller's transaction this is a savepoint: both statements or neither.
    db.transaction(() => {
      if (disable.run({ seq, reason, now: now.getTime() }).changes === 0) return;
      failPending.run({ seq, error: 'Not sent: the endpoint was disabled.' });
    })();
  };

  return {
    async getWebhook(id) {
      return toWebhook(getRow(id));
    },

    async listWebhooks() {
      return all.all().map(toWebhook);
    },

    insertWebhook(webhook, secret, now) {
      return engine.write(() => {
        const id = randomUUID();
        insert.run({ id, url: webhook.url, events: JSON.stringify(webhook.events), description: webhook.description || null, secret, now: now.getTime() });
        return toWebhook(getRow(id));
      });
    },

    updateWebhook(id, changes, now) {
      return engine.write(() => {
        const before = getRow(id);
        if (changes.enabled === false) disableWebhook(before.seq, null, now);
        update.run({
          id,
          url: changes.url ?? null,
          events: changes.events ? JSON.stringify(changes.events) : null,
          keepDescription: changes.description === undefined ? 1 : 0,
          description: changes.description || null,
          enabled: changes.enabled === undefined ? null : Number(changes.enabled),
          now: now.getTime(),
        });
        return toWebhook(getRow(id));
      });
    },

    rotateSecret(id, secret, previousUntil, now) {
      return engine.write(() => {
        if (rotate.run({ id, secret, until: previousUntil.getTime(), now: now.getTime() }).changes === 0) getRow(id);
        return toWebhook(getRow(id));
      });
    },

    deleteWebhook(id) {
      return engine.write(() => {
        const { seq } = getRow(id);
        const events = eventsOf.all(seq);
        remove.run(id);
        removeOrphanEvents.run(JSON.stringify(events));
      });
    },

    async enabledWebhooks() {
      return enabledSeqs.all();
    },

    async findTarget(seq, now) {
      const row = bySeq.get(seq);
      if (!row) return undefined;
      const previousSigns = row.previous_secret !== null && (row.previous_secret_expires_at ?? 0) > now.getTime();
      return { seq, url: row.url, enabled: row.enabled === 1, secrets: previousSigns ? [row.secret, row.previous_secret!] : [row.secret] };
    },

    async seqOf(id) {
      return getRow(id).seq;
    },

    subscribersIn(type) {
      return subscribed.all(type);
    },

    endpointIn(id) {
      const row = getRow(id);
      return { seq: row.seq, enabled: row.enabled === 1 };
    },

    disableWebhook,
  };
}
