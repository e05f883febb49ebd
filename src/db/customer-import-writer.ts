// The import writer: a worker thread with its own connection that writes import requests in groups
// (customer-import-queue.ts), so their transactions and checkpoints never stop the service's event loop.
// Started by customer-imports.ts with `workerData.path`; answers each transaction with an ImportReply.
import { parentPort, workerData } from 'node:worker_threads';
import { createImportQueue, type ImportRequest } from './customer-import-queue.ts';
import { createCustomerWrites } from './customer-writes.ts';
import { openWriterConnection } from './database.ts';

/**
 * 256 MiB of page cache: the six customer indexes of a million customers (about 120 MB) stay cached between
 * transactions; with 64 MiB most index pages an import touches are read again. The thread stops when idle.
 */
const CACHE_MIB = 256;

/**
 * Checkpoint after this many imported rows (about 40,000 WAL frames), or once no import came for a moment. Pages that
 * several transactions rewrote are copied to the database once, and never while a request waits for its reply.
 */
const CHECKPOINT_ROWS = 10_000;
const IDLE_CHECKPOINT_MS = 100;

const port = parentPort!;
const db = openWriterConnection((workerData as { path: string }).path, CACHE_MIB);
// Checkpoints happen here, between transactions, not inside a commit.
db.pragma('wal_autocheckpoint = 0');
// After a checkpoint lets the log start over, a log file grown by a long import is cut back to 64 MiB.
db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

let rowsSinceCheckpoint = 0;
let idle: NodeJS.Timeout | undefined;
const checkpointNow = () => {
  clearTimeout(idle);
  rowsSinceCheckpoint = 0;
  checkpoint.run();
};

const queue = createImportQueue(createCustomerWrites(db), (reply) => {
  port.postMessage(reply);
  for (const result of reply.results) if ('ids' in result) rowsSinceCheckpoint += result.ids.length;
  clearTimeout(idle);
  if (rowsSinceCheckpoint >= CHECKPOINT_ROWS) checkpointNow();
  else if (rowsSinceCheckpoint > 0) idle = setTimeout(checkpointNow, IDLE_CHECKPOINT_MS);
});

port.on('message', (request: ImportRequest) => {
  clearTimeout(idle);
  queue.push(request);
});
