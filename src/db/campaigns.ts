// SQL for campaigns and their review trail. Knows no HTTP: returns data, or throws `not_found` / `conflict`.
import { randomUUID } from 'node:crypto';
import type { CampaignCopy, CampaignStatus, Channel, Tone } from '../domain/campaigns.ts';
import { AppError } from '../domain/errors.ts';
import type { Statement } from 'better-sqlite3';
import { createCampaignVersionStatements, type CampaignVersion, type NewVersion } from './campaign-versions.ts';
import type { SqliteEngine } from './engine.ts';
import type { StoredCondition } from './segments.ts';

/** A campaign as the API shows it: exactly these fields. */
export interface Campaign extends CampaignCopy {
  id: string;
  segmentId: string;
  segmentName: string;
  objective: string;
  channel: Channel;
  tone: Tone;
  status: CampaignStatus;
  model: string;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/** One status change (or the creation, from `null` to draft). */
export interface CampaignEvent {
  from: CampaignStatus | null;
  to: CampaignStatus;
  note: string | null;
  userId: string;
  userName: string | null;
  at: string;
}

/** The audience a campaign was approved for: the segment's conditions and size at that moment. */
export interface FrozenAudience {
  conditions: StoredCondition[];
  description: string;
  sizeAtApproval: number;
  approvedAt: string;
}

/** A move of the review workflow, as the `onMove` hook hears it inside the move's transaction. */
export interface CampaignMove {
  /** The campaign after the move. */
  campaign: Campaign;
  from: CampaignStatus;
  to: CampaignStatus;
  /** The id of the user who moved it. */
  by: string;
  note: string | null;
  /** The audience frozen by this move: set when `to` is `approved`. */
  audience: FrozenAudience | undefined;
  at: Date;
}

/** What others write in the campaign repository's transactions. */
export interface CampaignHooks {
  /**
   * Called inside the transaction of every move, after it is written: what it writes commits or rolls back with the
   * move (the webhook outbox). It must not await.
   */
  onMove?: (move: CampaignMove) => void;
}

/** What a list of campaigns is narrowed to. */
export interface CampaignFilter {
  status?: CampaignStatus;
  channel?: Channel;
  segmentId?: string;
}

/** A row of the campaigns table, as both engines return it. */
export interface CampaignRow {
  id: string;
  segment_id: string;
  segment_name: string;
  objective: string;
  channel: Channel;
  tone: Tone;
  title: string;
  message: string;
  call_to_action: string;
  status: CampaignStatus;
  model: string;
  created_by: string;
  created_at: number;
  updated_at: number;
  audience_conditions: string | null;
  audience_description: string | null;
  audience_size: number | null;
  approved_at: number | null;
}

/** The audience frozen in a row, or undefined before approval. */
export function toAudience(row: CampaignRow): FrozenAudience | undefined {
  if (row.audience_conditions === null || row.approved_at === null) return undefined;
  return {
    conditions: JSON.parse(row.audience_conditions) as StoredCondition[],
    description: row.audience_description ?? '',
    sizeAtApproval: row.audience_size ?? 0,
    approvedAt: new Date(row.approved_at).toISOString(),
  };
}

/** Only the copy's three fields. */
export function copyOf(copy: CampaignCopy): CampaignCopy {
  return { title: copy.title, message: copy.message, callToAction: copy.callToAction };
}

/** The campaign a row holds, as the API shows it. */
export function toCampaign(row: CampaignRow): Campaign {
  return {
    id: row.id,
    segmentId: row.segment_id,
    segmentName: row.segment_name,
    objective: row.objective,
    channel: row.channel,
    tone: row.tone,
    title: row.title,
    message: row.message,
    callToAction: row.call_to_action,
    status: row.status,
    model: row.model,
    createdBy: row.created_by,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** A move as the caller asks for it; approving carries the segment's conditions and their count at that moment. */
export interface MoveRequest {
  from: CampaignStatus;
  to: CampaignStatus;
  note: string | null;
  userId: string;
  audience?: { conditions: StoredCondition[]; description: string; size: number };
}

/** The column each list filter narrows on. */
export const FILTER_COLUMNS = { status: 'status', channel: 'channel', segmentId: 'segment_id' } as const;

/** A draft to store: everything of a campaign but what the repository sets. */
export type NewCampaign = Omit<Campaign, 'id' | 'status' | 'createdAt' | 'updatedAt'>;

/** Who rewrote a draft with the model, on which instruction (none for variants asked without one). */
export interface Rewriter<Instruction = string> {
  instruction: Instruction;
  model: string;
  userId: string;
}

/** The campaigns and their review trail. Each function resolves as said, or rejects with AppError `not_found` / `conflict`. */
export interface CampaignRepository {
  /** Resolves to the campaign, or undefined. */
  findCampaign(id: string): Promise<Campaign | undefined>;
  /** Resolves to the campaign; rejects with `not_found`. */
  getCampaign(id: string): Promise<Campaign>;
  /** Resolves to one page of campaigns, newest first, and how many match. */
  listCampaigns(filter: CampaignFilter, pageNumber: number, limit: number): Promise<{ items: Campaign[]; total: number }>;
  /** Stores a new draft, its creation event and its first version; resolves to it. */
  insertCampaign(campaign: NewCampaign, now: Date): Promise<Campaign>;
  /** Replaces the copy of a draft by the user's edit, recorded as a version; `not_found`, or `conflict` when it is no longer a draft. */
  editDraft(id: string, copy: CampaignCopy, userId: string, now: Date): Promise<Campaign>;
  /** Makes a rewritten copy current, recorded as a `revised` version and in the trail; `not_found` or `conflict`. */
  reviseDraft(id: string, copy: CampaignCopy, by: Rewriter, now: Date): Promise<Campaign>;
  /** Stores alternatives as `variant` versions, not made current, noted in the trail; `not_found` or `conflict`. */
  addVariants(id: string, copies: CampaignCopy[], by: Rewriter<string | null>, now: Date): Promise<CampaignVersion[]>;
  /** Makes an earlier version's copy current again, as a new `restored` version; `not_found` or `conflict`. */
  restoreVersion(id: string, version: number, userId: string, now: Date): Promise<Campaign>;
  /** Resolves to the campaign's versions, oldest first; `not_found`. */
  listVersions(id: string): Promise<CampaignVersion[]>;
  /**
   * Moves the campaign from `from` to `to` and records who did it, with `onMove` in the same transaction; approval
   * (`audience` required) freezes the audience and a move back to draft clears it. `conflict` if its status is no
   * longer `from`.
   */
  moveCampaign(id: string, change: MoveRequest, now: Date): Promise<Campaign>;
  /** Resolves to the audience frozen at approval, or undefined before approval; `not_found`. */
  getAudience(id: string): Promise<FrozenAudience | undefined>;
  /** Deletes a draft and its trail; `not_found`, or `conflict` when it is not a draft. */
  deleteDraft(id: string): Promise<void>;
  /** Resolves to the campaign's trail, oldest first; `not_found`. */
  listEvents(id: string): Promise<CampaignEvent[]>;
}

/** A line of the trail with its actor's name, as both engines return it. */
export type EventRow = { from_status: CampaignStatus | null; to_status: CampaignStatus; note: string | null; actor_id: string; full_name: string | null; at: number };

/** The trail's wording, shared by both engines: conflicts, and the notes of changes to a draft's copy. */
export const wording = {
  onlyDrafts: (what: string, status: CampaignStatus) => `Only drafts can be ${what}; this campaign is ${status}.`,
  changedMeanwhile: 'The campaign changed meanwhile; read it again and retry.',
  revised: (version: number, instruction: string) => `Revised as version ${version}: ${instruction}`,
  variants: (numbers: number[], instruction: string | null) =>
    `${numbers.length} variants offered as versions ${numbers.slice(0, -1).join(', ')} and ${numbers.at(-1)}${instruction ? `: ${instruction}` : ''}`,
  restored: (number: number, version: number) => `Restored version ${number} as version ${version}`,
};

/** A line of the trail as the API shows it. */
export const toEvent = (e: EventRow): CampaignEvent => ({ from: e.from_status, to: e.to_status, note: e.note, userId: e.actor_id, userName: e.full_name, at: new Date(e.at).toISOString() });

/** Returns the campaign repository, its statements prepared once; `hooks.onMove` hears every move inside its transaction. */
export function createCampaignRepository(engine: SqliteEngine, hooks: CampaignHooks = {}): CampaignRepository {
  const { db } = engine;
  const byId = db.prepare<[string], CampaignRow>('SELECT * FROM campaigns WHERE id = ?');
  /** The list statements for one combination of filters, prepared on first use: each can use its own index. */
  const listStatements = new Map<string, { page: Statement<Record<string, unknown>, CampaignRow>; count: Statement<Record<string, unknown>, { n: number }> }>();
  const statementsFor = (filter: Record<string, string>) => {
    const names = Object.keys(filter) as (keyof typeof FILTER_COLUMNS)[];
    const key = names.join(',');
    let found = listStatements.get(key);
    if (!found) {
      const where = names.length ? `WHERE ${names.map((n) => `${FILTER_COLUMNS[n]} = @${n}`).join(' AND ')}` : '';
      found = {
        page: db.prepare(`SELECT * FROM campaigns ${where} ORDER BY seq DESC LIMIT @limit OFFSET @offset`),
        count: db.prepare(`SELECT count(*) AS n FROM campaigns ${where}`),
      };
      listStatements.set(key, found);
    }
    return found;
  };
  const insert = db.prepare(
    `INSERT INTO campaigns (id, segment_id, segment_name, objective, channel, tone, title, message, call_to_action, status, model, created_by, created_at, updated_at)
     VALUES (@id, @segmentId, @segmentName, @objective, @channel, @tone, @title, @message, @callToAction, 'draft', @model, @createdBy, @now, @now)`,
  );
  const edit = db.prepare(
    `UPDATE campaigns SET title = @title, message = @message, call_to_action = @callToAction, model = coalesce(@model, model), updated_at = @now
     WHERE id = @id AND status = 'draft'`,
  );
  const versions = createCampaignVersionStatements(engine);
  // Approval freezes the audience; a move back to draft clears it; marking sent keeps it.
  const move = db.prepare(
    `UPDATE campaigns SET status = @to, updated_at = @now,
       audience_conditions = CASE @to WHEN 'approved' THEN @conditions WHEN 'draft' THEN NULL ELSE audience_conditions END,
       audience_description = CASE @to WHEN 'approved' THEN @description WHEN 'draft' THEN NULL ELSE audience_description END,
       audience_size = CASE @to WHEN 'approved' THEN @size WHEN 'draft' THEN NULL ELSE audience_size END,
       approved_at = CASE @to WHEN 'approved' THEN @now WHEN 'draft' THEN NULL ELSE approved_at END
     WHERE id = @id AND status = @from`,
  );
  const remove = db.prepare("DELETE FROM campaigns WHERE id = ? AND status = 'draft'");
  const addEvent = db.prepare(
    'INSERT INTO campaign_events (campaign_id, from_status, to_status, note, actor_id, at) VALUES (@id, @from, @to, @note, @userId, @now)',
  );
  const events = db.prepare<[string], EventRow>(
    `SELECT e.from_status, e.to_status, e.note, e.actor_id, u.full_name, e.at
     FROM campaign_events e LEFT JOIN users u ON u.id = e.actor_id WHERE e.campaign_id = ? ORDER BY e.id`,
  );

  /** Totals per filter, remembered until a campaign changes: counting 100,000 rows per page view would dominate the list. */
  const totals = new Map<string, number>();
  /** Called inside the write that changes them, so no read after its commit can find the old totals. */
  const changed = () => totals.clear();
  const filterParams = (filter: CampaignFilter): Record<string, string> =>
    Object.fromEntries(Object.entries(filter).filter(([name, value]) => name in FILTER_COLUMNS && value !== undefined));

  // The synchronous parts below run inside one `engine.write` each (or as plain reads).
  const find = (id: string): Campaign | undefined => {
    const row = byId.get(id);
    return row && toCampaign(row);
  };
  const get = (id: string): Campaign => {
    const found = find(id);
    if (!found) throw new AppError('not_found', `No campaign with id ${id}.`);
    return found;
  };

  /** Throws `not_found`, or `conflict` saying that only drafts can be `what`. */
  const notDraft = (id: string, what: string): never => {
    throw new AppError('conflict', wording.onlyDrafts(what, get(id).status));
  };

  /** Makes `copy` the draft's current copy and records it as the next version; throws `not_found` or `conflict`. */
  const replaceCopy = (id: string, copy: CampaignCopy, version: Omit<NewVersion, keyof CampaignCopy>, now: Date): CampaignVersion => {
    if (edit.run({ id, ...copy, model: version.model ?? null, now: now.getTime() }).changes === 0) notDraft(id, 'edited');
    return versions.append(id, { ...copy, ...version }, now);
  };

  /** A line of the trail that is no move: the draft stays a draft, the note says what happened to its copy. */
  const noteOnDraft = (id: string, note: string, userId: string, now: Date) => addEvent.run({ id, from: 'draft', to: 'draft', note, userId, now: now.getTime() });

  /** Writes the move and its event, then lets `onMove` write in the same transaction; returns the campaign after it. */
  const moveNow = (id: string, { from, to, note, userId, audience }: MoveRequest, now: Date): Campaign => {
    const frozen = to === 'approved' ? audience : undefined;
    if (to === 'approved' && !frozen) throw new Error('Approval needs the audience to freeze.');
    const params = {
      id,
      from,
      to,
      now: now.getTime(),
      conditions: frozen ? JSON.stringify(frozen.conditions) : null,
      description: frozen?.description ?? null,
      size: frozen?.size ?? null,
    };
    // Compare-and-set on the status read by the caller: a concurrent move makes this one a conflict, not a lost update.
    if (move.run(params).changes === 0) throw new AppError('conflict', wording.changedMeanwhile);
    addEvent.run({ id, from, to, note, userId, now: params.now });
    const row = byId.get(id)!;
    hooks.onMove?.({ campaign: toCampaign(row), from, to, by: userId, note, audience: to === 'approved' ? toAudience(row) : undefined, at: now });
    return toCampaign(row);
  };

  return {
    async findCampaign(id) {
      return find(id);
    },

    async getCampaign(id) {
      return get(id);
    },

    async listCampaigns(filter, pageNumber, limit) {
      const params = filterParams(filter);
      const statements = statementsFor(params);
      const key = JSON.stringify(params);
      let total = totals.get(key);
      if (total === undefined) {
        total = statements.count.get(params)!.n;
        totals.set(key, total);
      }
      const offset = (pageNumber - 1) * limit;
      const items = offset < total ? statements.page.all({ ...params, limit, offset }).map(toCampaign) : [];
      return { items, total };
    },

    insertCampaign(campaign, now) {
      const id = randomUUID();
      return engine.write(() => {
        insert.run({ ...campaign, id, now: now.getTime() });
        addEvent.run({ id, from: null, to: 'draft', note: null, userId: campaign.createdBy, now: now.getTime() });
        versions.append(id, { ...copyOf(campaign), source: 'generated', model: campaign.model, createdBy: campaign.createdBy }, now);
        changed();
        return get(id);
      });
    },

    editDraft(id, copy, userId, now) {
      return engine.write(() => {
        replaceCopy(id, copy, { source: 'edited', createdBy: userId }, now);
        return get(id);
      });
    },

    reviseDraft(id, copy, by, now) {
      return engine.write(() => {
        const { version } = replaceCopy(id, copy, { source: 'revised', instruction: by.instruction, model: by.model, createdBy: by.userId }, now);
        noteOnDraft(id, wording.revised(version, by.instruction), by.userId, now);
        changed();
        return get(id);
      });
    },

    addVariants(id, copies, by, now) {
      return engine.write(() => {
        if (byId.get(id)?.status !== 'draft') notDraft(id, 'given variants');
        const added = copies.map((copy) => versions.append(id, { ...copy, source: 'variant', instruction: by.instruction, model: by.model, createdBy: by.userId }, now));
        noteOnDraft(id, wording.variants(added.map((v) => v.version), by.instruction), by.userId, now);
        return added;
      });
    },

    restoreVersion(id, number, userId, now) {
      return engine.write(() => {
        get(id);
        const chosen = versions.find(id, number);
        if (!chosen) throw new AppError('not_found', `The campaign has no version ${number}.`);
        const { version } = replaceCopy(id, copyOf(chosen), { source: 'restored', model: chosen.model ?? null, createdBy: userId }, now);
        noteOnDraft(id, wording.restored(number, version), userId, now);
        changed();
        return get(id);
      });
    },

    async listVersions(id) {
      get(id);
      return versions.list(id);
    },

    moveCampaign(id, change, now) {
      return engine.write(() => {
        const campaign = moveNow(id, change, now);
        changed();
        return campaign;
      });
    },

    async getAudience(id) {
      const row = byId.get(id);
      if (!row) throw new AppError('not_found', `No campaign with id ${id}.`);
      return toAudience(row);
    },

    deleteDraft(id) {
      return engine.write(() => {
        if (remove.run(id).changes === 0) notDraft(id, 'deleted');
        changed();
      });
    },

    async listEvents(id) {
      get(id);
      return events.all(id).map(toEvent);
    },
  };
}
