// CSV import jobs on PostgreSQL: the same ImportJobs as on SQLite (../imports/jobs.ts reads the upload to disk and
// answers the reads), run by the runner here, one job at a time in arrival order across every instance on the
// database (import-run.ts writes each in chunks), each ended in a transaction that also awaits `onFinish` (the
// webhook outbox). `close` lets the running chunk commit, then stops.
//
// Where a job runs (the decision for several instances): its upload stays on the disk of the instance that accepted
// it (import_jobs.instance_id), and that instance runs it; jobs still run one at a time in `seq` order across the
// deployment, so a job waits until no job before it is `running`, whichever instance holds it. An instance starts its
// next job when that job is the oldest running one: it looks when one of its jobs arrives, when a job ends anywhere
// (QUEUE_CHANNEL, told in the transaction that ends it) and every heartbeat (a lost notification, or an instance that
// died, cannot stall the queue). On each look it also marks `interrupted` the jobs of instances whose lease has ended
// (killed, or cut off from the database): within lease + heartbeat of a death, with the counts its committed chunks
// left, exactly once whoever looks (job-store.ts). Another instance cannot carry such a job on: the rest of its file
// is on the dead instance's disk; importing the same file again stores only the rest. As on SQLite, an interrupted
// job sends no `customers.import_completed` and no `onEnd`.
import { mkdirSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_INSTANCE_TIMES } from '../../config.ts';
import type { PostgresEngine } from '../../db/pg-engine.ts';
import { registerInstance } from '../../db/postgres/instances.ts';
import type { JobToRun } from '../imports/job-store.ts';
import { createImportJobs, type ImportJobs, type ImportJobsOptions, type JobQueue } from '../imports/jobs.ts';
import type { CustomerRepository } from '../store/repository.ts';
import { runPgCsvJob, type PgJobEnd } from './import-run.ts';
import { createPgImportJobStore, QUEUE_CHANNEL, type PgImportJobStore, type PgJobFinish } from './job-store.ts';

/** This process as an instance on the database (src/db/postgres/instances.ts), as the job runner needs it. */
export interface JobInstance {
  /** The owner the jobs it accepts name. */
  id: string;
  /** Settles once its lease is written: before, its jobs would look abandoned. */
  ready: Promise<void>;
  /** How often it looks at the queue when not told: the instances' heartbeat. */
  heartbeatMs: number;
}

/** How the service runs CSV import jobs on PostgreSQL: as on SQLite, but `onFinish` is awaited in the job's end. */
export interface PgImportJobsOptions extends Omit<ImportJobsOptions, 'onFinish'> {
  /**
   * Awaited inside the transaction that ends a job, with the job as it ended and that transaction: what it writes
   * (through `engine.write`, which joins it, or on `tx`) commits with the job's end or not at all (the webhook outbox).
   */
  onFinish?: PgJobFinish;
  /**
   * The instance the jobs run on (the service's). Without it (a test, the bench) the jobs register an instance of
   * their own, with the default lease, stopped by `close`.
   */
  instance?: JobInstance;
  /** Told of failures nobody awaits: a look at the queue, a job's end that could not be stored yet. */
  onError?: (error: unknown) => void;
}

/** The import jobs on PostgreSQL, and how the service stops them. */
export interface PgImportJobs extends ImportJobs {
  /** Settles once the instance's lease is written and the jobs of instances already gone are marked `interrupted`. */
  readonly ready: Promise<void>;
  /**
   * Stops running jobs: the running one stops once its chunk has committed, and it and this instance's jobs waiting
   * are marked `interrupted` (what was committed stays, counted). New uploads are refused meanwhile. Resolves once done.
   */
  close(): Promise<void>;
}

/** An upload no job names, untouched this long, was cut while arriving (its instance killed): removed at start. */
const ORPHAN_UPLOAD_MS = 3_600_000;

/**
 * Returns the CSV import jobs on PostgreSQL, started: `options.folder` keeps only the uploads of jobs still to run
 * (several instances on one machine share it), and the jobs of instances gone are marked `interrupted`.
 * `store.emailsStored` serves the previews; `feed` catches up after every chunk.
 */
