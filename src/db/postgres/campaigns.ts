// Campaigns and their review trail on PostgreSQL: the same contract as ../campaigns.ts. What SQLite's single writer
// gave for free is explicit here:
// - a change to a draft's copy (edit, revision, variants, restore) first locks the campaign's row, so that the checks
//   (is it a draft?) and the next version number (campaign-versions.ts) see every change committed before it: 20
//   revisions at once queue, and number their versions one after another, with no gap or duplicate;
// - a move is a compare-and-set on the status (UPDATE ... WHERE status = from): of two moves at once the second waits
//   for the first's row lock, finds the status changed, updates nothing and is the same `conflict` as on SQLite;
// - list totals are counted on every call, with no cache: a total kept by one instance would go stale when another
//   instance writes, and count(*) over the filter's index is cheap next to the page itself.
import { randomUUID } from 'node:crypto';
import { AppError } from '../../domain/errors.ts';
import type { CampaignStatus } from '../../domain/campaigns.ts';
import {
  FILTER_COLUMNS,
  copyOf,
  toAudience,
  toCampaign,
  toEvent,
  wording,
  type Campaign,
  type CampaignFilter,
  type CampaignMove,
  type CampaignRepository,
  type CampaignRow,
  type EventRow,
  type MoveRequest,
} from '../campaigns.ts';
import type { NewVersion } from '../campaign-versions.ts';
import type { PgSql, PostgresEngine } from '../pg-engine.ts';
import { appendVersion, findVersion, listVersions } from './campaign-versions.ts';

/** What others write in the campaign repository's transactions, on PostgreSQL. */
export interface PgCampaignHooks {
  /**
   * Awaited inside the transaction of every move, after it is written: what it writes through `engine.write` joins
   * that transaction, so it commits or rolls back with the move (the webhook outbox); if it rejects, the move does not
   * happen.
   */
  onMove?: (move: CampaignMove) => Promise<void>;
}

const notFound = (id: string) => new AppError('not_found', `No campaign with id ${id}.`);

/** The WHERE clause of a list: one equality per filter given, on the filter's index. */
function whereOf(sql: PgSql, filter: CampaignFilter) {
  const equal = (Object.keys(FILTER_COLUMNS) as (keyof typeof FILTER_COLUMNS)[])
    .filter((name) => filter[name] !== undefined)
    .map((name) => sql`${sql(FILTER_COLUMNS[name])} = ${filter[name]!}`);
  if (equal.length === 0) return sql``;
  return sql`WHERE ${equal.reduce((all, one) => sql`${all} AND ${one}`)}`;
}

/**
 * Locks the campaign's row for the rest of the transaction and resolves to its status; rejects with `not_found`.
 * NO KEY UPDATE: it queues the changes to this campaign, not the inserts of rows that reference it.
 */
async function lockCampaign(tx: PgSql, id: string): Promise<CampaignStatus> {
  const [row] = await tx<{ status: CampaignStatus }[]>`SELECT status FROM campaigns WHERE id = ${id} FOR NO KEY UPDATE`;
  if (!row) throw notFound(id);
  return row.status;
}

/** Locks the campaign's row; rejects with `not_found`, or `conflict` saying that only drafts can be `what`. */
async function lockDraft(tx: PgSql, id: string, what: string): Promise<void> {
  const status = await lockCampaign(tx, id);
  if (status !== 'draft') throw new AppError('conflict', wording.onlyDrafts(what, status));
}

/** Writes a line of the trail. */
async function addEvent(tx: PgSql, id: string, from: CampaignStatus | null, to: CampaignStatus, note: string | null, userId: string, now: Date): Promise<void> {
  await tx`INSERT INTO campaign_events (campaign_id, from_status, to_status, note, actor_id, at) VALUES (${id}, ${from}, ${to}, ${note}, ${userId}, ${now.getTime()})`;
}

/**
 * Makes `copy` the current copy of a draft whose row this transaction has locked, and records it as the next
 * version; resolves to the campaign after it and the version's number.
 */
