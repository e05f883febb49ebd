// Bulk loading for seeding: rows go in large transactions, then the search index and the aggregate tables are built
// for them in bulk. Into an empty table the indexes are built once at the end, and the search index is built at the
// same time on a second thread (search-index.thread.ts). Not for live requests (the service uses the store).
import { countryKey, type CustomerRecord } from '../../domain/customers.ts';
import { bindInsert, INSERT_COLUMNS, INSERT_WIDTH, insertPlaceholders } from '../store/fields.ts';
import { generationBumper } from '../store/generation.ts';
import { SEARCH_TEXT_SQL } from '../store/rows.ts';
import { createCustomerStats, StatsDelta } from '../store/stats.ts';
import type { Db } from '../../db/database.ts';
import { startSearchIndexBuild } from './search-index-build.ts';

/** The `meta` key holding the first customer id of a bulk load that has not finished (recovery.ts finishes it). */
export const BULK_LOAD_KEY = 'bulk_load_from';

/** Rows per INSERT statement: one call into SQLite per 100 rows instead of per row. */
const ROWS_PER_STATEMENT = 100;
const BATCH = 50_000;

/**
 * Inserts the records (emails must be new and unique), then indexes their text and adds them to the aggregates.
 * Returns how many were inserted. `onProgress` hears the running count after each batch.
 */
export function bulkInsertCustomers(db: Db, records: Iterable<CustomerRecord>, now: Date, onProgress: (inserted: number) => void = () => {}): number {
  const manyRows = db.prepare(`INSERT INTO customers ${INSERT_COLUMNS} VALUES ${insertPlaceholders(ROWS_PER_STATEMENT)}`);
  const oneRow = db.prepare(`INSERT INTO customers ${INSERT_COLUMNS} VALUES ${insertPlaceholders(1)}`);
  const lastId = db.prepare("SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'customers'), 0)").pluck();
  const firstNewId = (lastId.get() as number) + 1;
  const empty = !db.prepare('SELECT 1 FROM customers LIMIT 1').get();
  // Into an empty table, building the secondary indexes once at the end (a sort) beats updating them row by row.
  const deferred = empty
    ? (db.prepare(`SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'customers' AND sql IS NOT NULL`).all() as { name: string; sql: string }[])
    : [];
  for (const index of deferred) db.exec(`DROP INDEX ${index.name}`);
  // An empty search index is built on a second thread while this one loads rows and sorts indexes.
  const search = empty && !db.memory ? startSearchIndexBuild(db) : undefined;
  const at = now.getTime();
  const delta = new StatsDelta();
  const values: unknown[] = new Array(ROWS_PER_STATEMENT * INSERT_WIDTH);
  // Marks the load as under way with its first batch: a load killed before its last transaction leaves rows the
  // search index and the aggregates do not count yet, and the next open repairs them (repairInterruptedBulkLoad).
  const markLoad = db.prepare(`INSERT OR IGNORE INTO meta (key, value) VALUES ('${BULK_LOAD_KEY}', ?)`);
  const flush = db.transaction((rows: CustomerRecord[]) => {
    const first = (lastId.get() as number) + 1;
    markLoad.run(first);
    let i = 0;
    for (; i + ROWS_PER_STATEMENT <= rows.length; i += ROWS_PER_STATEMENT) {
      for (let k = 0; k < ROWS_PER_STATEMENT; k++) bindInsert(values, k * INSERT_WIDTH, rows[i + k]!, at);
      manyRows.run(values);
    }
    for (; i < rows.length; i++) oneRow.run(bindInsert([], 0, rows[i]!, at));
    for (const r of rows) delta.add({ ...r, countryKey: countryKey(r.country) }, 1);
    return first;
  });
  let inserted = 0;
  let batch: CustomerRecord[] = [];
  const write = () => {
    const first = flush.immediate(batch);
    search?.add(first, batch);
    inserted += batch.length;
    batch = [];
    onProgress(inserted);
  };
  for (const record of records) {
    batch.push(record);
    if (batch.length === BATCH) write();
  }
  if (batch.length > 0) write();
  if (deferred.length > 0) {
    // The sorter spills runs of about cache_size and sorts them on helper threads; a small cache gives it several.
    const cacheSize = db.pragma('cache_size', { simple: true }) as number;
    db.pragma('cache_size = -32768');
    db.pragma('threads = 2');
    db.transaction(() => {
      for (const index of deferred) db.exec(index.sql);
    }).immediate();
    db.pragma(`cache_size = ${cacheSize}`);
  }
  if (search) search.finish();
  else {
    db.transaction(() => {
      // A 256 MiB term buffer lets FTS5 write a few large segments instead of merging many small ones. The setting
      // is kept in the table, but FTS5 flushes the buffer at every commit, so small live writes never fill it.
      db.exec(`INSERT INTO customer_search (customer_search, rank) VALUES ('hashsize', 268435456)`);
      db.prepare(`INSERT INTO customer_search (rowid, text) SELECT id, ${SEARCH_TEXT_SQL} FROM customers WHERE id >= ?`).run(firstNewId);
    }).immediate();
  }
  const bumpGeneration = generationBumper(db);
  const unmarkLoad = db.prepare(`DELETE FROM meta WHERE key = '${BULK_LOAD_KEY}'`);
  db.transaction(() => {
    createCustomerStats(db).apply(delta);
    bumpGeneration(); // tells a running service that customers changed under it
    unmarkLoad.run();
  }).immediate();
  return inserted;
}
