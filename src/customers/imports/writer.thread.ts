// The import writer: a worker thread with its own connection that writes import requests in groups
// (group-commit.ts), so their transactions never stop the service's event loop. Started by
// imports.ts with `workerData.path`; posts each transaction's ImportReply, and 'checkpoint' when the log
// has grown enough for the checkpointer thread to copy it into the database ('checkpointed' comes back when it has).
// Runs CSV import jobs too, their rows coming from the parser on the service's event loop through the port each job
// brings.
import { fdatasync, fsyncSync } from 'node:fs';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { runCsvJob } from './csv-job.ts';
import { createImportQueue, type ImportRequest } from './group-commit.ts';
import type { WriterMessage } from './imports.ts';
import { jobProgressWriter, type JobToRun } from './job-store.ts';
import { createCustomerWrites } from '../store/writes.ts';
import { openWriterConnection } from '../../db/database.ts';
import { WriterTurns } from '../../db/write-gate.ts';

/**
 * Ask for a checkpoint after this many imported rows (about 40,000 log frames), or once no import came for a moment:
 * pages that several transactions rewrote are copied to the database once.
 */
const CHECKPOINT_ROWS = 10_000;
const IDLE_CHECKPOINT_MS = 100;

const port = parentPort!;
// IMPORT_CACHE_MIB of page cache: the more of the six customer indexes stay cached between transactions, the fewer
// pages an import reads again from the file (the operating system's cache, not the disk, on a warm machine).
const { path, cacheMiB, turns: sharedTurns } = workerData as { path: string; cacheMiB: number; turns: SharedArrayBuffer };
const db = openWriterConnection(path, cacheMiB);
/** The writer's side of the engine's write gate: a job's transaction commits soon when a write of the service waits. */
const turns = new WriterTurns(sharedTurns);
// The checkpointer thread checkpoints after JSON imports, this thread itself during CSV jobs; a commit never does.
db.pragma('wal_autocheckpoint = 0');
// After a checkpoint lets the log start over, a log file grown by a long import is cut back to 64 MiB, by the next
// transaction of this connection. Not during a job: its log restarts every JOB_CHECKPOINT_ROWS and grows back at once,
// and cutting hundreds of MB out of the file (the pages the system caches for it too) held the lock for up to
// a few hundred milliseconds while writes of the service waited.
const JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024;
db.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT}`);
// A writer of the service holds the lock for a moment only; this thread waits for it as long as openDatabase does.
const BUSY_TIMEOUT_MS = 5000;

let rowsSinceCheckpoint = 0;
let idle: NodeJS.Timeout | undefined;
const askForCheckpoint = () => {
  clearTimeout(idle);
  rowsSinceCheckpoint = 0;
  port.postMessage('checkpoint');
};

const post = (message: WriterMessage, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);
const wrote = (rows: number) => {
  rowsSinceCheckpoint += rows;
  clearTimeout(idle);
  if (rowsSinceCheckpoint >= CHECKPOINT_ROWS) askForCheckpoint();
  else if (rowsSinceCheckpoint > 0) idle = setTimeout(askForCheckpoint, IDLE_CHECKPOINT_MS);
};

const writes = createCustomerWrites(db);
const queue = createImportQueue(writes, (reply) => {
  post(reply);
  wrote(reply.results.reduce((rows, result) => rows + ('ids' in result ? result.ids.length : 0), 0));
});
const progress = jobProgressWriter(db);

/**
 * A job writes faster than the checkpointer thread copies the log back, and a log is started over only when it has
 * been copied to its end and no reader is in it: it would grow by gigabytes. So during a job, after this many rows,
 * this thread asks the checkpointer for a pass (PASSIVE: it copies while this thread goes on writing, and most of a
 * checkpoint's time is the disk's, not a core's), and when that pass is done, between two transactions, copies what
 * was written meanwhile itself (a second PASSIVE pass, much shorter), then starts the log over at once (RESTART
 * without waiting: a reader in the log right now just means next time). Pages that several transactions rewrote are
 * copied once per checkpoint: every 50,000 rows (a log of about 500 MB) costs about half as much a row as every
 * 10,000 did. Into a million customers, the passes on this thread took 7.7 s of a 44 s job; with the checkpointer
 * doing most of each, 3.4 s of 39.
 */
const JOB_CHECKPOINT_ROWS = 50_000;
/**
 * A checkpoint syncs the log before it copies it, and during a job that was every page the job wrote since the last
 * restart (about 500 MB): 0.4-1.5 s of writes and a flush of the disk's cache, and a read the writer needed meanwhile
 * (a page of the log or the database its own cache no longer held) queued behind them while it held the write lock.
 * So the log is synced on the thread pool every LOG_SYNC_ROWS rows of the job, in steps of about 50 MB.
 */
const LOG_SYNC_ROWS = 5_000;
let logRowsUnsynced = 0;
let logSyncing = false;
const syncLogAside = (logFd: number, rows: number) => {
  logRowsUnsynced += rows;
  if (logFd < 0 || logSyncing || logRowsUnsynced < LOG_SYNC_ROWS) return;
  logSyncing = true;
  logRowsUnsynced = 0;
  fdatasync(logFd, () => (logSyncing = false));
};
const copyLog = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const restartLog = db.prepare('PRAGMA wal_checkpoint(RESTART)');
/** Where the job's checkpoint stands: nothing asked, a pass asked of the checkpointer, or its pass done. */
let alongside: 'none' | 'asked' | 'copied' = 'none';
const checkpointDuringJob = (syncFd: number) => {
  const { log, checkpointed } = copyLog.get() as { log: number; checkpointed: number };
  // RESTART holds the write lock while it copies what the passive pass left (pages a reader's snapshot still
  // needed): only worth it when that is nothing, else the next checkpoint tries again.
  if (checkpointed !== log) return;
  // SQLite syncs the database file only in a pass that copies the log to its end, and the service's edits write to
  // the log during both passive passes: the restart, which does reach the end, would sync every page the two passes
  // copied (hundreds of MB) while it holds the write lock. Traced on a slow disk, that sync took 350-590 ms and
  // made edits wait as long. Synced here, off the lock, the restart syncs only what the edits wrote meanwhile.
  fsyncSync(syncFd);
  db.pragma('busy_timeout = 0');
  // A write of the service waits for it through the write turns (woken the moment it ends), not in SQLite's busy
  // handler (which sleeps in steps).
  turns.hold(250);
  try {
    restartLog.run();
  } finally {
    turns.release();
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  }
};

/** Runs a CSV import job between the group commits of JSON imports, telling the service of each transaction. */
async function runJob(job: JobToRun, parser: MessagePort, syncFd: number, logFd: number): Promise<void> {
  /** The job's rows since its last checkpoint (JSON imports count theirs in rowsSinceCheckpoint). */
  let jobRowsSinceCheckpoint = 0;
  alongside = 'none';
  const onCommit: Parameters<typeof runCsvJob>[2]['onCommit'] = (commit) => {
    // Counted before the post: the columns' buffers move to the service's thread with it, and read empty here after.
    const rows = commit.inserted.ids.length + (commit.replaced?.after.ids.length ?? 0);
    jobRowsSinceCheckpoint += rows;
    syncLogAside(logFd, rows);
    const columns = [commit.inserted, ...(commit.replaced ? [commit.replaced.before, commit.replaced.after] : [])];
    const buffers = columns.flatMap((c) => Object.values(c).filter(ArrayBuffer.isView).map((column) => column.buffer as ArrayBuffer));
    post({ type: 'job-commit', ...commit }, buffers);
    if (alongside === 'copied') {
      alongside = 'none';
      jobRowsSinceCheckpoint = 0;
      checkpointDuringJob(syncFd);
    } else if (alongside === 'none' && jobRowsSinceCheckpoint >= JOB_CHECKPOINT_ROWS) {
      alongside = 'asked';
      port.postMessage('checkpoint');
    }
  };
  db.pragma('journal_size_limit = -1');
  const status = await runCsvJob(job, parser, { writes, progress, onCommit, turns }).catch(() => 'failed' as const);
  db.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT}`);
  post({ type: 'job-end', seq: job.seq, status });
  // What the job wrote since its last checkpoint (up to JOB_CHECKPOINT_ROWS rows) is copied by the checkpointer
  // thread, not later by a commit of the service's connection on the event loop.
  askForCheckpoint();
}

port.on('message', (message: ImportRequest | { type: 'job'; job: JobToRun; parser: MessagePort; syncFd: number; logFd: number } | 'stop' | 'checkpointed') => {
  if (message === 'checkpointed') {
    // The checkpointer's pass is done (asked by a job, or after JSON imports): the job's next commit finishes it.
    if (alongside === 'asked') alongside = 'copied';
    return;
  }
  clearTimeout(idle);
  if (message === 'stop') {
    // Asked only when no request or job is waiting. The connection is closed, so no lock of it outlives the thread.
    db.close();
    process.exit(0);
  }
  if ('type' in message) void runJob(message.job, message.parser, message.syncFd, message.logFd);
  else {
    turns.importTaken();
    queue.push(message);
  }
});
