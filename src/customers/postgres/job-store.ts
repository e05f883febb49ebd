// CSV import jobs and their skipped rows on PostgreSQL: the same contract as ../imports/job-store.ts. A job's counts
// and skipped rows move in the transaction of the chunk of rows they count (`recordProgress`, given that
// transaction); its end is marked in a transaction that also awaits `onFinish` (the webhook outbox), as a campaign's
// move awaits its hook (src/db/postgres/campaigns.ts). Reads run on the pool, outside any transaction.
//
// Several instances share the table: a job names the instance that accepted it (`instance_id`: its upload is on that
// instance's disk, so that instance runs it), and jobs run one at a time in `seq` order across them all (a job runs
// once no job before it is `running`). Every statement that ends a job or moves its counts is conditional on the job
// being still `running` and, for its owner, still its own: a job whose instance's lease has ended is marked
// `interrupted` by whichever instance notices first, exactly once, and its owner (cut off for longer than its lease,
// back since) writes no more of it. Each end is told on QUEUE_CHANNEL, in the transaction that ends the job, so the
// instance whose job is next starts it at once.
import { AppError } from '../../domain/errors.ts';
import type { PgSql, PostgresEngine } from '../../db/pg-engine.ts';
import { SKIPPED_PAGE, toJob, type ImportJob, type ImportJobStore, type JobRow, type SkippedRow } from '../imports/job-store.ts';

/** Awaited inside the transaction that ends a job, with the job as it ended and that transaction. */
export type PgJobFinish = (job: ImportJob, tx: PgSql) => Promise<void>;

/** The channel told (payload: the job's seq) whenever a job stops being `running`: the next one may start. */
export const QUEUE_CHANNEL = 'import_jobs_ended';

/**
 * Serializes the insertion of jobs (pg_advisory_xact_lock's one-key form, apart from the two-key locks of the rest of
 * the service): `seq` is taken under it, so jobs commit in `seq` order and no job committed later can come before
 * one an instance has already seen as the oldest running (two jobs would otherwise run at once).
 */
const ARRIVAL_LOCK = 'campaigns import_jobs arrival';

/** What one chunk of a job adds to its counts: where it has read to, and its rows, new customers and updated ones. */
export interface JobCounts {
  bytes: number;
  rows: number;
  imported: number;
  updated: number;
}

/** The oldest `running` job: the one the deployment runs now (or is about to). */
export interface QueueHead {
  seq: number;
  /** The instance that accepted it (null for a job moved from SQLite or stored before instances were named). */
  instanceId: string | null;
}

/** The import jobs table on PostgreSQL, as one instance (`instanceId`) sees it. */
export interface PgImportJobStore extends Omit<ImportJobStore, 'finishJob' | 'interruptRunning'> {
  /**
   * Marks this instance's running job `completed` or `failed` and resolves to it as it ended, `onFinish` awaited in
   * the same transaction (what it writes commits with the job's end or not at all). Resolves to undefined, calling
   * nothing, when the job is no longer this instance's running job (another instance marked it `interrupted`).
   */
  finishJob(job: { seq: number; id: string }, status: 'completed' | 'failed', now: Date, onFinish?: PgJobFinish): Promise<ImportJob | undefined>;
  /** Marks these jobs of this instance `interrupted` if they are still `running` (it stops before their end). */
  interruptJobs(seqs: readonly number[], now: Date): Promise<void>;
  /**
   * Marks `interrupted` (with their committed counts) the running jobs of other instances whose lease has ended, or
   * that name none; resolves to their ids. Conditional: each is marked once, by whichever instance gets there first.
   */
  interruptGone(now: Date): Promise<string[]>;
  /** Resolves to the oldest `running` job, if any. */
  queueHead(): Promise<QueueHead | undefined>;
  /**
   * Resolves, for each of these ids that is a job, to whether its upload is still needed: it is `running` on an
   * instance whose lease runs. (An id that is no job is an upload still arriving, or one whose arrival was cut.)
   */
  uploadsNeeded(ids: readonly string[]): Promise<Map<string, boolean>>;
  /**
   * In a chunk's transaction `tx`, before its rows: locks the job's row and resolves to whether it is still this
   * instance's running job. Held to the commit, the lock makes an instance marking the job `interrupted` wait for the
   * chunk, so the counts it leaves include the chunk; false: the caller rolls back and stops writing the job.
   */
  claimChunk(tx: PgSql, seq: number): Promise<boolean>;
  /** Adds a chunk's rows to the job's counts and its skipped rows to its failures, in the chunk's transaction `tx`. */
  recordProgress(tx: PgSql, seq: number, counts: JobCounts, skipped: readonly SkippedRow[]): Promise<void>;
}

const notFound = (id: string) => new AppError('not_found', `No import job with id ${id}.`);