export function createPgImportJobs(engine: PostgresEngine, store: CustomerRepository, feed: { catchUp(): Promise<void> }, options: PgImportJobsOptions): PgImportJobs {
  const { folder, clock, onEnd, onFinish, onError = () => {} } = options;
  // Without an instance (the bench, tests of the jobs alone), the jobs register one of their own with the defaults.
  const own = options.instance ? undefined : registerInstance(engine, { ...DEFAULT_INSTANCE_TIMES, onError });
  const instance: JobInstance = options.instance ?? { id: own!.id, ready: own!.ready, heartbeatMs: DEFAULT_INSTANCE_TIMES.heartbeatMs };
  const jobs = createPgImportJobStore(engine, instance.id);
  mkdirSync(folder, { recursive: true });
  const uploadPath = (id: string) => join(folder, `${id}.csv`);
  /** Removes uploads in the background (off the event loop, as on SQLite: unlinking a large file held it a while). */
  const removeUploads = (ids: readonly string[]) => {
    for (const id of ids) void rm(uploadPath(id), { force: true }).catch(() => {});
  };

  /** This instance's jobs accepted and not started, by seq. */
  const waiting = new Map<number, JobToRun>();
  /** Jobs being stored by `addJob` (committed perhaps, not yet in `waiting`): the queue head may be one of them. */
  let adding = 0;
  /** The job running here and the promise of its run (its end marked), if any. */
  let running: { job: JobToRun; done: Promise<void> } | undefined;
  let closing = false;
  /** Resolves the wait of a job's end that could not be stored, at the next look or at `close`. */
  let wake: (() => void) | undefined;

  /** Stores the job's end, again at each look while the database refuses; undefined: not stored (another marked it, or closing). */
  const endJob = async (job: JobToRun, status: 'completed' | 'failed') => {
    for (;;) {
      try {
        return await jobs.finishJob(job, status, clock(), onFinish);
      } catch (error) {
        // Later jobs wait meanwhile: this one is still the oldest running. At close, it is left to its lease.
        onError(error);
        if (closing) return undefined;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    }
  };

  /** Runs the job, then marks it ended (unless stopped, or marked by another instance), removes its upload, tells `onEnd`. */
  const run = async (job: JobToRun): Promise<void> => {
    const status: PgJobEnd = await runPgCsvJob(job, uploadPath(job.id), { engine, jobs, feed, stopping: () => closing }).catch(() => 'failed' as const);
    if (status === 'stopped') return; // `close` marks it interrupted
    const ended = status === 'gone' ? undefined : await endJob(job, status);
    removeUploads([job.id]);
    if (ended) onEnd?.(ended);
  };

  const start = (job: JobToRun): void => {
    waiting.delete(job.seq);
    const done = run(job)
      .catch(onError)
      .then(() => {
        running = undefined;
        if (!closing) look();
      });
    running = { job, done };
  };

  const looking = lookSerially(async () => {
    wake?.();
    wake = undefined;
    removeUploads(await jobs.interruptGone(clock()));
    if (running || closing) return;
    const known = [...waiting.values()]; // jobs added from here on may be newer than what the read below saw
    const head = await jobs.queueHead();
    if (closing || running) return;
    // Jobs of this instance before the oldest running one (all of them, when none runs) are no longer running:
    // another instance marked them while this one was cut off from the database.
    for (const { seq, id } of known) {
      if (head && seq >= head.seq) continue;
      waiting.delete(seq);
      removeUploads([id]);
    }
    if (head?.instanceId !== instance.id) return;
    const next = waiting.get(head.seq);
    if (next) start(next);
    // Ours, yet neither waiting here nor being added: its insert committed but its answer was lost (the request
    // failed, nobody has its upload). Left running it would hold the whole deployment's queue.
    else if (adding === 0) await jobs.interruptJobs([head.seq], clock());
  }, onError);
  const look = looking.look;

  let timer: NodeJS.Timeout | undefined;
  let unlisten: (() => void) | undefined;
  const ready = (async () => {
    await instance.ready;
    removeUploads(await jobs.interruptGone(clock()));
    await sweepUploads(folder, jobs);
    if (closing) return;
    unlisten = engine.listen(QUEUE_CHANNEL, look, look);
    timer = setInterval(look, instance.heartbeatMs).unref();
  })();
  // Awaited by every `addJob`, which reports a failure; handled here so that none is reported as unhandled before.
  ready.catch(() => {});

  const queue: JobQueue = {
    uploadPath,
    async addJob(job) {
      if (closing) throw new Error('The import jobs are stopping.');
      await ready;
      const now = clock();
      adding++;
      let inserted: Awaited<ReturnType<typeof jobs.insertJob>>;
      try {
        inserted = await jobs.insertJob(job, now);
      } finally {
        adding--;
      }
      const { job: stored, seq } = inserted;
      // Closed while it was being stored: it will not run.
      if (closing) {
        await jobs.interruptJobs([seq], clock());
        return stored;
      }
      waiting.set(seq, { seq, id: job.id, columns: job.columns, onExisting: job.onExisting, startedAt: now.getTime() });
      look();
      return stored;
    },
    jobs,
  };

  return {
    ready,
    ...createImportJobs(queue, (emails) => store.emailsStored(emails), options),
    async close() {
      closing = true;
      clearInterval(timer);
      unlisten?.();
      wake?.();
      await ready.catch(() => {});
      await looking.idle();
      const stopped = running?.job;
      await running?.done;
      const left = [...(stopped ? [stopped.seq] : []), ...waiting.keys()];
      waiting.clear();
      try {
        await jobs.interruptJobs(left, clock());
      } finally {
        await own?.stop();
      }
    },
  };
}

/**
 * Returns `look`, which runs `work` now, or once more after the run under way (however many times it is called
 * meanwhile), and `idle`, which resolves once no run is under way. Failures go to `onError`.
 */
function lookSerially(work: () => Promise<void>, onError: (error: unknown) => void) {
  let under: Promise<void> | undefined;
  let again = false;
  const look = (): void => {
    if (under) {
      again = true;
      return;
    }
    under = work()
      .catch(onError)
      .finally(() => {
        under = undefined;
        if (again) {
          again = false;
          look();
        }
      });
  };
  return {
    look,
    async idle(): Promise<void> {
      while (under) await under;
    },
  };
}

/**
 * Removes from `folder` the uploads no longer needed: those of jobs ended, or held by an instance gone (this one's
 * earlier life among them), and those no job names untouched for ORPHAN_UPLOAD_MS. The folder may be shared by other
 * instances on this machine (it is named after the database): their jobs' uploads, and uploads arriving, stay.
 */
async function sweepUploads(folder: string, jobs: Pick<PgImportJobStore, 'uploadsNeeded'>): Promise<void> {
  const ids = (await readdir(folder)).filter((name) => name.endsWith('.csv')).map((name) => name.slice(0, -'.csv'.length));
  const needed = await jobs.uploadsNeeded(ids);
  const old = Date.now() - ORPHAN_UPLOAD_MS;
  await Promise.all(
    ids.map(async (id) => {
      const path = join(folder, `${id}.csv`);
      const known = needed.get(id);
      if (known === true) return;
      if (known === undefined && ((await stat(path).catch(() => undefined))?.mtimeMs ?? 0) > old) return;
      await rm(path, { force: true });
    }),
  );
}
