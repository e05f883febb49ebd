// The import writer: a worker thread with its own connection that writes import requests in groups
// (group-commit.ts), so their transactions never stop the service's event loop. Started by
// imports.ts with `workerData.path`; posts each transaction's ImportReply, and 'checkpoint' when the log
// has grown enough for the checkpointer thread to copy it into the database.
import { parentPort, workerData } from 'node:worker_threads';
import { createImportQueue, type ImportRequest } from './group-commit.ts';
import { createCustomerWrites } from '../store/writes.ts';
import { openWriterConnection } from '../../db/database.ts';

/**
 * 256 MiB of page cache: the six customer indexes of a million customers (about 120 MB) stay cached between
 * transactions; with 64 MiB most index pages an import touches are read again. The thread stops when idle.
 */
const CACHE_MIB = 256;

/**
 * Ask for a checkpoint after this many imported rows (about 40,000 log frames), or once no import came for a moment:
 * pages that several transactions rewrote are copied to the database once.
 */
const CHECKPOINT_ROWS = 10_000;
const IDLE_CHECKPOINT_MS = 100;

const port = parentPort!;
const db = openWriterConnection((workerData as { path: string }).path, CACHE_MIB);
// The checkpointer thread checkpoints; a commit here never does.
db.pragma('wal_autocheckpoint = 0');
// After a checkpoint lets the log start over, a log file grown by a long import is cut back to 64 MiB.
db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);

let rowsSinceCheckpoint = 0;
let idle: NodeJS.Timeout | undefined;
const askForCheckpoint = () => {
  clearTimeout(idle);
  rowsSinceCheckpoint = 0;
  port.postMessage('checkpoint');
};

const queue = createImportQueue(createCustomerWrites(db), (reply) => {
  port.postMessage(reply);
  for (const result of reply.results) if ('ids' in result) rowsSinceCheckpoint += result.ids.length;
  clearTimeout(idle);
  if (rowsSinceCheckpoint >= CHECKPOINT_ROWS) askForCheckpoint();
  else if (rowsSinceCheckpoint > 0) idle = setTimeout(askForCheckpoint, IDLE_CHECKPOINT_MS);
});

port.on('message', (message: ImportRequest | 'stop') => {
  clearTimeout(idle);
  if (message !== 'stop') return queue.push(message);
  // Asked only when no request is waiting. The connection is closed, so no lock of it outlives the thread.
  db.close();
  process.exit(0);
});
