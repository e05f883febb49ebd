// The one owner of imports, after listmonk's importer `Session`: the import writer and its checkpointer (their threads,
// imports.ts), the JSON imports handed to it, and the runs of CSV import jobs: their queue, the one running, its end
// (the job's row marked in the transaction that also runs `onFinish`, its upload removed), and, when the service
// starts, the jobs a stopped process left running. Composed by src/customers/index.ts; knows no HTTP.
import { mkdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../../domain/clock.ts';
import type { CustomerRecord } from '../../domain/customers.ts';
import type { SqliteEngine } from '../../db/engine.ts';
import type { ChangeSource } from '../change-feed.ts';
import type { CustomerWrites, OnExisting } from '../store/writes.ts';
import { createImportWriter, type ImportedRow, type ImportWriter, type JobEnd } from './imports.ts';
import { createImportJobStore, type ImportJob, type ImportJobStore, type JobToRun, type NewJob } from './job-store.ts';

/** How the service runs CSV import jobs. */
export interface JobRunOptions {
  /** Where uploads wait for their job; emptied when the runs start. */
  folder: string;
  clock: Clock;
  /** Told when a job has ended, with the job as it ended. */
  onEnd?: (job: ImportJob) => void;
  /**
   * Called inside the transaction that ends a job, with the job as it ended: what it writes commits with the job's
   * end or not at all (the webhook outbox). It must not await.
   */
  onFinish?: (job: ImportJob) => void;
}

/** The runs of CSV jobs once the service has started them. */
interface Runs {
  options: JobRunOptions;
  /** Settles once the jobs a stopped process left running are marked `interrupted`: no new job is stored before. */
  ready: Promise<void>;
  waiting: JobToRun[];
  running: boolean;
}

/** Owns the import writer and the runs of CSV import jobs on it. */
export class ImportRunner {
  /** The import jobs table: the runner writes the jobs' starts and ends, jobs.ts reads them for the API. */
  readonly jobs: ImportJobStore;
  private readonly writer: ImportWriter;
  private runs: Runs | undefined;

  /** Nothing starts yet: the writer's threads start with the first import, the runs with `startJobs`. */
  constructor(engine: SqliteEngine, writes: CustomerWrites, feed: ChangeSource, { cacheMiB = 32 } = {}) {
    this.writer = createImportWriter(engine, writes, feed, cacheMiB);
    this.jobs = createImportJobStore(engine);
  }

  /**
   * Stores the records in one transaction on the import writer, possibly shared with other imports that arrive
   * meanwhile; a stored email is left as it is (`skip`: null) or has its fields replaced (`update`). Resolves to
   * each record's customer id and whether it was an update.
   */
  importLater(records: readonly CustomerRecord[], now: Date, onExisting: OnExisting = 'skip'): Promise<ImportedRow[]> {
    return this.writer.importLater(records, now, onExisting);
  }

  /**
   * Starts running CSV jobs; only the service does, once. The jobs a stopped process left `running` are marked
   * `interrupted` (their committed rows and counts stay) and their uploads removed.
   */
  startJobs(options: JobRunOptions): void {
    if (this.runs) throw new Error('The import jobs have been started already.');
    rmSync(options.folder, { recursive: true, force: true });
    mkdirSync(options.folder, { recursive: true });
    // With several instances (PostgreSQL), the jobs will run on the instance that leads 'import-runner'
    // (engine.leadership.tryLead), taken from import_jobs rather than from this process's queue, and marking jobs
    // interrupted becomes that leader taking over the jobs of a runner that is gone. One process runs them today.
    const ready = this.jobs.interruptRunning(options.clock()).then(() => {});
    // Awaited by every `addJob`, which reports a failure; handled here so that none is reported as unhandled before.
    ready.catch(() => {});
    this.runs = { options, ready, waiting: [], running: false };
  }

  /** Where the upload of job `id` is written before `addJob` queues it. */
  uploadPath(id: string): string {
    return join(this.started().options.folder, `${id}.csv`);
  }

  /**
   * Stores a job whose upload is at `uploadPath(job.id)` and queues it; jobs run one at a time in arrival order.
   * Resolves to the job, `running` until it ends.
   */
  async addJob(job: NewJob): Promise<ImportJob> {
    const runs = this.started();
    await runs.ready;
    const now = runs.options.clock();
    const { job: stored, seq } = await this.jobs.insertJob(job, now);
    runs.waiting.push({ seq, id: job.id, columns: job.columns, onExisting: job.onExisting, startedAt: now.getTime() });
    this.runNext();
    return stored;
  }

  private started(): Runs {
    if (!this.runs) throw new Error('The import jobs have not been started (ImportRunner.startJobs).');
    return this.runs;
  }

  private runNext(): void {
    const runs = this.started();
    const job = runs.running ? undefined : runs.waiting.shift();
    if (!job) return;
    runs.running = true;
    this.writer.runJob(job, this.uploadPath(job.id), (status) => {
      // A job that cannot be marked ended would be shown `running` while later jobs run: the process stops instead,
      // as it did when this was synchronous, and the next start marks the job interrupted.
      this.endJob(job, status).catch((error: unknown) =>
        process.nextTick(() => {
          throw error;
        }),
      );
    });
  }

  /** Marks the job ended (with `onFinish` in that transaction), removes its upload, tells `onEnd`, runs the next. */
  private async endJob(job: JobToRun, status: JobEnd): Promise<void> {
    const runs = this.started();
    const { clock, onEnd, onFinish } = runs.options;
    const ended = await this.jobs.finishJob(job, status, clock(), onFinish);
    // Off the event loop: unlinking a file of 87 MB held it for 158 ms.
    void rm(this.uploadPath(job.id), { force: true }).catch(() => {});
    runs.running = false;
    onEnd?.(ended);
    this.runNext();
  }
}
