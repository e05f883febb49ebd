// The import writer: imports handed to the writer thread, which groups them (writer.thread.ts), with the checkpointer
// thread copying the log they leave into the database (checkpointer.thread.ts); CSV import jobs run on the same
// writer, one at a time. Each batch lands in one transaction, and the change source hears of every transaction in
// commit order of its replies. The writer shares the write turns of the engine's gate (db/write-gate.ts). Owned by
// the import runner (import-runner.ts), which decides what runs when.
import { openSync } from 'node:fs';
import { MessageChannel, type Worker } from 'node:worker_threads';
import { countryKey, type CustomerRecord } from '../../domain/customers.ts';
import type { ChangeSource } from '../change-feed.ts';
import { runCsvJob, type JobCommit } from './csv-job.ts';
import { parseCsvFile } from './csv-parser.ts';
import { createImportQueue, type ImportReply } from './group-commit.ts';
import { jobProgressWriter, type JobToRun } from './job-store.ts';
import { insertionsOf, type CustomerChange, type InsertedColumns, type StoredCustomer } from '../store/rows.ts';
import type { CustomerWrites, OnExisting } from '../store/writes.ts';
import type { SqliteEngine } from '../../db/engine.ts';
import { prepareThreads, startWorkerThread } from '../../db/worker-thread.ts';

/**
 * The writer's heap: a small young generation, and an old generation capped well above what it holds (the batches of
 * a job ahead of it, one transaction's rows, the import requests queued), which makes V8 collect its garbage sooner.
 */
const WRITER_LIMITS = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 128 };

const WRITER_THREAD = new URL('./writer.thread.ts', import.meta.url);
const CHECKPOINTER_THREAD = new URL('./checkpointer.thread.ts', import.meta.url);

/**
 * A read-only descriptor of each database file (and of its log) this process has run a CSV job on, for the writer
 * thread to sync the file off the write lock, and the log in steps (writer.thread.ts). Opened at the first job and
 * never closed: closing any descriptor of a file drops every POSIX lock this process holds on it, SQLite's own
 * included (another process could then take the database for unused and remove its log), and the service's
 * connections hold them while it runs.
 */
const syncDescriptors = new Map<string, number>();
function syncDescriptor(path: string): number {
  let fd = syncDescriptors.get(path);
  if (fd === undefined) {
    fd = openSync(path, 'r');
    syncDescriptors.set(path, fd);
  }
  return fd;
}

/** The descriptor of the database's log, or -1 when there is none to sync (SQLite had not created it). */
function logDescriptor(path: string): number {
  try {
    return syncDescriptor(`${path}-wal`);
  } catch {
    return -1;
  }
}

/** The threads stop after this long without work, and start again with the next import. */
const IDLE_MS = 10_000;

/** What became of one record of an import request: its customer's id and whether it replaced a stored one, or null (email taken). */
export type ImportedRow = { id: string; updated: boolean } | null;

interface Waiting {
  records: readonly CustomerRecord[];
  resolve: (rows: ImportedRow[]) => void;
  reject: (error: unknown) => void;
  /** Tells the generation readers that this write has been reported. */
  reported: () => void;
  /** The writer thread it was sent to; none for an in-memory database. */
  thread?: Worker;
}

function stored(record: CustomerRecord, id: number): StoredCustomer {
  return { ...record, id, countryKey: countryKey(record.country) };
}

/** The changes of customers a job's transaction replaced: each one's facts before and after, in the same order. */
function replacementsOf(before: InsertedColumns, after: InsertedColumns): CustomerChange[] {
  const olds = insertionsOf(before);
  return insertionsOf(after).map((change, i) => ({ before: olds[i]!.after, after: change.after }));
}

/** What the writer thread posts: a group commit's reply, a job's transaction or end, or a request for a checkpoint. */
export type WriterMessage = ImportReply | 'checkpoint' | ({ type: 'job-commit' } & JobCommit) | { type: 'job-end'; seq: number; status: JobEnd };

/** How a job ended: its file read to the end, or not (the writer stopped, or the file could not be parsed). */
export type JobEnd = 'completed' | 'failed';

