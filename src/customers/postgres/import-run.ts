// Running one CSV import job on PostgreSQL. The parser (../imports/csv-parser.ts, on the event loop, the same as on
// SQLite) reads and checks the rows and posts them in batches sorted by email through a port. Each batch is copied
// into the job's staging table (import-chunk.ts), then written in chunks, each in ONE transaction with its skipped
// rows and the job's counts, so a crash loses nothing the counts report. Every customer write waits for a chunk from
// its insert to its commit (the customer writes' turn, taken by the triggers): chunks are sized from the time the
// last ones held it, so that a write waits about LOCK_TARGET_MS at most. After each commit the change feed catches
// up, as after every customer write on PostgreSQL. Each chunk's transaction first makes sure the job is still this
// instance's and `running` (job-store.ts claimChunk): an instance cut off from the database past its lease finds its
// job marked `interrupted` by another, and stops without writing more of it.
//
// The job runs on one connection of the pool, reserved for it: the staging table is a temporary table, which lives
// in its session, and a batch copied once serves several chunks. (Over TCP, each COPY costs about 40 ms however few
// its rows: postgres.js leaves Nagle's algorithm on, and the server delays its acknowledgement.)
import { MessageChannel } from 'node:worker_threads';
import type { PgSql, PostgresEngine, ReservedConnection } from '../../db/pg-engine.ts';
import { isConnectionLost } from '../../db/unavailable.ts';
import { receiveBatches } from '../imports/csv-job.ts';
import { parseCsvFile, type ParsedBatch } from '../imports/csv-parser.ts';
import type { JobToRun, SkippedRow } from '../imports/job-store.ts';
import { unpackRow } from '../imports/packed-rows.ts';
import { duplicateReason, repeatedReason } from '../imports/reasons.ts';
import { CustomerIdSet } from '../store/writes.ts';
import { closeStaging, insertStaged, openStaging, stageBatch, type StagedBatch } from './import-chunk.ts';
import type { PgImportJobStore } from './job-store.ts';

/**
 * How long a chunk holds other customer writes (its insert, its skipped rows and counts, its commit), aimed at: well
 * under the 250 ms a request may wait, as a chunk now and then takes twice as long as the one before (a checkpoint,
 * the disk, a busy machine). At 100, on a loaded machine of two cores, chunks held it up to 200 ms.
 */
const LOCK_TARGET_MS = 80;
/** Records in the first chunk, and the bounds of every chunk's (a batch of the parser holds 5,000 at most). */
const FIRST_CHUNK_ROWS = 1_000;
const MIN_CHUNK_ROWS = 100;
const MAX_CHUNK_ROWS = 5_000;
/** A chunk that fails with one of these (serialization failure, deadlock) is tried again, this many times in all. */
const RETRIED = new Set(['40001', '40P01']);
const ATTEMPTS = 5;

/** What a job run needs: the engine, the job store, the change feed to catch up, and whether to stop. */
export interface PgJobRunDeps {
  engine: PostgresEngine;
  jobs: PgImportJobStore;
  feed: { catchUp(): Promise<void> };
  /** Asked between chunks: true stops the run after the chunk committed, the job left `running`. */
  stopping(): boolean;
}

/**
 * How a run ended: its file read to the end, or not (the reason is its last skipped row), stopped before its end, or
 * cut off because the job is no longer this instance's running job (another instance marked it `interrupted`).
 */
export type PgJobEnd = 'completed' | 'failed' | 'stopped' | 'gone';

/** Thrown inside a chunk's transaction when the job is no longer this instance's: the chunk is rolled back. */
class JobGone extends Error {}

/** The batch being written: its records unpacked (with their lines) and as staged. */
interface Staged {
  batch: ParsedBatch;
  lines: number[];
  staged: StagedBatch;
}

/**
 * Imports the file at `path` for the job; resolves to how it ended. Rows that break a rule, repeat a stored email or
 * cannot be parsed are skipped with their line. Rejects with what a chunk's transaction throws (the chunks before it
 * stay committed, with their counts).
 */
