// SQL for saved segments. Conditions are stored as one JSON array, each condition with its id, in order.
import { randomBytes, randomUUID } from 'node:crypto';
import { AppError } from '../domain/errors.ts';
import type { Condition } from '../domain/segments.ts';
import type { Db } from './database.ts';

export type StoredCondition = Condition & { id: string };

/** A segment as the API shows it. */
export interface Segment {
  id: string;
  name: string;
  conditions: StoredCondition[];
  matchCount: number;
  createdAt: string;
  updatedAt: string;
}

interface SegmentRow {
  id: string;
  name: string;
  conditions: string;
  match_count: number;
  created_at: number;
  updated_at: number;
}

function toSegment(row: SegmentRow): Segment {
  return {
    id: row.id,
    name: row.name,
    conditions: JSON.parse(row.conditions) as StoredCondition[],
    matchCount: row.match_count,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** Returns the conditions with a fresh id each, keeping their order and only their known fields. */
function withIds(conditions: readonly Condition[]): StoredCondition[] {
  return conditions.map((c) => ({ id: `cnd_${randomBytes(6).toString('base64url')}`, field: c.field, operator: c.operator, value: c.value }) as StoredCondition);
}

export type SegmentRepository = ReturnType<typeof createSegmentRepository>;

/** Returns the segment queries, prepared once. */
export function createSegmentRepository(db: Db) {
  const all = db.prepare<[], SegmentRow>('SELECT * FROM segments ORDER BY created_at DESC, id DESC');
  const byId = db.prepare<[string], SegmentRow>('SELECT * FROM segments WHERE id = ?');
  const insert = db.prepare(
    `INSERT INTO segments (id, name, conditions, match_count, created_by, created_at, updated_at)
     VALUES (@id, @name, @conditions, @matchCount, @createdBy, @now, @now)`,
  );
  const update = db.prepare(
    `UPDATE segments SET name = coalesce(@name, name), conditions = coalesce(@conditions, conditions),
       match_count = @matchCount, updated_at = @now
     WHERE id = @id`,
  );
  const recount = db.prepare('UPDATE segments SET match_count = ? WHERE id = ?');
  const remove = db.prepare('DELETE FROM segments WHERE id = ?');

  const findSegment = (id: string): Segment | undefined => {
    const row = byId.get(id);
    return row && toSegment(row);
  };
  const getSegment = (id: string): Segment => {
    const found = findSegment(id);
    if (!found) throw new AppError('not_found', `No segment with id ${id}.`);
    return found;
  };

  return {
    /** Returns every segment, newest first, with its stored count. */
    listSegments(): Segment[] {
      return all.all().map(toSegment);
    },

    findSegment,
    /** Returns the segment; throws `not_found`. */
    getSegment,

    /** Stores a new segment and returns it. */
    insertSegment(segment: { name: string; conditions: readonly Condition[]; matchCount: number; createdBy: string }, now: Date): Segment {
      const id = randomUUID();
      insert.run({ ...segment, id, conditions: JSON.stringify(withIds(segment.conditions)), now: now.getTime() });
      return getSegment(id);
    },

    /** Changes the name and/or replaces the conditions, storing the new count; throws `not_found`. */
    updateSegment(id: string, changes: { name?: string; conditions?: readonly Condition[]; matchCount: number }, now: Date): Segment {
      const result = update.run({
        id,
        name: changes.name ?? null,
        conditions: changes.conditions ? JSON.stringify(withIds(changes.conditions)) : null,
        matchCount: changes.matchCount,
        now: now.getTime(),
      });
      if (result.changes === 0) throw new AppError('not_found', `No segment with id ${id}.`);
      return getSegment(id);
    },

    /** Stores a freshly counted audience size. */
    storeMatchCount(id: string, matchCount: number): void {
      recount.run(matchCount, id);
    },

    /** Deletes the segment; throws `not_found`. */
    deleteSegment(id: string): void {
      if (remove.run(id).changes === 0) throw new AppError('not_found', `No segment with id ${id}.`);
    },
  };
}
