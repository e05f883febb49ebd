// SQL for CSV import jobs and their skipped rows. The service's connection creates, lists and finishes jobs (its writes
// through the engine, so they take their turn with the import writer); the import writer's connection moves their
// counts in the same transaction as the rows they count. Knows no HTTP.
import { AppError } from '../../domain/errors.ts';
import type { Db } from '../../db/database.ts';
import type { SqliteEngine } from '../../db/engine.ts';
import type { OnExisting } from '../store/writes.ts';
import type { ImportJobStatus } from '../../domain/imports.ts';
import type { ColumnMap } from './csv-columns.ts';

/** A job as the API shows it; `fileName` and `finishedAt` only when there are. */
export interface ImportJob {
  id: string;
  status: ImportJobStatus;
  fileName?: string;
  bytesRead: number;
  rowsRead: number;
  imported: number;
  updated: number;
  skipped: number;
  onExisting: OnExisting;
  ignoredColumns: string[];
  startedAt: string;
  finishedAt?: string;
  createdBy: string;
}

/** What a job needs to run: its row number, file, columns, what to do with stored emails, and the instant that stamps its rows. */
export interface JobToRun {
  seq: number;
  id: string;
  columns: ColumnMap;
  onExisting: OnExisting;
  startedAt: number;
}

/** One skipped row: its line in the file, its email as given (if any) and why. */
export interface SkippedRow {
  line: number;
  email: string | null;
  reason: string;
}

/** An import_jobs row as both engines read it (PostgreSQL's BIGINTs come back as numbers). */
export interface JobRow {
  seq: number;
  id: string;
  status: ImportJobStatus;
  file_name: string | null;
  columns: string;
  ignored_columns: string;
  bytes_read: number;
  rows_read: number;
  imported: number;
  updated: number;
  skipped: number;
  on_existing: OnExisting;
  created_by: string;
  started_at: number;
  finished_at: number | null;
}

/** Returns a stored job as the API shows it. */
export function toJob(row: JobRow): ImportJob {
  return {
    id: row.id,
    status: row.status,
    ...(row.file_name === null ? {} : { fileName: row.file_name }),
    bytesRead: row.bytes_read,
    rowsRead: row.rows_read,
    imported: row.imported,
    updated: row.updated,
    skipped: row.skipped,
    onExisting: row.on_existing,
    ignoredColumns: JSON.parse(row.ignored_columns) as string[],
    startedAt: new Date(row.started_at).toISOString(),
    ...(row.finished_at === null ? {} : { finishedAt: new Date(row.finished_at).toISOString() }),
    createdBy: row.created_by,
  };
}

/** Skipped rows read per query of failures.csv. */
export const SKIPPED_PAGE = 1000;

/** The import jobs table as the service sees it: every function asynchronous, as on every engine. */
export interface ImportJobStore {
  /** Stores a new job, `running` until it ends; resolves to it and its place in the arrival order. */
  insertJob(job: NewJob, now: Date): Promise<{ job: ImportJob; seq: number }>;
  /** Resolves to the job; rejects with `not_found`. */
  getJob(id: string): Promise<ImportJob>;
  /** Resolves to one page of jobs, newest first, and how many there are. */
  listJobs(pageNumber: number, limit: number): Promise<{ items: ImportJob[]; total: number }>;
  /**
   * Marks a running job `completed` or `failed` and resolves to it as it ended; `onFinish` runs inside the same
   * transaction (what it writes commits with the job's end or not at all), synchronously.
   */
  finishJob(job: { seq: number; id: string }, status: 'completed' | 'failed', now: Date, onFinish?: (job: ImportJob) => void): Promise<ImportJob>;
  /** Marks every job still `running` as `interrupted` (the process that ran it is gone); resolves to how many. */
  interruptRunning(now: Date): Promise<number>;
  /**
   * Resolves, once the job is found (else rejects with `not_found`), to its skipped rows in line order, read a page
   * at a time as they are iterated (no statement stays open between pages, so other requests are served meanwhile).
   */
  skippedRows(id: string): Promise<AsyncIterable<SkippedRow[]>>;
}

