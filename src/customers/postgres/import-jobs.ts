// CSV import jobs on PostgreSQL: the same ImportJobs as on SQLite (../imports/jobs.ts reads the upload to disk and
// answers the reads), run by the runner here: jobs one at a time in arrival order (import-run.ts writes each in
// chunks), each ended in a transaction that also awaits `onFinish` (the webhook outbox), and at start the jobs a
// stopped process left `running` marked `interrupted`. `close` lets the running chunk commit, then stops.
//
// One instance runs the jobs it accepted, as on SQLite: their uploads are on its disk. With several instances (the
// next issue) the runs will belong to the instance that leads 'import-runner' (engine.leadership.tryLead), taking
// jobs from import_jobs rather than from this process's queue, with uploads somewhere every instance reads; marking
// jobs interrupted then becomes that leader taking over the jobs of a runner that is gone. Until then, starting a
// second instance would mark the first one's running jobs interrupted: run one instance per database.
import { mkdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { PostgresEngine } from '../../db/pg-engine.ts';
import type { JobToRun } from '../imports/job-store.ts';
import { createImportJobs, type ImportJobs, type ImportJobsOptions, type JobQueue } from '../imports/jobs.ts';
import type { CustomerRepository } from '../store/repository.ts';
import { runPgCsvJob, type PgJobEnd } from './import-run.ts';
import { createPgImportJobStore, type PgJobFinish } from './job-store.ts';

/** How the service runs CSV import jobs on PostgreSQL: as on SQLite, but `onFinish` is awaited in the job's end. */
export interface PgImportJobsOptions extends Omit<ImportJobsOptions, 'onFinish'> {
  /**
   * Awaited inside the transaction that ends a job, with the job as it ended and that transaction: what it writes
   * (through `engine.write`, which joins it, or on `tx`) commits with the job's end or not at all (the webhook outbox).
   */
  onFinish?: PgJobFinish;
}

/** The import jobs on PostgreSQL, and how the service stops them. */
export interface PgImportJobs extends ImportJobs {
  /** Settles once the jobs a stopped process left `running` are marked `interrupted`: the service listens after. */
  readonly ready: Promise<void>;
  /**
   * Stops running jobs: the running one stops once its chunk has committed, and it and the jobs waiting are marked
   * `interrupted` (what was committed stays, counted). New uploads are refused meanwhile. Resolves once done.
   */
  close(): Promise<void>;
}

/**
 * Returns the CSV import jobs on PostgreSQL, started: `options.folder` is emptied and the jobs a stopped process left
 * `running` are marked `interrupted`. `store.emailsStored` serves the previews; `feed` catches up after every chunk.
 */
export function createPgImportJobs(engine: PostgresEngine, store: CustomerRepository, feed: { catchUp(): Promise<void> }, options: PgImportJobsOptions): PgImportJobs {
  const { folder, clock, onEnd, onFinish } = options;
  const jobs = createPgImportJobStore(engine);
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  const ready = jobs.interruptRunning(clock()).then(() => {});
  // Awaited by every `addJob`, which reports a failure; handled here so that none is reported as unhandled before.
  ready.catch(() => {});
  const waiting: JobToRun[] = [];
  /** The job running and the promise of its run (its end marked), if any. */
  let running: { job: JobToRun; done: Promise<void> } | undefined;
  let closing = false;
  const uploadPath = (id: string) => join(folder, `${id}.csv`);

  /** Runs the job, then marks it ended (unless stopped), removes its upload and tells `onEnd`. */
  const run = async (job: JobToRun): Promise<void> => {
    const status: PgJobEnd = await runPgCsvJob(job, uploadPath(job.id), { engine, jobs, feed, stopping: () => closing }).catch(() => 'failed' as const);
    if (status === 'stopped') return; // `close` marks it interrupted
    const ended = await jobs.finishJob(job, status, clock(), onFinish);
    // Off the event loop, as on SQLite: unlinking a large file held it for a while.
    void rm(uploadPath(job.id), { force: true }).catch(() => {});
    onEnd?.(ended);
  };

  const runNext = (): void => {
    if (running || closing) return;
    const job = waiting.shift();
    if (!job) return;
    const done = run(job).then(
      () => {
        running = undefined;
        runNext();
      },
      // A job that cannot be marked ended would be shown `running` while later jobs run: the process stops instead,
      // as on SQLite, and the next start marks the job interrupted.
      (error: unknown) =>
        process.nextTick(() => {
          throw error;
        }),
    );
    running = { job, done };
  };

  const queue: JobQueue = {
    uploadPath,
    async addJob(job) {
      if (closing) throw new Error('The import jobs are stopping.');
      await ready;
      const now = clock();
      const { job: stored, seq } = await jobs.insertJob(job, now);
      // Closed while it was being stored: it will not run.
      if (closing) {
        await jobs.interruptJobs([seq], clock());
        return stored;
      }
      waiting.push({ seq, id: job.id, columns: job.columns, onExisting: job.onExisting, startedAt: now.getTime() });
      runNext();
      return stored;
    },
    jobs,
  };

  return {
    ready,
    ...createImportJobs(queue, (emails) => store.emailsStored(emails), options),
    async close() {
      closing = true;
      const stopped = running?.job;
      await running?.done;
      const left = [...(stopped ? [stopped] : []), ...waiting.splice(0)];
      await jobs.interruptJobs(
        left.map((job) => job.seq),
        clock(),
      );
    },
  };
}