interface RunningJob {
  seq: number;
  onEnd: (status: JobEnd) => void;
  /** Tells the generation readers that the job's writes have all been reported. */
  reported: () => void;
  thread?: Worker;
}

/** The import writer: JSON imports and CSV jobs written off the event loop (in memory: grouped on the service's connection). */
export interface ImportWriter {
  /**
   * Stores the records in one transaction, possibly shared with other imports; a stored email is left as it is
   * (`skip`: null) or has its fields replaced (`update`). Resolves to each record's customer id and whether it was
   * an update.
   */
  importLater(records: readonly CustomerRecord[], now: Date, onExisting?: OnExisting): Promise<ImportedRow[]>;
  /**
   * Runs a CSV import job, publishing each of its transactions to the change source; `onEnd` hears how it ended. One
   * job at a time: the import runner queues them.
   */
  runJob(toRun: JobToRun, path: string, onEnd: (status: JobEnd) => void): void;
}

/**
 * Returns the import writer of `engine`'s database: its threads start with the first import and stop after IDLE_MS
 * without one. `writes` are the service connection's write transactions, used only for an in-memory database.
 */
export function createImportWriter(engine: SqliteEngine, writes: CustomerWrites, feed: ChangeSource, writerCacheMiB: number): ImportWriter {
  const { db, gate } = engine;
  const waiting = new Map<number, Waiting>();
  let nextId = 1;
  let writer: Worker | undefined;
  let idle: NodeJS.Timeout | undefined;
  let job: RunningJob | undefined;

  const publishJobCommit = ({ generation, inserted, replaced }: JobCommit) =>
    feed.publish(replaced ? [...insertionsOf(inserted), ...replacementsOf(replaced.before, replaced.after)] : insertionsOf(inserted), generation);
  const endJob = (status: JobEnd) => {
    const ended = job;
    job = undefined;
    ended?.reported();
    ended?.onEnd(status);
    idleWhenDone();
  };
  const idleWhenDone = () => {
    if (waiting.size !== 0 || job || !writer) return;
    // Idle threads must not keep the process alive (a 'message' listener refs a worker again): unref them till work comes.
    writer.unref();
    checkpointer?.unref();
    idle = setTimeout(stopThreads, IDLE_MS).unref();
  };

  const receive = (reply: ImportReply) => {
    const byRequest = new Map(reply.results.map((result) => [result.id, 'ids' in result ? result : { ids: [], replaced: [] }]));
    for (const { generation, requests } of reply.commits) {
      const changes: CustomerChange[] = [];
      for (const id of requests) {
        const { records } = waiting.get(id)!;
        const { ids, replaced } = byRequest.get(id)!;
        const befores = new Map(replaced);
        ids.forEach((customerId, i) => {
          if (customerId === null) return;
          const before = befores.get(i);
          // A record that left its customer as it was changes nothing anyone derives.
          if (before === null) return;
          changes.push({ before, after: stored(records[i]!, customerId) });
        });
      }
      feed.publish(changes, generation);
    }
    for (const result of reply.results) {
      const request = waiting.get(result.id)!;
      waiting.delete(result.id);
      request.reported();
      if ('ids' in result) {
        const updated = new Set(result.replaced.map(([index]) => index));
        request.resolve(result.ids.map((id, i) => (id === null ? null : { id: String(id), updated: updated.has(i) })));
      } else request.reject(result.error);
    }
    idleWhenDone();
  };

  // While the writer thread imports, the checkpointer thread keeps the log short, and this connection's commits must
  // not checkpoint (SQLite's default after 1000 frames): that would copy a large import's log on the event loop.
  let checkpointer: Worker | undefined;
  let checkpointing: 'idle' | 'running' | 'again' = 'idle';
  const checkpoint = () => {
    if (checkpointing !== 'idle') {
      checkpointing = 'again';
      return;
    }
    if (!checkpointer) {
      const thread = startWorkerThread(CHECKPOINTER_THREAD, { path: db.name }, [], { bundle: true });
      thread.on('message', () => {
        if (checkpointer !== thread) return;
        // A job's writer finishes the checkpoint and starts the log over once this pass is done (writer.thread.ts).
        if (job?.thread) job.thread.postMessage('checkpointed');
        const again = checkpointing === 'again';
        checkpointing = 'idle';
        if (again) checkpoint();
        else thread.unref(); // a checkpoint done is no reason to keep the process alive
      });
      thread.on('error', () => {}); // reported through 'exit', which follows
      thread.on('exit', () => {
        if (checkpointer !== thread) return;
        checkpointer = undefined;
        checkpointing = 'idle';
      });
      checkpointer = thread;
    }
    checkpointing = 'running';
    checkpointer.ref();
    checkpointer.postMessage('checkpoint');
  };

  /** Stops the checkpointer thread after the checkpoint it may be running; the next checkpoint starts another. */
  const stopCheckpointer = () => {
    checkpointer?.postMessage('stop');
    checkpointer = undefined;
    checkpointing = 'idle';
  };

  const stopThreads = () => {
    writer?.postMessage('stop');
    writer = undefined;
    stopCheckpointer();
    if (db.open) db.pragma('wal_autocheckpoint = 1000');
  };

  // An in-memory database has no second connection: its imports are grouped on this one. No other connection writes
  // it, so these writes have no turn to wait for (the gate orders the service's writes against the writer thread's).
  const local = db.memory ? createImportQueue(writes, receive) : undefined;
  // The first import does not wait on the event loop for these threads' modules to be built.
  if (!local) prepareThreads([WRITER_THREAD, CHECKPOINTER_THREAD]);

  /** Returns the writer thread, started if need be, holding the process open while it has work. */
  const writerThread = (): Worker => {
    if (writer) {
      writer.ref();
      return writer;
    }
    const thread = startWorkerThread(WRITER_THREAD, { path: db.name, cacheMiB: writerCacheMiB, turns: gate.shared }, [], { resourceLimits: WRITER_LIMITS, bundle: true });
    db.pragma('wal_autocheckpoint = 0');
    thread.on('message', (message: WriterMessage) => {
      if (message === 'checkpoint') checkpoint();
      else if ('commits' in message) receive(message);
      else if (message.type === 'job-commit') publishJobCommit(message);
      else endJob(message.status);
    });
    thread.on('error', () => {}); // reported through 'exit', which follows
    thread.on('exit', () => {
      if (writer === thread) writer = undefined;
      gate.writerGone();
      // Requests it never answered may or may not have committed; the generation tells the readers which.
      for (const [id, request] of waiting) {
        if (request.thread !== thread) continue;
        waiting.delete(id);
        request.reported();
        request.reject(new Error('The import writer stopped before answering.'));
      }
      if (job?.thread === thread) endJob('failed');
    });
    writer = thread;
    return thread;
  };

  return {
    // The file is parsed here, on the event loop, and its rows go to the writer through a port of their own.
    runJob(toRun, path, onEnd) {
      clearTimeout(idle);
      const { port1: parser, port2 } = new MessageChannel();
      parseCsvFile({ path, columns: toRun.columns, startedAt: toRun.startedAt, port: port2 });
      if (local) {
        job = { seq: toRun.seq, onEnd, reported: () => {} };
        runCsvJob(toRun, parser, { writes, progress: jobProgressWriter(db), onCommit: publishJobCommit }).then(endJob, () => endJob('failed'));
        return;
      }
      const thread = writerThread();
      job = { seq: toRun.seq, onEnd, reported: feed.beginWriteElsewhere(), thread };
      thread.postMessage({ type: 'job', job: toRun, parser, syncFd: syncDescriptor(db.name), logFd: logDescriptor(db.name) }, [parser]);
    },

    importLater(records, now, onExisting = 'skip') {
      if (records.length === 0) return Promise.resolve([]);
      const id = nextId++;
      clearTimeout(idle);
      return new Promise((resolve, reject) => {
        const request = { id, records: [...records], now: now.getTime(), onExisting };
        if (local) {
          waiting.set(id, { records, resolve, reject, reported: () => {} });
          local.push(request);
          return;
        }
        const thread = writerThread();
        waiting.set(id, { records, resolve, reject, reported: feed.beginWriteElsewhere(), thread });
        gate.importPosted(); // a job's transaction on the writer lets it in soon
        thread.postMessage(request);
      });
    },
  };
}
