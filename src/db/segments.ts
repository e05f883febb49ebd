// SQL for saved segments. Conditions are stored as one JSON array, each condition with its id, in order.
import { randomBytes, randomUUID } from 'node:crypto';
import { AppError } from '../domain/errors.ts';
import type { Condition } from '../domain/segments.ts';
import type { SqliteEngine } from './engine.ts';

/** A condition as stored: with the id it was given when saved. */
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

/** A row of the segments table, as both engines return it. */
export interface SegmentRow {
  id: string;
  name: string;
  conditions: string;
  match_count: number;
  created_at: number;
  updated_at: number;
}

/** The segment a row holds. */
export function toSegment(row: SegmentRow): Segment {
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
export function withIds(conditions: readonly Condition[]): StoredCondition[] {
  return conditions.map((c) => ({ id: `cnd_${randomBytes(6).toString('base64url')}`, field: c.field, operator: c.operator, value: c.value }) as StoredCondition);
}

/** Every segment, newest first (GET /v1/segments); the same text on both engines. */
export const LIST_SEGMENTS_SQL = 'SELECT * FROM segments ORDER BY created_at DESC, id DESC';

/** What saving a segment stores besides its conditions' ids. */
export interface NewSegment {
  name: string;
  conditions: readonly Condition[];
  matchCount: number;
  createdBy: string;
}

/** What an update changes: the name and/or the conditions (absent ones are kept), and the new count. */
export interface SegmentUpdate {
  name?: string;
  conditions?: readonly Condition[];
  matchCount: number;
}

/** The saved segments; every function resolves once its statements have run. */
export interface SegmentRepository {
  /** Resolves to every segment, newest first, with its stored count. */
  listSegments(): Promise<Segment[]>;
  /** Resolves to the segment, or undefined. */
  findSegment(id: string): Promise<Segment | undefined>;
  /** Resolves to the segment; rejects with `not_found`. */
  getSegment(id: string): Promise<Segment>;
  /** Stores a new segment and resolves to it. */
  insertSegment(segment: NewSegment, now: Date): Promise<Segment>;
  /** Changes the name and/or replaces the conditions, storing the new count; rejects with `not_found`. */
  updateSegment(id: string, changes: SegmentUpdate, now: Date): Promise<Segment>;
  /** Stores a freshly counted audience size. */
  storeMatchCount(id: string, matchCount: number): Promise<void>;
  /** Deletes the segment; rejects with `not_found`. */
  deleteSegment(id: string): Promise<void>;
}

/** Returns the segment queries on the engine, prepared once. */
export function createSegmentRepository(engine: SqliteEngine): SegmentRepository {
  const { db } = engine;
  const all = db.prepare<[], SegmentRow>(LIST_SEGMENTS_SQL);
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

  /** Synchronous, so a write can read back what it stored in its own transaction. */
  const find = (id: string): Segment | undefined => {
    const row = byId.get(id);
    return row && toSegment(row);
  };
  const get = (id: string): Segment => {
    const found = find(id);
    if (!found) throw new AppError('not_found', `No segment with id ${id}.`);
    return found;
  };

  return {
    async listSegments() {
      return all.all().map(toSegment);
    },

    async findSegment(id) {
      return find(id);
    },

    async getSegment(id) {
      return get(id);
    },

    insertSegment(segment, now) {
      return engine.write(() => {
        const id = randomUUID();
        insert.run({ ...segment, id, conditions: JSON.stringify(withIds(segment.conditions)), now: now.getTime() });
        return get(id);
      });
    },

    updateSegment(id, changes, now) {
      return engine.write(() => {
        const result = update.run({
          id,
          name: changes.name ?? null,
          conditions: changes.conditions ? JSON.stringify(withIds(changes.conditions)) : null,
          matchCount: changes.matchCount,
          now: now.getTime(),
        });
        if (result.changes === 0) throw new AppError('not_found', `No segment with id ${id}.`);
        return get(id);
      });
    },

    async storeMatchCount(id, matchCount) {
      await engine.write(() => recount.run(matchCount, id));
    },

    async deleteSegment(id) {
      const removed = await engine.write(() => remove.run(id).changes);
      if (removed === 0) throw new AppError('not_found', `No segment with id ${id}.`);
    },
  };
}
