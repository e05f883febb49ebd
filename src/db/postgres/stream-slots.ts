// Reply-stream slots every instance shares: a held slot is a row of `stream_slots` naming its instance, so a user's
// streams are counted across the deployment (CHAT_STREAMS_PER_USER). A slot counts only while its instance's lease
// runs, so a killed instance's streams stop counting with it. The cap over all of a process's streams
// (CHAT_STREAMS_TOTAL) stays a cap of each process (product.md section 13), counted here in memory.
import { randomUUID } from 'node:crypto';
import type { SlotPool } from '../../domain/slot-pool.ts';
import type { PgSql, PostgresEngine } from '../pg-engine.ts';

/** The most rows of dead instances one acquire sweeps: they no longer count, this only keeps the table small. */
const SWEEP_LIMIT = 100;

/** What one acquire did in the database: took the slot, or found a cap full. */
type Taken = { slot: string } | { full: 'holder' | 'pool' };

/** Returns the slot pool of this instance (`instanceId`, whose lease keeps its slots counting). */
export function createPgSlotPool(engine: PostgresEngine, instanceId: string, perHolder: number, total: number): SlotPool {
  /** The slots this process holds: the per-process cap, checked before the database is asked. */
  let all = 0;
  /** Slots whose release could not reach the database: deleted by the next acquire, as they would keep counting. */
  const unreleased = new Set<string>();
  /**
   * Slots being released now: not counted by this process's acquires. A stream's answer ends before its slot's row
   * is deleted, and its client's next stream (to this instance, most often) must not find that slot still held.
   */
  const releasing = new Set<string>();

  /** Deletes the rows of slots whose instance is gone (skipping those another sweep holds) and those left by a failed release. */
  const sweep = async (tx: PgSql, leftOver: string[]): Promise<void> => {
    await tx`
      DELETE FROM stream_slots WHERE id IN (
        SELECT id FROM stream_slots WHERE NOT campaigns_instance_alive(instance_id) LIMIT ${SWEEP_LIMIT} FOR UPDATE SKIP LOCKED)`;
    if (leftOver.length > 0) await tx`DELETE FROM stream_slots WHERE id = ANY(${leftOver}::text[])`;
  };

  /**
   * Takes a slot for the holder when fewer than `perHolder` of theirs are held on live instances; with `poolFull`,
   * only says which cap refuses. The holder's advisory lock makes counting and taking one step across instances.
   */
  const take = async (holder: string, poolFull: boolean): Promise<Taken> => {
    const leftOver = [...unreleased];
    const taken = await engine.write(async (tx): Promise<Taken> => {
      await tx`SELECT pg_advisory_xact_lock(hashtext(${`stream:${holder}`}))`;
      await sweep(tx, leftOver);
      const [row] = await tx<{ n: number }[]>`
        SELECT count(*) AS n FROM stream_slots
        WHERE holder = ${holder} AND campaigns_instance_alive(instance_id) AND id <> ALL(${[...releasing]}::text[])`;
      if (row!.n >= perHolder) return { full: 'holder' };
      if (poolFull) return { full: 'pool' };
      const slot = randomUUID();
      await tx`INSERT INTO stream_slots (id, holder, instance_id, acquired_at) VALUES (${slot}, ${holder}, ${instanceId}, campaigns_now_ms())`;
      return { slot };
    });
    for (const id of leftOver) unreleased.delete(id);
    return taken;
  };

  return {
    perHolder,
    total,
    async acquire(holder) {
      // Reserved before the first await, so acquires under way at once cannot overrun the process's cap.
      const poolFull = all >= total;
      if (!poolFull) all++;
      let taken: Taken;
      try {
        taken = await take(holder, poolFull);
      } catch (error) {
        if (!poolFull) all--;
        throw error;
      }
      if ('full' in taken) {
        if (!poolFull) all--;
        return { held: false, full: taken.full };
      }
      return { held: true, release: releaseOnce(taken.slot) };
    },
  };

  /** The release of slot `id`: frees it once, however often it is called. */
  function releaseOnce(id: string): () => Promise<void> {
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      all--;
      releasing.add(id);
      try {
        await engine.transaction('read write', (tx) => tx`DELETE FROM stream_slots WHERE id = ${id}`);
      } catch {
        unreleased.add(id); // the database is out of reach: the next acquire deletes it
      } finally {
        releasing.delete(id);
      }
    };
  }
}
