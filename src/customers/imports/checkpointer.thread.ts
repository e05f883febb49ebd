// The checkpointer: a worker thread with its own connection that copies the write-ahead log into the database
// when asked (imports.ts asks after large imports, and for the writer during a CSV job), so neither the event loop
// nor the import writer waits for those writes and their fsync. Answers each 'checkpoint' with 'done'; 'stop' ends the thread.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openWriterConnection } from '../../db/database.ts';

const port = parentPort!;

/**
 * This thread runs at the lowest CPU priority (Linux: a thread is a task of its own, named by /proc/thread-self;
 * elsewhere it keeps the process's). Its passes copy hundreds of MB while the import writer and the event loop share
 * the same two cores: during them, a job's commits into a million took up to 620 ms instead of 60 and edits of the
 * service waited as long. At the lowest priority, edits waiting over 250 ms at the server went from 5 or 6 of about
 * 1,300 to none and 3 in two runs; the passes take about a third longer, which nobody waits for.
 */
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19);
} catch {
  // no /proc (not Linux), or the priority cannot be changed: the thread runs as the process does
}
// A checkpoint reads log frames and writes pages; it needs no page cache of its own.
const db = openWriterConnection((workerData as { path: string }).path, 2);
db.pragma('wal_autocheckpoint = 0');
// PASSIVE: copies what no reader still needs, never waits for readers or writers.
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

port.on('message', (message: 'checkpoint' | 'stop') => {
  if (message === 'stop') {
    db.close(); // so no lock of this connection outlives the thread
    process.exit(0);
  }
  checkpoint.run();
  port.postMessage('done');
});
