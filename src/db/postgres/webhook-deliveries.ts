// The webhook outbox on PostgreSQL: the same contract as ../webhook-deliveries.ts, for several instances at once.
//
// - writeEventIn and userNameIn join the transaction of the change through the engine (asynchronous here), so an
//   event and its deliveries commit or roll back with the change.
// - Taking a delivery claims it: dueDeliveries and findPending return only deliveries this instance holds a claim on,
//   so that two dispatchers (two instances, or a leader and another instance's test send) never attempt one delivery
//   at once. A claim is a session advisory lock on the engine's lock session: it needs no column (the schema stays the
//   SQLite one), shows nothing on the wire, and ends with the instance (its session), so that after a crash another
//   instance attempts the delivery at once: at least once across crashes, once in normal operation. Recording the
//   attempt gives the claim up (after the commit, so whoever claims next sees the outcome). Like SQLite's, the
//   deliveries this instance holds keep coming back while pending: the dispatcher skips those it has under way.
// - recordAttempt is conditional on the delivery being pending and counts attempts in the UPDATE itself, so
//   attempts recorded at once are all counted, and none after the delivery ended.
import { randomUUID } from 'node:crypto';
import { AppError } from '../../domain/errors.ts';
import type { PgSql, PostgresEngine } from '../pg-engine.ts';
import { DELIVERY_COLUMNS, toDelivery, type DeliveryRepository, type DeliveryRow, type DueDelivery, type OutboxEvent } from '../webhook-deliveries.ts';
import type { PgWebhookRepository } from './webhooks.ts';

/** The outbox queries on PostgreSQL: those that join the caller's transaction resolve instead of returning. */
export interface PgDeliveryRepository extends Omit<DeliveryRepository, 'writeEventIn' | 'userNameIn'> {
  /** Joins: writes the event and one pending delivery, due at once, for each endpoint; resolves to the deliveries' ids. */
  writeEventIn(event: OutboxEvent, webhookSeqs: readonly number[]): Promise<string[]>;
  /** Joins: resolves to the user's full name, as events name who made a change, or undefined when the user is unknown. */
  userNameIn(userId: string): Promise<string | undefined>;
  /** Gives up every claim of this instance (when it stops dispatching; closing the engine ends them too). */
  releaseClaims(): Promise<void>;
}

/** The first key of the deliveries' claims (the second is the delivery's seq): "wh". */
const CLAIM_SPACE = 0x7768;
/** Candidates read beyond the limit, so that deliveries another instance holds do not hide free ones behind them. */
const SKIP_MARGIN = 16;

interface DueRow {
  seq: number;
  id: string;
  webhookSeq: number;
  eventId: string;
  body: string;
  attempt: number;
}

const toDue = ({ id, webhookSeq, eventId, body, attempt }: DueRow): DueDelivery => ({ id, webhookSeq, eventId, body, attempt });

/**
 * This instance's claims on deliveries: session advisory locks on the engine's lock session, taken and given up one
 * operation at a time (a session lock is re-entrant: two claims of one delivery at once would need two unlocks).
 */
