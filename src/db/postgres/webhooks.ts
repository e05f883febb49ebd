// Webhook endpoints on PostgreSQL: the same contract as ../webhooks.ts. The functions that on SQLite are synchronous
// and join the caller's transaction (subscribersIn, endpointIn, disableWebhook) are asynchronous here and join it
// through the engine (`engine.write` inside an open transaction runs in it). Concurrency SQLite's single writer hid:
// a rotation is one UPDATE (the old secret moves to previous_secret in the same row version, so two rotations at once
// chain, and a delivery reading the row sees one secret pair or the other, never half of each); disabling is
// conditional on `enabled = 1`, so of several attempts disabling at once one ends the pending deliveries.
import { randomUUID } from 'node:crypto';
import { AppError } from '../../domain/errors.ts';
import type { EventType } from '../../domain/webhooks.ts';
import type { PgSql, PostgresEngine } from '../pg-engine.ts';
import { toWebhook, type WebhookRepository, type WebhookRow } from '../webhooks.ts';

/** The endpoint queries on PostgreSQL: those that join the caller's transaction resolve instead of returning. */
export interface PgWebhookRepository extends Omit<WebhookRepository, 'subscribersIn' | 'endpointIn' | 'disableWebhook'> {
  /** Joins: resolves to the sequence numbers of the enabled endpoints subscribed to `type`. */
  subscribersIn(type: EventType): Promise<number[]>;
  /** Joins: resolves to the endpoint's sequence number and whether it is enabled; rejects with `not_found`. */
  endpointIn(id: string): Promise<{ seq: number; enabled: boolean }>;
  /** Joins: disables the endpoint and ends its pending deliveries as `failed`; nothing when it is disabled already. */
  disableWebhook(seq: number, reason: string | null, now: Date): Promise<void>;
}

/** Reads the endpoint's row on `sql` (a transaction's, to see its own writes); rejects with `not_found`. */
async function rowOf(sql: PgSql, id: string): Promise<WebhookRow> {
  const [row] = await sql<WebhookRow[]>`SELECT * FROM webhooks WHERE id = ${id}`;
  if (!row) throw new AppError('not_found', `No webhook with id ${id}.`);
  return row;
}

/** Disables the endpoint in `tx`; its pending deliveries end only when this call is the one that disabled it. */
async function disable(tx: PgSql, seq: number, reason: string | null, now: Date): Promise<void> {
  // Conditional, and the row lock it takes makes a concurrent disabling wait and then find it disabled: one of them
  // fails the pending deliveries, as on SQLite.
  const changed = await tx`UPDATE webhooks SET enabled = 0, disabled_reason = ${reason}, updated_at = ${now.getTime()}
    WHERE seq = ${seq} AND enabled = 1 RETURNING seq`;
  if (changed.length === 0) return;
  await tx`UPDATE webhook_deliveries SET status = 'failed', error = 'Not sent: the endpoint was disabled.', next_attempt_at = NULL
    WHERE webhook_seq = ${seq} AND status = 'pending'`;
}

