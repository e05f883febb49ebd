// Recovery of the customer tables after a bulk load (a seed) was killed part-way: the rows it committed are kept,
// and what it would have built for them at the end is built now. Run by the service at start-up and by the seed.
import { DAY_MS } from '../../domain/customers.ts';
import type { Db } from '../../db/database.ts';
import { generationBumper } from '../store/generation.ts';
import { BULK_LOAD_KEY } from './bulk-load.ts';

/** The UTC day of last_activity_at, floor division in integers on both engines (their % keeps the dividend's sign). */
const DAY = `((last_activity_at - (((last_activity_at % ${DAY_MS}) + ${DAY_MS}) % ${DAY_MS})) / ${DAY_MS})`;

/** The aggregate tables recomputed from the customers, one GROUP BY each: SQL both engines run (the seed on PostgreSQL too). */
export const RECOMPUTE_AGGREGATES_SQL = `
  DELETE FROM customer_totals;
  INSERT INTO customer_totals (status, customers, amount_cents) SELECT status, count(*), sum(amount_cents) FROM customers GROUP BY status;
  DELETE FROM customer_days;
  INSERT INTO customer_days (status, day, customers, amount_cents)
    SELECT status, ${DAY}, count(*), sum(amount_cents) FROM customers GROUP BY status, ${DAY};
  DELETE FROM customer_countries;
  INSERT INTO customer_countries (country_key, status, customers) SELECT country_key, status, count(*) FROM customers GROUP BY country_key, status;
`;

/**
 * Finishes what a bulk load killed part-way left undone, in one transaction: the search index gets the rows from the
 * load's first id on, the aggregate tables are recomputed from the rows, and the generation moves. Returns whether
 * there was anything to repair. Called at start-up and before a seed; the dropped indexes came back with schema.sql
 * when openDatabase ran. Writes on `db` itself, as the upgrades of openDatabase do: it runs before the service
 * serves anything or starts its import writer (or in the seed's own process), so no write has a turn to wait for.
 */
export function repairInterruptedBulkLoad(db: Db): boolean {
  const from = db.prepare(`SELECT value FROM meta WHERE key = '${BULK_LOAD_KEY}'`).pluck().get() as number | undefined;
  if (from === undefined) return false;
  const bumpGeneration = generationBumper(db);
  db.transaction(() => {
    db.prepare('DELETE FROM customer_search WHERE rowid >= ?').run(from);
    db.prepare(`INSERT INTO customer_search (rowid, text) SELECT id, name || char(10) || email FROM customers WHERE id >= ?`).run(from);
    db.exec(`${RECOMPUTE_AGGREGATES_SQL} DELETE FROM meta WHERE key = '${BULK_LOAD_KEY}';`);
    bumpGeneration();
  }).immediate();
  return true;
}
