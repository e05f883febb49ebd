// The search index builder thread of a bulk load (search-index-build.ts): indexes each batch's text in a scratch
// database in one transaction, then copies the finished index into the database and sets the shared flag.
// FTS5 keeps an index wholly in its shadow tables (%_data, %_idx, %_docsize; settings in %_config), so an index built
// by the same definition elsewhere can be copied row for row into an empty one. The copy is made on this thread's own
// connection: other connections see the change (PRAGMA data_version) and drop any index structure they had read.
import { rmSync } from 'node:fs';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { openDatabase, openWriterConnection } from '../../db/database.ts';
import { COPIED, FAILED } from './search-index-build.ts';

const { path, scratch, state: buffer, errors } = workerData as { path: string; scratch: string; state: SharedArrayBuffer; errors: MessagePort };
const state = new Int32Array(buffer);
const port = parentPort!;

const fail = (error: unknown) => {
  errors.postMessage(error instanceof Error ? error.message : String(error));
  Atomics.store(state, 0, FAILED);
  Atomics.notify(state, 0);
  process.exit(1);
};

try {
  // The same schema, so the same search table definition; nothing of the scratch file is kept but the index.
  const build = openDatabase(scratch);
  build.pragma('synchronous = OFF');
  // A 256 MiB term buffer: FTS5 writes a few large segments instead of merging many small ones.
  build.exec(`INSERT INTO customer_search (customer_search, rank) VALUES ('hashsize', 268435456)`);
  const index = build.prepare('INSERT INTO customer_search (rowid, text) SELECT @firstId + key, value FROM json_each(@texts)');
  build.exec('BEGIN');

  const copy = () => {
    build.exec('COMMIT');
    build.close();
    const db = openWriterConnection(path, 16);
    // Shadow tables are read-only in SQLite's defensive mode, which better-sqlite3 turns on; this copy writes them.
    db.unsafeMode(true);
    db.prepare('ATTACH DATABASE ? AS build').run(scratch);
    db.transaction(() => {
      for (const table of ['customer_search_data', 'customer_search_idx', 'customer_search_docsize']) {
        db.exec(`DELETE FROM main.${table}`);
        db.exec(`INSERT INTO main.${table} SELECT * FROM build.${table}`);
      }
    }).immediate();
    db.exec('DETACH DATABASE build');
    db.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(scratch + suffix, { force: true });
  };

  port.on('message', (message: { firstId: number; texts: string[] } | 'finish') => {
    try {
      if (message !== 'finish') {
        index.run({ firstId: message.firstId, texts: JSON.stringify(message.texts) });
        return;
      }
      copy();
      Atomics.store(state, 0, COPIED);
      Atomics.notify(state, 0);
      process.exit(0);
    } catch (error) {
      fail(error);
    }
  });
} catch (error) {
  fail(error);
}