/** What a new job is stored with. */
export interface NewJob {
  id: string;
  fileName: string | undefined;
  columns: ColumnMap;
  ignored: string[];
  onExisting: OnExisting;
  createdBy: string;
}

/** Returns the job queries of the service's connection, prepared once; its writes take their turn (engine.write). */
export function createImportJobStore(engine: SqliteEngine): ImportJobStore {
  const { db } = engine;
  const insert = db.prepare(
    `INSERT INTO import_jobs (id, status, file_name, columns, ignored_columns, on_existing, created_by, started_at)
     VALUES (@id, 'running', @fileName, @columns, @ignored, @onExisting, @createdBy, @now)`,
  );
  const byId = db.prepare<[string], JobRow>('SELECT * FROM import_jobs WHERE id = ?');
  const page = db.prepare<[number, number], JobRow>('SELECT * FROM import_jobs ORDER BY seq DESC LIMIT ? OFFSET ?');
  const count = db.prepare('SELECT count(*) FROM import_jobs').pluck();
  const finish = db.prepare("UPDATE import_jobs SET status = @status, finished_at = @now WHERE seq = @seq AND status = 'running'");
  const interrupt = db.prepare("UPDATE import_jobs SET status = 'interrupted', finished_at = ? WHERE status = 'running'");
  const failures = db.prepare<[number, number, number], SkippedRow>(
    'SELECT line, email, reason FROM import_failures WHERE job_seq = ? AND line > ? ORDER BY line LIMIT ?',
  );

  const getRow = (id: string): JobRow => {
    const row = byId.get(id);
    if (!row) throw new AppError('not_found', `No import job with id ${id}.`);
    return row;
  };

  return {
    insertJob(job, now) {
      return engine.write(() => {
        insert.run({ ...job, fileName: job.fileName ?? null, columns: JSON.stringify(job.columns), ignored: JSON.stringify(job.ignored), now: now.getTime() });
        const row = getRow(job.id);
        return { job: toJob(row), seq: row.seq };
      });
    },

    async getJob(id) {
      return toJob(getRow(id));
    },

    async listJobs(pageNumber, limit) {
      return { items: page.all(limit, (pageNumber - 1) * limit).map(toJob), total: count.get() as number };
    },

    finishJob({ seq, id }, status, now, onFinish) {
      return engine.write(() => {
        finish.run({ seq, status, now: now.getTime() });
        const ended = toJob(getRow(id));
        onFinish?.(ended);
        return ended;
      });
    },

    interruptRunning(now) {
      return engine.write(() => interrupt.run(now.getTime()).changes);
    },

    async skippedRows(id) {
      const { seq } = getRow(id);
      return (async function* () {
        for (let after = 0; ; ) {
          const rows = failures.all(seq, after, SKIPPED_PAGE);
          if (rows.length > 0) yield rows;
          if (rows.length < SKIPPED_PAGE) return;
          after = rows.at(-1)!.line;
        }
      })();
    },
  };
}

/**
 * Returns the statements a job's counts and skipped rows move with, inside the transactions that write its rows: on
 * the import writer's connection (or, for an in-memory database, which has no second connection, the service's).
 */
export function jobProgressWriter(db: Db) {
  const progress = db.prepare(
    `UPDATE import_jobs SET bytes_read = @bytes, rows_read = rows_read + @rows, imported = imported + @imported, updated = updated + @updated,
       skipped = skipped + @skipped
     WHERE seq = @seq`,
  );
  const skip = db.prepare('INSERT OR IGNORE INTO import_failures (job_seq, line, email, reason) VALUES (?, ?, ?, ?)');
  return {
    /** Adds one transaction's rows to the job's counts, and its skipped rows to its failures. */
    record(seq: number, counts: { bytes: number; rows: number; imported: number; updated: number }, skipped: readonly SkippedRow[]): void {
      for (const row of skipped) skip.run(seq, row.line, row.email, row.reason);
      progress.run({ seq, ...counts, skipped: skipped.length });
    },
  };
}
