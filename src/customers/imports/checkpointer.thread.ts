// The checkpointer: a worker thread with its own connection that copies the write-ahead log into the database
// when asked (imports.ts asks after large imports, and for the writer during a CSV job), so neither the event loop
// nor the import writer waits for those writes and their fsync. Answers each 'checkpoint' with 'done'; 'stop' ends the thread.
import { parentPort, workerData } from 'node:worker_threads';
import { openWriterConnection } from '../../db/database.ts';

const port = parentPort!;
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