class Claims {
  /** The deliveries claimed: id to seq. */
  private readonly held = new Map<string, number>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly engine: PostgresEngine) {}

  /** Runs `work` on the lock session, in a transaction of its own, after the operations before it. */
  run<T>(work: (conn: PgSql) => Promise<T>): Promise<T> {
    const result = this.queue.then(async () => {
      try {
        return await this.engine.onLockSession(work);
      } catch (error) {
        // The connection may have been lost, and its locks with it: start again from none (another instance may take them).
        this.held.clear();
        throw error;
      }
    });
    this.queue = result.catch(() => {});
    return result;
  }

  /**
   * Forgets the claims the session no longer holds: after postgres.js reconnected the connection, its locks
   * are gone with the old session (and another instance may be attempting those deliveries).
   */
  async reconcile(conn: PgSql): Promise<void> {
    if (this.held.size === 0) return;
    const rows = await conn<{ key: number }[]>`
      SELECT objid::text::int AS key FROM pg_locks
      WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND classid = ${CLAIM_SPACE}::int::oid AND objsubid = 2 AND granted`;
    const keys = new Set(rows.map((r) => r.key));
    for (const [id, seq] of this.held) if (!keys.has(lockKey(seq))) this.held.delete(id);
  }

  /** Claims each of `candidates` (id to seq, in order) this instance does not hold yet, until `limit` are held; returns them. */
  async claim(conn: PgSql, candidates: readonly { id: string; seq: number }[], limit: number): Promise<number[]> {
    const claimed: number[] = [];
    for (const { id, seq } of candidates) {
      if (claimed.length >= limit) break;
      if (!this.held.has(id)) {
        const [row] = await conn<{ taken: boolean }[]>`SELECT pg_try_advisory_lock(${CLAIM_SPACE}, ${lockKey(seq)}) AS taken`;
        if (!row?.taken) continue; // another instance is attempting it
        this.held.set(id, seq);
      }
      claimed.push(seq);
    }
    return claimed;
  }

  /** Gives up the claim on the delivery, when this instance holds one. */
  async release(conn: PgSql, id: string): Promise<void> {
    const seq = this.held.get(id);
    if (seq === undefined) return;
    this.held.delete(id);
    await conn`SELECT pg_advisory_unlock(${CLAIM_SPACE}, ${lockKey(seq)})`;
  }

  /** Whether this instance holds a claim on the delivery. */
  holds(id: string): boolean {
    return this.held.has(id);
  }

  /** Gives up every claim this instance holds (a lost session has given them up already). */
  releaseAll(): Promise<void> {
    return this.run(async (conn) => {
      for (const id of [...this.held.keys()]) await this.release(conn, id);
    }).catch(() => {});
  }
}

/** The second key of a delivery's claim: its seq, within an int (wrapping past 2^31 only makes two deliveries share a key). */
const lockKey = (seq: number): number => seq % 2_147_483_648;