export async function runPgCsvJob(job: JobToRun, path: string, deps: PgJobRunDeps): Promise<PgJobEnd> {
  const { port1, port2 } = new MessageChannel();
  parseCsvFile({ path, columns: job.columns, startedAt: job.startedAt, port: port2 });
  const parsed = receiveBatches(port1);
  /** Batches received and not yet wholly committed; `taken` records of the first are committed. */
  const batches: ParsedBatch[] = [];
  let taken = 0;
  let current: Staged | undefined;
  let bytes = 0;
  /** Whether a chunk has taken the end of the file (its reach, and the reason it broke off) in. */
  let finished = false;
  let chunkRows = FIRST_CHUNK_ROWS;
  /** Updating: the customers this job has stored or replaced, so a later row repeating an email is reported, not applied. */
  const seen = job.onExisting === 'update' ? new CustomerIdSet() : undefined;
  let reserved: ReservedConnection | undefined;

  /** Stages the batch unless it is the one staged. */
  const stage = async (on: PgSql, batch: ParsedBatch): Promise<Staged> => {
    if (current?.batch === batch) return current;
    const unpacked = batch.records.map(unpackRow);
    const staged = await stageBatch(on, unpacked.map((u) => u.record), job.onExisting, seen);
    current = { batch, lines: unpacked.map((u) => u.line), staged };
    return current;
  };

  /**
   * Writes the next records of the first batch holding some in one transaction, with the skipped rows of the batches
   * it completes (and of those before it that hold no record); with `end`, once every batch is in, the end too.
   */
  const commit = async (on: PgSql, end?: { bytes: number; broken?: SkippedRow }) => {
    const skipped: SkippedRow[] = [];
    let rows = 0;
    let reach = bytes;
    let done = 0;
    const complete = (batch: ParsedBatch) => {
      skipped.push(...batch.skipped);
      rows += batch.skipped.length;
      reach = Math.max(reach, batch.bytes);
      done++;
    };
    while (done < batches.length && batches[done]!.records.length === 0) complete(batches[done]!);
    const target = batches[done];
    const from = taken;
    const to = target ? Math.min(target.records.length, from + chunkRows) : 0;
    const staged = target && (await stage(on, target));
    if (target) {
      rows += to - from;
      if (to === target.records.length) complete(target);
    }
    const takesEnd = end !== undefined && done === batches.length;
    if (takesEnd) {
      reach = Math.max(reach, end.bytes);
      if (end.broken) {
        rows++;
        skipped.push(end.broken);
      }
    }
    const result = await attempt(() =>
      inTransaction(on, async (tx) => {
        if (!(await deps.jobs.claimChunk(tx, job.seq))) throw new JobGone(`Import job ${job.id} is no longer this instance's.`);
        const written = staged && (await insertStaged(tx, staged.staged, from, to, job.startedAt, job.onExisting));
        const counts = { bytes: reach, rows, imported: 0, updated: 0 };
        const also: SkippedRow[] = [];
        written?.outcomes.forEach((outcome, i) => {
          if (outcome === 'inserted') counts.imported++;
          else if (outcome === 'updated') counts.updated++;
          else {
            const { email } = staged!.staged.records[from + i]!;
            also.push({ line: staged!.lines[from + i]!, email, reason: outcome === 'repeated' ? repeatedReason(email) : duplicateReason(email) });
          }
        });
        const last = deps.jobs.recordProgress(tx, job.seq, counts, also.length > 0 ? [...skipped, ...also] : skipped);
        return { value: written, last };
      }),
    );
    bytes = reach;
    if (takesEnd) finished = true;
    for (const batch of batches.splice(0, done)) {
      if (batch === current?.batch) current = undefined;
      parsed.consumed(); // room for one more batch ahead
    }
    taken = target && to < target.records.length ? to : 0;
    if (result) {
      for (const id of result.stored) seen?.add(id);
      chunkRows = nextChunkRows(chunkRows, to - from, performance.now() - result.insertedFrom);
      await deps.feed.catchUp();
    }
  };

  try {
    reserved = await deps.engine.reserve();
    const conn = reserved.sql;
    await openStaging(conn);
    let end: { bytes: number; broken?: SkippedRow } | undefined;
    for (;;) {
      for (let message = parsed.take(); message; message = parsed.take()) {
        if (message.type === 'end') end = message;
        else batches.push(message);
      }
      if (end && batches.length === 0) {
        if (!finished) await commit(conn, end);
        return end.broken ? 'failed' : 'completed';
      }
      if (deps.stopping()) return 'stopped';
      if (batches.length === 0) {
        await parsed.more();
        continue;
      }
      await commit(conn, end);
    }
  } catch (error) {
    if (error instanceof JobGone) return 'gone';
    reserved?.failed(error); // a lost connection is not used again, even before its close
    throw error;
  } finally {
    parsed.close();
    // The pooled connection goes back without the job's rows (a lost one is the pool's already, without them).
    if (reserved && !reserved.lost) {
      await closeStaging(reserved.sql).catch(() => {});
      reserved.release();
    }
  }
}

/** Returns the records of the next chunk: as many as held the lock LOCK_TARGET_MS by the last chunk's pace, smoothed. */
function nextChunkRows(current: number, written: number, lockedMs: number): number {
  // A small chunk (the rest of a batch) says little about the pace: a commit costs the same whatever its size.
  if (written < Math.min(current, MIN_CHUNK_ROWS)) return current;
  const paced = (written * LOCK_TARGET_MS) / Math.max(lockedMs, 1);
  return Math.round(Math.min(MAX_CHUNK_ROWS, Math.max(MIN_CHUNK_ROWS, (current + paced) / 2)));
}

/**
 * Runs `work` in a transaction on the job's connection (READ COMMITTED, as engine.write's); rolls back what throws.
 * The last statement of `work`, sent but not awaited, is pipelined with the COMMIT: one round trip fewer while a chunk
 * holds the customer writes' turn. (Should it fail, PostgreSQL answers that COMMIT with a rollback.)
 */
async function inTransaction<T>(conn: PgSql, work: (tx: PgSql) => Promise<{ value: T; last: Promise<unknown> }>): Promise<T> {
  await conn`BEGIN`;
  try {
    const { value, last } = await work(conn);
    await Promise.all([last, conn`COMMIT`]);
    return value;
  } catch (error) {
    // On a lost connection the server has rolled back (and a statement sent on it would throw CONNECTION_CLOSED, or
    // with a server's shutdown notice, be written as it closes).
    if (!isConnectionLost(error)) await conn`ROLLBACK`.catch(() => {});
    throw error;
  }
}

/** Runs `work`, again after a serialization failure or a deadlock (its transaction undone), up to ATTEMPTS times. */
async function attempt<T>(work: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await work();
    } catch (error) {
      if (tries >= ATTEMPTS || !RETRIED.has((error as { code?: string }).code ?? '')) throw error;
    }
  }
}