/** Returns the endpoint queries on the PostgreSQL engine. Single reads run on the pool, outside any transaction. */
export function createPgWebhookRepository(engine: PostgresEngine): PgWebhookRepository {
  const { sql } = engine;

  return {
    async getWebhook(id) {
      return toWebhook(await rowOf(sql, id));
    },

    async listWebhooks() {
      return (await sql<WebhookRow[]>`SELECT * FROM webhooks ORDER BY seq`).map(toWebhook);
    },

    insertWebhook(webhook, secret, now) {
      return engine.write(async (tx) => {
        const [row] = await tx<WebhookRow[]>`
          INSERT INTO webhooks (id, url, events, description, enabled, secret, created_at, updated_at)
          VALUES (${randomUUID()}, ${webhook.url}, ${JSON.stringify(webhook.events)}, ${webhook.description || null}, 1, ${secret}, ${now.getTime()}, ${now.getTime()})
          RETURNING *`;
        return toWebhook(row!);
      });
    },

    updateWebhook(id, changes, now) {
      return engine.write(async (tx) => {
        const before = await rowOf(tx, id);
        if (changes.enabled === false) await disable(tx, before.seq, null, now);
        const enabled = changes.enabled === undefined ? null : Number(changes.enabled);
        // The same statement as SQLite's: the SET expressions see the row as it was before this UPDATE.
        const [row] = await tx<WebhookRow[]>`
          UPDATE webhooks SET url = coalesce(${changes.url ?? null}, url),
            events = coalesce(${changes.events ? JSON.stringify(changes.events) : null}, events),
            description = CASE WHEN ${changes.description === undefined} THEN description ELSE ${changes.description || null} END,
            enabled = coalesce(${enabled}::integer, enabled),
            disabled_reason = CASE WHEN ${enabled}::integer IS NULL OR ${enabled}::integer = enabled THEN disabled_reason ELSE NULL END,
            updated_at = ${now.getTime()}
          WHERE id = ${id} RETURNING *`;
        if (!row) throw new AppError('not_found', `No webhook with id ${id}.`);
        return toWebhook(row);
      });
    },

    rotateSecret(id, secret, previousUntil, now) {
      return engine.write(async (tx) => {
        // One statement: a rotation at the same time waits for this row lock, then moves this one's secret aside.
        const [row] = await tx<WebhookRow[]>`
          UPDATE webhooks SET previous_secret = secret, previous_secret_expires_at = ${previousUntil.getTime()}, secret = ${secret},
            updated_at = ${now.getTime()}
          WHERE id = ${id} RETURNING *`;
        if (!row) throw new AppError('not_found', `No webhook with id ${id}.`);
        return toWebhook(row);
      });
    },

    async deleteWebhook(id) {
      await engine.write(async (tx) => {
        const { seq } = await rowOf(tx, id);
        // Lock the endpoint's events (in one order) before looking for other deliveries of them: two endpoints sharing
        // an event, deleted at once, then run one after the other, and the second sees the first's deletion, so the
        // event does not outlive both (under READ COMMITTED each would otherwise still see the other's deliveries).
        const events = (
          await tx<{ seq: number }[]>`
            SELECT seq FROM webhook_events WHERE seq IN (SELECT event_seq FROM webhook_deliveries WHERE webhook_seq = ${seq})
            ORDER BY seq FOR UPDATE`
        ).map((e) => e.seq);
        await tx`DELETE FROM webhooks WHERE seq = ${seq}`; // its deliveries go with it (ON DELETE CASCADE)
        await tx`DELETE FROM webhook_events WHERE seq = ANY(${events}::bigint[])
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries WHERE event_seq = webhook_events.seq)`;
      });
    },

    async enabledWebhooks() {
      return (await sql<{ seq: number }[]>`SELECT seq FROM webhooks WHERE enabled = 1 ORDER BY seq`).map((r) => r.seq);
    },

    async findTarget(seq, now) {
      // One row read by one statement: the secret and the previous one as one rotation left them.
      const [row] = await sql<WebhookRow[]>`SELECT * FROM webhooks WHERE seq = ${seq}`;
      if (!row) return undefined;
      const previousSigns = row.previous_secret !== null && (row.previous_secret_expires_at ?? 0) > now.getTime();
      return { seq, url: row.url, enabled: row.enabled === 1, secrets: previousSigns ? [row.secret, row.previous_secret!] : [row.secret] };
    },

    async seqOf(id) {
      return (await rowOf(sql, id)).seq;
    },

    subscribersIn(type) {
      // SQLite's json_each; here the array tested with jsonb containment. FOR SHARE: a disabling at the same time
      // waits for the event's transaction, then ends the deliveries it wrote, instead of leaving them pending.
      return engine.write(async (tx) =>
        (await tx<{ seq: number }[]>`
          SELECT seq FROM webhooks WHERE enabled = 1 AND events::jsonb @> jsonb_build_array(${type}::text) ORDER BY seq FOR SHARE`).map((r) => r.seq),
      );
    },

    endpointIn(id) {
      return engine.write(async (tx) => {
        // FOR SHARE, as in subscribersIn: the answer holds until the caller's transaction ends.
        const [row] = await tx<{ seq: number; enabled: number }[]>`SELECT seq, enabled FROM webhooks WHERE id = ${id} FOR SHARE`;
        if (!row) throw new AppError('not_found', `No webhook with id ${id}.`);
        return { seq: row.seq, enabled: row.enabled === 1 };
      });
    },

    disableWebhook(seq, reason, now) {
      return engine.write((tx) => disable(tx, seq, reason, now));
    },
  };
}
