// Bulk loading for seeding: rows go in large transactions, then the search index and the
// aggregate tables are built for them in bulk. Not for live requests (the service uses customers.ts).
import { countryKey, type CustomerRecord } from '../domain/customers.ts';
import { generationBumper } from './customer-generation.ts';
import { createCustomerStats, StatsDelta } from './customer-stats.ts';
import type { Db } from './database.ts';

/**
 * Inserts the records (emails must be new and unique), then indexes their text and adds them to the aggregates.
 * Returns how many were inserted. `onProgress` hears the running count after each batch.
 */
export function bulkInsertCustomers(db: Db, records: Iterable<CustomerRecord>, now: Date, onProgress: (inserted: number) => void = () => {}): number {
  const insert = db.prepare(
    `INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const firstNewId = (db.prepare('SELECT coalesce(max(id), 0) + 1 AS id FROM customers').get() as { id: number }).id;
  // Into an empty table, building the secondary indexes once at the end (a sort) beats updating them row by row.
  const deferred = firstNewId === 1 && !db.prepare('SELECT 1 FROM customers LIMIT 1').get()
    ? (db.prepare(`SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'customers' AND sql IS NOT NULL`).all() as { name: string; sql: string }[])
    : [];
  for (const index of deferred) db.exec(`DROP INDEX ${index.name}`);
  const at = now.getTime();
  const batchSize = 50_000;
  let inserted = 0;
  let batch: CustomerRecord[] = [];
  const delta = new StatsDelta();
  const bumpGeneration = generationBumper(db);
  const flush = db.transaction((rows: CustomerRecord[]) => {
    for (const r of rows) {
      const key = countryKey(r.country);
      insert.run(r.name, r.email, r.country, key, r.totalTransactions, r.amountCents, r.lastActivityAt, r.status, at, at);
      delta.add({ ...r, countryKey: key }, 1);
    }
  });
  for (const record of records) {
    batch.push(record);
    if (batch.length === batchSize) {
      flush.immediate(batch);
      inserted += batch.length;
      batch = [];
      onProgress(inserted);
    }
  }
  if (batch.length > 0) {
    flush.immediate(batch);
    inserted += batch.length;
    onProgress(inserted);
  }
  if (deferred.length > 0) {
    db.pragma('threads = 2'); // let the index sorts use a second core
    db.transaction(() => {
      for (const index of deferred) db.exec(index.sql);
    }).immediate();
  }
  db.transaction(() => {
    // A 256 MiB term buffer lets FTS5 write a few large segments instead of merging many small ones. The setting
    // is kept in the table, but FTS5 flushes the buffer at every commit, so small live writes never fill it.
    db.exec(`INSERT INTO customer_search (customer_search, rank) VALUES ('hashsize', 268435456)`);
    db.prepare(`INSERT INTO customer_search (rowid, text) SELECT id, name || char(10) || email FROM customers WHERE id >= ?`).run(firstNewId);
    createCustomerStats(db).apply(delta);
    bumpGeneration(); // tells a running service that customers changed under it
  }).immediate();
  return inserted;
}