/** Returns the job statements on the PostgreSQL engine, for the instance `instanceId` (registered in service_instances). */
export function createPgImportJobStore(engine: PostgresEngine, instanceId: string): PgImportJobStore {
  const { sql } = engine;

  const getRow = async (db: PgSql, id: string): Promise<JobRow> => {
    const [row] = await db<JobRow[]>`SELECT * FROM import_jobs WHERE id = ${id}`;
    if (!row) throw notFound(id);
    return row;
  };

  /** Tells every instance that these jobs have stopped running, with the transaction under way. */
  const tellEnded = (seqs: readonly number[]) => {
    for (const seq of seqs) engine.notify(QUEUE_CHANNEL, String(seq));
  };

  return {
    insertJob(job, now) {
      return engine.write(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(hashtext(${ARRIVAL_LOCK}))`;
        const [row] = await tx<JobRow[]>`
          INSERT INTO import_jobs (id, status, file_name, columns, ignored_columns, on_existing, created_by, started_at, instance_id)
          VALUES (${job.id}, 'running', ${job.fileName ?? null}, ${JSON.stringify(job.columns)}, ${JSON.stringify(job.ignored)},
                  ${job.onExisting}, ${job.createdBy}, ${now.getTime()}, ${instanceId})
          RETURNING *`;
        return { job: toJob(row!), seq: row!.seq };
      });
    },

    async getJob(id) {
      return toJob(await getRow(sql, id));
    },

    async listJobs(pageNumber, limit) {
      // One snapshot for the page and its total, as SQLite's single connection gives.
      return engine.read(async (tx) => {
        const rows = await tx<JobRow[]>`SELECT * FROM import_jobs ORDER BY seq DESC LIMIT ${limit} OFFSET ${(pageNumber - 1) * limit}`;
        const [counted] = await tx<{ total: number }[]>`SELECT count(*) AS total FROM import_jobs`;
        return { items: rows.map(toJob), total: counted!.total };
      });
    },

    finishJob({ seq, id }, status, now, onFinish) {
      return engine.write(async (tx) => {
        const ended = await tx`
          UPDATE import_jobs SET status = ${status}, finished_at = ${now.getTime()}
          WHERE seq = ${seq} AND status = 'running' AND instance_id = ${instanceId}`;
        if (ended.count === 0) return undefined;
        tellEnded([seq]);
        const job = toJob(await getRow(tx, id));
        await onFinish?.(job, tx);
        return job;
      });
    },

    async interruptJobs(seqs, now) {
      if (seqs.length === 0) return;
      await engine.write(async (tx) => {
        const rows = await tx<{ seq: number }[]>`
          UPDATE import_jobs SET status = 'interrupted', finished_at = ${now.getTime()}
          WHERE seq = ANY(${seqs as number[]}::bigint[]) AND status = 'running' AND instance_id = ${instanceId}
          RETURNING seq`;
        tellEnded(rows.map((row) => row.seq));
      });
    },

    interruptGone(now) {
      // READ COMMITTED: an instance running the same UPDATE at once waits for this one's commit, then finds the row
      // no longer `running` and leaves it; a chunk under way (claimChunk's lock) commits first, counted. Never this
      // instance's own jobs: running this, it is alive, if late with its heartbeat (its event loop held up); the
      // others judge it.
      return engine.write(async (tx) => {
        const rows = await tx<{ seq: number; id: string }[]>`
          UPDATE import_jobs SET status = 'interrupted', finished_at = ${now.getTime()}
          WHERE status = 'running' AND instance_id IS DISTINCT FROM ${instanceId}
            AND (instance_id IS NULL OR NOT campaigns_instance_alive(instance_id))
          RETURNING seq, id`;
        tellEnded(rows.map((row) => row.seq));
        return rows.map((row) => row.id);
      });
    },

    async queueHead() {
      const [row] = await sql<{ seq: number; instance_id: string | null }[]>`
        SELECT seq, instance_id FROM import_jobs WHERE status = 'running' ORDER BY seq LIMIT 1`;
      return row && { seq: row.seq, instanceId: row.instance_id };
    },

    async uploadsNeeded(ids) {
      if (ids.length === 0) return new Map();
      const rows = await sql<{ id: string; needed: boolean }[]>`
        SELECT id, status = 'running' AND campaigns_instance_alive(instance_id) AS needed FROM import_jobs WHERE id = ANY(${ids as string[]}::text[])`;
      return new Map(rows.map((row) => [row.id, row.needed]));
    },

    async claimChunk(tx, seq) {
      // FOR NO KEY UPDATE: what an UPDATE of the counts or the status takes; the failures' foreign key takes less.
      const rows = await tx`
        SELECT 1 FROM import_jobs WHERE seq = ${seq} AND status = 'running' AND instance_id = ${instanceId} FOR NO KEY UPDATE`;
      return rows.length > 0;
    },

    async recordProgress(tx, seq, { bytes, rows, imported, updated }, skipped) {
      // One statement (one round trip while the chunk holds the customer writes' turn). ON CONFLICT DO NOTHING: as
      // SQLite's INSERT OR IGNORE, a line is reported once.
      await tx`
        WITH failed AS (
          INSERT INTO import_failures (job_seq, line, email, reason)
          SELECT ${seq}, * FROM unnest(${skipped.map((s) => s.line)}::bigint[], ${skipped.map((s) => s.email)}::text[], ${skipped.map((s) => s.reason)}::text[])
          ON CONFLICT DO NOTHING
        )
        UPDATE import_jobs SET bytes_read = ${bytes}, rows_read = rows_read + ${rows}, imported = imported + ${imported},
          updated = updated + ${updated}, skipped = skipped + ${skipped.length}
        WHERE seq = ${seq}`;
    },

    async skippedRows(id) {
      const { seq } = await getRow(sql, id);
      return (async function* () {
        for (let after = 0; ; ) {
          const rows = await sql<SkippedRow[]>`
            SELECT line, email, reason FROM import_failures WHERE job_seq = ${seq} AND line > ${after} ORDER BY line LIMIT ${SKIPPED_PAGE}`;
          if (rows.length > 0) yield [...rows];
          if (rows.length < SKIPPED_PAGE) return;
          after = rows.at(-1)!.line;
        }
      })();
    },
  };
}