async function replaceCopy(tx: PgSql, id: string, version: NewVersion, now: Date): Promise<{ campaign: Campaign; version: number }> {
  const [row] = await tx<CampaignRow[]>`
    UPDATE campaigns SET title = ${version.title}, message = ${version.message}, call_to_action = ${version.callToAction},
      model = coalesce(${version.model ?? null}::text, model), updated_at = ${now.getTime()}
    WHERE id = ${id} RETURNING *`;
  const appended = await appendVersion(tx, id, version, now);
  return { campaign: toCampaign(row!), version: appended.version };
}

/** Returns the campaign repository on the PostgreSQL engine; `hooks.onMove` is awaited inside every move's transaction. */
export function createPgCampaignRepository(engine: PostgresEngine, hooks: PgCampaignHooks = {}): CampaignRepository {
  const { sql } = engine;

  const find = async (db: PgSql, id: string): Promise<Campaign | undefined> => {
    const [row] = await db<CampaignRow[]>`SELECT * FROM campaigns WHERE id = ${id}`;
    return row && toCampaign(row);
  };
  const get = async (db: PgSql, id: string): Promise<Campaign> => {
    const found = await find(db, id);
    if (!found) throw notFound(id);
    return found;
  };

  /** A line of the trail that is no move: the draft stays a draft, the note says what happened to its copy. */
  const noteOnDraft = (tx: PgSql, id: string, note: string, userId: string, now: Date) => addEvent(tx, id, 'draft', 'draft', note, userId, now);

  /** Writes the move and its event, then awaits `onMove` in the same transaction; resolves to the campaign after it. */
  const moveNow = async (tx: PgSql, id: string, { from, to, note, userId, audience }: MoveRequest, now: Date): Promise<Campaign> => {
    const frozen = to === 'approved' ? audience : undefined;
    if (to === 'approved' && !frozen) throw new Error('Approval needs the audience to freeze.');
    const at = now.getTime();
    const conditions = frozen ? JSON.stringify(frozen.conditions) : null;
    // Approval freezes the audience; a move back to draft clears it; marking sent keeps it. Compare-and-set on the
    // status the caller read: a move that committed meanwhile makes this one update nothing (READ COMMITTED re-checks
    // the WHERE on the row version it waited for), a conflict rather than a lost update.
    const [row] = await tx<CampaignRow[]>`
      UPDATE campaigns SET status = ${to}, updated_at = ${at},
        audience_conditions = CASE ${to}::text WHEN 'approved' THEN ${conditions}::text WHEN 'draft' THEN NULL ELSE audience_conditions END,
        audience_description = CASE ${to}::text WHEN 'approved' THEN ${frozen?.description ?? null}::text WHEN 'draft' THEN NULL ELSE audience_description END,
        audience_size = CASE ${to}::text WHEN 'approved' THEN ${frozen?.size ?? null}::bigint WHEN 'draft' THEN NULL ELSE audience_size END,
        approved_at = CASE ${to}::text WHEN 'approved' THEN ${at}::bigint WHEN 'draft' THEN NULL ELSE approved_at END
      WHERE id = ${id} AND status = ${from}
      RETURNING *`;
    if (!row) throw new AppError('conflict', wording.changedMeanwhile);
    await addEvent(tx, id, from, to, note, userId, now);
    const campaign = toCampaign(row);
    await hooks.onMove?.({ campaign, from, to, by: userId, note, audience: to === 'approved' ? toAudience(row) : undefined, at: now });
    return campaign;
  };

  return {
    findCampaign: (id) => find(sql, id),

    getCampaign: (id) => get(sql, id),

    listCampaigns(filter, pageNumber, limit) {
      // One snapshot for the page and its total, read together on one connection.
      return engine.read(async (tx) => {
        const where = whereOf(tx, filter);
        const [counted, rows] = await Promise.all([
          tx<{ n: number }[]>`SELECT count(*) AS n FROM campaigns ${where}`,
          tx<CampaignRow[]>`SELECT * FROM campaigns ${where} ORDER BY seq DESC LIMIT ${limit} OFFSET ${(pageNumber - 1) * limit}`,
        ]);
        return { items: rows.map(toCampaign), total: counted[0]!.n };
      });
    },

    insertCampaign(campaign, now) {
      // A new row: nobody else sees it before this commits, so its first version needs no lock.
      const id = randomUUID();
      return engine.write(async (tx) => {
        const [row] = await tx<CampaignRow[]>`
          INSERT INTO campaigns (id, segment_id, segment_name, objective, channel, tone, title, message, call_to_action, status, model, created_by, created_at, updated_at)
          VALUES (${id}, ${campaign.segmentId}, ${campaign.segmentName}, ${campaign.objective}, ${campaign.channel}, ${campaign.tone},
                  ${campaign.title}, ${campaign.message}, ${campaign.callToAction}, 'draft', ${campaign.model}, ${campaign.createdBy},
                  ${now.getTime()}, ${now.getTime()})
          RETURNING *`;
        await addEvent(tx, id, null, 'draft', null, campaign.createdBy, now);
        await appendVersion(tx, id, { ...copyOf(campaign), source: 'generated', model: campaign.model, createdBy: campaign.createdBy }, now);
        return toCampaign(row!);
      });
    },

    editDraft(id, copy, userId, now) {
      return engine.write(async (tx) => {
        await lockDraft(tx, id, 'edited');
        return (await replaceCopy(tx, id, { ...copyOf(copy), source: 'edited', createdBy: userId }, now)).campaign;
      });
    },

    reviseDraft(id, copy, by, now) {
      return engine.write(async (tx) => {
        await lockDraft(tx, id, 'edited');
        const { campaign, version } = await replaceCopy(tx, id, { ...copyOf(copy), source: 'revised', instruction: by.instruction, model: by.model, createdBy: by.userId }, now);
        await noteOnDraft(tx, id, wording.revised(version, by.instruction), by.userId, now);
        return campaign;
      });
    },

    addVariants(id, copies, by, now) {
      return engine.write(async (tx) => {
        await lockDraft(tx, id, 'given variants');
        const added = [];
        for (const copy of copies) {
          added.push(await appendVersion(tx, id, { ...copyOf(copy), source: 'variant', instruction: by.instruction, model: by.model, createdBy: by.userId }, now));
        }
        await noteOnDraft(tx, id, wording.variants(added.map((v) => v.version), by.instruction), by.userId, now);
        return added;
      });
    },

    restoreVersion(id, number, userId, now) {
      return engine.write(async (tx) => {
        // The checks in SQLite's order: the campaign, then the version, then whether it is still a draft.
        const status = await lockCampaign(tx, id);
        const chosen = await findVersion(tx, id, number);
        if (!chosen) throw new AppError('not_found', `The campaign has no version ${number}.`);
        if (status !== 'draft') throw new AppError('conflict', wording.onlyDrafts('edited', status));
        const { campaign, version } = await replaceCopy(tx, id, { ...copyOf(chosen), source: 'restored', model: chosen.model ?? null, createdBy: userId }, now);
        await noteOnDraft(tx, id, wording.restored(number, version), userId, now);
        return campaign;
      });
    },

    async listVersions(id) {
      await get(sql, id);
      return listVersions(sql, id);
    },

    moveCampaign(id, change, now) {
      return engine.write((tx) => moveNow(tx, id, change, now));
    },

    async getAudience(id) {
      const [row] = await sql<CampaignRow[]>`SELECT * FROM campaigns WHERE id = ${id}`;
      if (!row) throw notFound(id);
      return toAudience(row);
    },

    deleteDraft(id) {
      return engine.write(async (tx) => {
        const removed = await tx`DELETE FROM campaigns WHERE id = ${id} AND status = 'draft'`;
        if (removed.count > 0) return;
        const { status } = await get(tx, id);
        throw new AppError('conflict', wording.onlyDrafts('deleted', status));
      });
    },

    async listEvents(id) {
      await get(sql, id);
      const rows = await sql<EventRow[]>`
        SELECT e.from_status, e.to_status, e.note, e.actor_id, u.full_name, e.at
        FROM campaign_events e LEFT JOIN users u ON u.id = e.actor_id WHERE e.campaign_id = ${id} ORDER BY e.id`;
      return rows.map(toEvent);
    },
  };
}