/** Returns the outbox queries on the PostgreSQL engine; `webhooks` disables an endpoint when an answer says so. */
export function createPgDeliveryRepository(engine: PostgresEngine, webhooks: PgWebhookRepository): PgDeliveryRepository {
  const { sql } = engine;
  const claims = new Claims(engine);

  /** The claimed deliveries still pending (and due at `now`, when given), read after the claims: their latest state. */
  const pendingOf = async (conn: PgSql, seqs: number[], now: number | null): Promise<DueRow[]> =>
    conn<DueRow[]>`
      SELECT d.seq, d.id, d.webhook_seq AS "webhookSeq", e.id AS "eventId", e.body, d.attempt
      FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
      WHERE d.seq = ANY(${seqs}::bigint[]) AND d.status = 'pending' AND (${now}::bigint IS NULL OR d.next_attempt_at <= ${now}::bigint)
      ORDER BY d.next_attempt_at, d.seq`;

  /** Claims up to `limit` of the candidates; resolves to those still pending, and gives up the claims of the others. */
  const take = (candidates: { id: string; seq: number }[], limit: number, now: number | null): Promise<DueDelivery[]> =>
    claims.run(async (conn) => {
      await claims.reconcile(conn);
      const claimed = await claims.claim(conn, candidates, limit);
      if (claimed.length === 0) return [];
      const rows = await pendingOf(conn, claimed, now);
      const kept = new Set(rows.map((r) => r.id));
      // Attempted and recorded by another instance between the candidates' read and the claim; or no longer due.
      for (const { id } of candidates) if (!kept.has(id) && claims.holds(id)) await claims.release(conn, id);
      return rows.map(toDue);
    });

  return {
    writeEventIn(event, webhookSeqs) {
      return engine.write(async (tx) => {
        const createdAt = event.createdAt.getTime();
        const [inserted] = await tx<{ seq: number }[]>`
          INSERT INTO webhook_events (id, type, body, created_at) VALUES (${event.id}, ${event.type}, ${event.body}, ${createdAt}) RETURNING seq`;
        const ids = webhookSeqs.map(() => randomUUID());
        if (ids.length > 0) {
          await tx`
            INSERT INTO webhook_deliveries (id, webhook_seq, event_seq, status, created_at, next_attempt_at)
            SELECT d.id, d.webhook_seq, ${inserted!.seq}, 'pending', ${createdAt}, ${createdAt}
            FROM unnest(${ids}::text[], ${[...webhookSeqs]}::bigint[]) WITH ORDINALITY AS d(id, webhook_seq, n) ORDER BY n`;
        }
        return ids;
      });
    },

    userNameIn(userId) {
      return engine.read(async (tx) => (await tx<{ full_name: string }[]>`SELECT full_name FROM users WHERE id = ${userId}`)[0]?.full_name);
    },

    async getDelivery(id) {
      const [row] = await sql<DeliveryRow[]>`SELECT ${sql.unsafe(DELIVERY_COLUMNS)} WHERE d.id = ${id}`;
      if (!row) throw new AppError('not_found', `No delivery with id ${id}.`);
      return toDelivery(row);
    },

    listDeliveries(webhookSeq, pageNumber, limit) {
      // The total and the page from one snapshot (REPEATABLE READ), so they agree while deliveries are written.
      return engine.read(async (tx) => {
        const [counted] = await tx<{ total: number }[]>`SELECT count(*) AS total FROM webhook_deliveries WHERE webhook_seq = ${webhookSeq}`;
        const total = counted!.total;
        const offset = (pageNumber - 1) * limit;
        if (offset >= total) return { items: [], total };
        const rows = await tx<DeliveryRow[]>`SELECT ${tx.unsafe(DELIVERY_COLUMNS)} WHERE d.webhook_seq = ${webhookSeq} ORDER BY d.seq DESC LIMIT ${limit} OFFSET ${offset}`;
        return { items: rows.map(toDelivery), total };
      });
    },

    async dueDeliveries(webhookSeq, now, limit) {
      const at = now.getTime();
      // Read without locks; the claims then decide who attempts which (SKIP LOCKED's effect, for as long as the attempt).
      const candidates = await sql<{ id: string; seq: number }[]>`
        SELECT id, seq FROM webhook_deliveries WHERE webhook_seq = ${webhookSeq} AND status = 'pending' AND next_attempt_at <= ${at}
        ORDER BY next_attempt_at, seq LIMIT ${limit + SKIP_MARGIN}`;
      return candidates.length === 0 ? [] : take([...candidates], limit, at);
    },

    async findPending(id) {
      const [candidate] = await sql<{ id: string; seq: number }[]>`SELECT id, seq FROM webhook_deliveries WHERE id = ${id} AND status = 'pending'`;
      if (!candidate) return undefined;
      // Undefined as well when another instance is attempting it: that instance records the outcome.
      return (await take([candidate], 1, null))[0];
    },

    async nextDueAfter(now) {
      const [row] = await sql<{ at: number | null }[]>`
        SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at > ${now.getTime()}`;
      return row?.at === null || row?.at === undefined ? undefined : new Date(row.at);
    },

    async recordAttempt(id, webhookSeq, result, now) {
      try {
        return await engine.write(async (tx) => {
          // An answer that disables takes the endpoint's row first, as every disabling does before the deliveries'
          // rows: two such attempts at once then queue instead of each holding a delivery the other's disabling ends.
          if (result.disable !== undefined) await tx`SELECT 1 FROM webhooks WHERE seq = ${webhookSeq} FOR NO KEY UPDATE`;
          const changed = await tx`
            UPDATE webhook_deliveries SET status = ${result.status}, attempt = attempt + 1, response_status = ${result.responseStatus ?? null},
              error = ${result.error ?? null}, next_attempt_at = ${result.nextAttemptAt?.getTime() ?? null}
            WHERE id = ${id} AND status = 'pending' RETURNING seq`;
          if (changed.length > 0 && result.disable !== undefined) await webhooks.disableWebhook(webhookSeq, result.disable, now);
          return changed.length > 0;
        });
      } finally {
        // After the commit: whoever claims the delivery next reads the outcome.
        if (claims.holds(id)) await claims.run((conn) => claims.release(conn, id));
      }
    },

    releaseClaims() {
      return claims.releaseAll();
    },
  };
}
