// CSV import jobs and their skipped rows on PostgreSQL: the same contract as ../imports/job-store.ts. A job's counts
// and skipped rows move in the transaction of the chunk of rows they count (`recordProgress`, given that
// transaction); its end is marked in a transaction that also awaits `onFinish` (the webhook outbox), as a campaign's
// move awaits its hook (src/db/postgres/campaigns.ts). Reads run on the pool, outside any transaction.
import { AppError } from '../../domain/errors.ts';
import type { PgSql, PostgresEngine } from '../../db/pg-engine.ts';
import { SKIPPED_PAGE, toJob, type ImportJob, type ImportJobStore, type JobRow, type SkippedRow } from '../imports/job-store.ts';

/** Awaited inside the transaction that ends a job, with the job as it ended and that transaction. */
export type PgJobFinish = (job: ImportJob, tx: PgSql) => Promise<void>;

/** What one chunk of a job adds to its counts: where it has read to, and its rows, new customers and updated ones. */
export interface JobCounts {
  bytes: number;
  rows: number;
  imported: number;
  updated: number;
}

/** The import jobs table on PostgreSQL. */
export interface PgImportJobStore extends Omit<ImportJobStore, 'finishJob'> {
  /**
   * Marks a running job `completed` or `failed` and resolves to it as it ended; `onFinish` is awaited inside the same
   * transaction (what it writes commits with the job's end or not at all).
   */
  finishJob(job: { seq: number; id: string }, status: 'completed' | 'failed', now: Date, onFinish?: PgJobFinish): Promise<ImportJob>;
  /** Marks these jobs `interrupted` if they are still `running` (this instance stops before running them to their end). */
  interruptJobs(seqs: readonly number[], now: Date): Promise<void>;
  /** Adds a chunk's rows to the job's counts and its skipped rows to its failures, in the chunk's transaction `tx`. */
  recordProgress(tx: PgSql, seq: number, counts: JobCounts, skipped: readonly SkippedRow[]): Promise<void>;
}

const notFound = (id: string) => new AppError('not_found', `No import job with id ${id}.`);

/** Returns the job statements on the PostgreSQL engine. */
export function createPgImportJobStore(engine: PostgresEngine): PgImportJobStore {
  const { sql } = engine;

  const getRow = async (db: PgSql, id: string): Promise<JobRow> => {
    const [row] = await db<JobRow[]>`SELECT * FROM import_jobs WHERE id = ${id}`;
    if (!row) throw notFound(id);
    return row;
  };

  return {
    insertJob(job, now) {
      return engine.write(async (tx) => {
        const [row] = await tx<JobRow[]>`
          INSERT INTO import_jobs (id, status, file_name, columns, ignored_columns, on_existing, created_by, started_at)
          VALUES (${job.id}, 'running', ${job.fileName ?? null}, ${JSON.stringify(job.columns)}, ${JSON.stringify(job.ignored)},
                  ${job.onExisting}, ${job.createdBy}, ${now.getTime()})
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
        await tx`UPDATE import_jobs SET status = ${status}, finished_at = ${now.getTime()} WHERE seq = ${seq} AND status = 'running'`;
        const ended = toJob(await getRow(tx, id));
        await onFinish?.(ended, tx);
        return ended;
      });
    },

    async interruptRunning(now) {
      const done = await engine.write((tx) => tx`UPDATE import_jobs SET status = 'interrupted', finished_at = ${now.getTime()} WHERE status = 'running'`);
      return done.count;
    },

    async interruptJobs(seqs, now) {
      if (seqs.length === 0) return;
      await engine.write(
        (tx) => tx`UPDATE import_jobs SET status = 'interrupted', finished_at = ${now.getTime()} WHERE seq = ANY(${seqs as number[]}::bigint[]) AND status = 'running'`,
      );
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

