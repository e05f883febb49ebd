// The saved segments on PostgreSQL: the same contract as ../segments.ts. Each write is one statement, so READ
// COMMITTED's row locks are all the concurrency needs: of two updates of one segment the second waits and applies
// after, and a delete racing an update leaves either the update's result or `not_found`. Deleting a segment leaves
// its campaigns as they are, as on SQLite (campaigns.segment_id is no foreign key).
import { randomUUID } from 'node:crypto';
import { AppError } from '../../domain/errors.ts';
import type { PostgresEngine } from '../pg-engine.ts';
import { LIST_SEGMENTS_SQL, toSegment, withIds, type Segment, type SegmentRepository, type SegmentRow } from '../segments.ts';

const notFound = (id: string) => new AppError('not_found', `No segment with id ${id}.`);

/** Returns the segment statements on the PostgreSQL engine. Reads run on the pool, outside any transaction. */
export function createPgSegmentRepository(engine: PostgresEngine): SegmentRepository {
  const { sql } = engine;

  const find = async (id: string): Promise<Segment | undefined> => {
    const [row] = await sql<SegmentRow[]>`SELECT * FROM segments WHERE id = ${id}`;
    return row && toSegment(row);
  };

  return {
    async listSegments() {
      return (await sql.unsafe<SegmentRow[]>(LIST_SEGMENTS_SQL)).map(toSegment);
    },

    findSegment: find,

    async getSegment(id) {
      const found = await find(id);
      if (!found) throw notFound(id);
      return found;
    },

    insertSegment(segment, now) {
      return engine.write(async (tx) => {
        const [row] = await tx<SegmentRow[]>`
          INSERT INTO segments (id, name, conditions, match_count, created_by, created_at, updated_at)
          VALUES (${randomUUID()}, ${segment.name}, ${JSON.stringify(withIds(segment.conditions))}, ${segment.matchCount},
                  ${segment.createdBy}, ${now.getTime()}, ${now.getTime()})
          RETURNING *`;
        return toSegment(row!);
      });
    },

    updateSegment(id, changes, now) {
      return engine.write(async (tx) => {
        const conditions = changes.conditions ? JSON.stringify(withIds(changes.conditions)) : null;
        const [row] = await tx<SegmentRow[]>`
          UPDATE segments SET name = coalesce(${changes.name ?? null}::text, name), conditions = coalesce(${conditions}::text, conditions),
            match_count = ${changes.matchCount}, updated_at = ${now.getTime()}
          WHERE id = ${id}
          RETURNING *`;
        if (!row) throw notFound(id);
        return toSegment(row);
      });
    },

    async storeMatchCount(id, matchCount) {
      await engine.write((tx) => tx`UPDATE segments SET match_count = ${matchCount} WHERE id = ${id}`);
    },

    async deleteSegment(id) {
      const removed = await engine.write((tx) => tx`DELETE FROM segments WHERE id = ${id}`);
      if (removed.count === 0) throw notFound(id);
    },
  };
}
