// The seed on PostgreSQL (`npm run seed` with DATABASE_URL, and the bench): customers copied in one transaction with
// COPY, the triggers of customers off meanwhile (they would count and log a million rows one statement at a time),
// then what they keep built in bulk: the aggregate tables recomputed with one GROUP BY each (the SQL SQLite's recovery
// runs), the generation moved once, and one 'reload' row in the change log so that running instances reload their
// audience index. Into a table holding fewer rows than the seed adds, the secondary indexes are dropped before the copy
// and built again after it, as SQLite's bulk load does into an empty table: one sort beats a million index updates.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { countryKey, type CustomerRecord } from '../../domain/customers.ts';
import { PostgresEngine, type PgSql } from '../../db/pg-engine.ts';
import { migratePostgres } from '../../db/postgres/migrate.ts';
import { RECOMPUTE_AGGREGATES_SQL } from '../bulk/recovery.ts';
import { compiled, CUSTOMER_FIELDS, INSERT_COLUMNS, read } from '../store/fields.ts';
import { CHANGES_CHANNEL } from './change-feed.ts';
import { escapeCopy } from './import-chunk.ts';

/** What a seed did: the rows added, the ids they got, and the generation it took. */
export interface PgSeedResult {
  inserted: number;
  firstId: number;
  lastId: number;
  generation: number;
}

export interface PgSeedOptions {
  /** Creation and update time of the rows (now by default). */
  now?: Date;
  /** Hears the running count every 50,000 rows. */
  onProgress?: (copied: number) => void;
}

/** Returns the COPY line (INSERT_COLUMNS' order) of a record stamped `at`. */
const copyLine = compiled<(r: CustomerRecord, at: number) => string>(
  'seedCopyLine',
  ['r', 'at'],
  `return ${CUSTOMER_FIELDS.map((f) => (f.sqlType === 'TEXT' ? `escapeCopy(${read('r', f.key)})` : read('r', f.key))).join(" + '\\t' + ")}` +
    ` + '\\t' + escapeCopy(countryKey(r.country)) + '\\t' + at + '\\t' + at + '\\n';`,
  { escapeCopy, countryKey },
);

/** The one row an aggregate query answers. */
function only<T>(rows: readonly T[]): T {
  if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
  return rows[0]!;
}

const PROGRESS_EVERY = 50_000;
/** Lines per piece written to COPY. */
const PIECE = 1000;

/**
 * The records as the text of `COPY customers INSERT_COLUMNS FROM STDIN` (stamped `at`), a piece of lines at a time,
 * telling `onProgress` as they go. The bench stages the same text for PostgreSQL alone.
 */
export function* customersCopyText(records: Iterable<CustomerRecord>, at: number, onProgress: (copied: number) => void = () => {}): Generator<string> {
  let lines: string[] = [];
  let copied = 0;
  for (const record of records) {
    lines.push(copyLine(record, at));
    if (lines.length === PIECE) {
      yield lines.join('');
      lines = [];
    }
    if (++copied % PROGRESS_EVERY === 0) onProgress(copied);
  }
  if (lines.length > 0) yield lines.join('');
  onProgress(copied);
}

/** The secondary indexes of customers (not the primary key nor a constraint's), with their definitions. */
async function secondaryIndexes(tx: PgSql): Promise<{ name: string; definition: string }[]> {
  return tx<{ name: string; definition: string }[]>`
    SELECT i.relname AS name, pg_get_indexdef(x.indexrelid) AS definition
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
    WHERE x.indrelid = 'customers'::regclass AND NOT x.indisprimary
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)
    ORDER BY i.relname`;
}

/** Copies the records into customers in the transaction `tx`, rebuilding the secondary indexes when that is cheaper. */
async function copyCustomers(tx: PgSql, records: Iterable<CustomerRecord>, count: number, at: number, onProgress: (copied: number) => void): Promise<void> {
  const { n } = only(await tx<{ n: number }[]>`SELECT count(*) AS n FROM (SELECT 1 FROM customers LIMIT ${count}) AS present`);
  const rebuilt = n < count ? await secondaryIndexes(tx) : [];
  for (const index of rebuilt) await tx.unsafe(`DROP INDEX ${index.name}`);
  await pipeline(Readable.from(customersCopyText(records, at, onProgress)), await tx.unsafe(`COPY customers ${INSERT_COLUMNS} FROM STDIN`).writable());
  if (rebuilt.length === 0) return;
  // A sort in memory (the trigram index's above all) is several times faster than one spilled to disk.
  await tx`SELECT set_config('maintenance_work_mem', '512MB', true)`;
  for (const index of rebuilt) await tx.unsafe(index.definition);
}

/**
 * Adds the records (`count` of them, emails new and unique) to the customers of `engine`'s database in one
 * transaction, with the aggregates, the generation and a 'reload' change-log row that tells running instances to
 * reload. Customer writes and reads wait meanwhile (the table is locked to turn its triggers off); a seed killed
 * part-way leaves nothing. Rejects with what PostgreSQL answered (a taken email: 23505).
 */
async function seedInTransaction(engine: PostgresEngine, records: Iterable<CustomerRecord>, count: number, options: PgSeedOptions): Promise<PgSeedResult> {
  const at = (options.now ?? new Date()).getTime();
  return engine.write(async (tx) => {
    // The table lock first, as every statement on customers takes it before the generation row (the triggers' order).
    await tx`ALTER TABLE customers DISABLE TRIGGER USER`;
    const { generation } = only(await tx<{ generation: number }[]>`
      INSERT INTO meta AS m (key, value) VALUES ('customers_generation', 1)
      ON CONFLICT (key) DO UPDATE SET value = m.value + 1 RETURNING value AS generation`);
    const { before } = only(await tx<{ before: number }[]>`SELECT coalesce(max(id), 0) AS before FROM customers`);
    await copyCustomers(tx, records, count, at, options.onProgress ?? (() => {}));
    const { inserted, firstId, lastId } = only(await tx<PgSeedResult[]>`
      SELECT count(*) AS inserted, coalesce(min(id), 0) AS "firstId", coalesce(max(id), 0) AS "lastId" FROM customers WHERE id > ${before}`);
    await tx.unsafe(RECOMPUTE_AGGREGATES_SQL);
    await tx`INSERT INTO customer_changes (generation, op) VALUES (${generation}, 'reload')`;
    await tx`ALTER TABLE customers ENABLE TRIGGER USER`;
    engine.notify(CHANGES_CHANNEL, String(generation));
    return { inserted, firstId, lastId, generation };
  });
}

/** Refreshes the planner's statistics and the visibility map after a seed: plans and index-only scans count on them. */
async function tidyUp(engine: PostgresEngine): Promise<void> {
  await engine.sql`VACUUM (ANALYZE) customers, customer_totals, customer_days, customer_countries`;
}

/**
 * Seeds the PostgreSQL database at `target` (an engine, or a URL opened and closed here; its schema created or
 * upgraded first) with the records, `count` of them: see seedInTransaction. Resolves to what it did.
 */
export async function seedPostgres(target: PostgresEngine | string, records: Iterable<CustomerRecord>, count: number, options: PgSeedOptions = {}): Promise<PgSeedResult> {
  const engine = typeof target === 'string' ? new PostgresEngine(target, { max: 2 }) : target;
  try {
    await migratePostgres(engine);
    const result = await seedInTransaction(engine, records, count, options);
    await tidyUp(engine);
    return result;
  } finally {
    if (engine !== target) await engine.close();
  }
}

/** Resolves to the first serial of synthetic emails a seed should use: one past the highest customer id, as on SQLite. */
export async function nextSeedSerial(target: PostgresEngine | string): Promise<number> {
  const engine = typeof target === 'string' ? new PostgresEngine(target, { max: 1 }) : target;
  try {
    await migratePostgres(engine);
    return only(await engine.sql<{ next: number }[]>`SELECT coalesce(max(id), 0) + 1 AS next FROM customers`).next;
  } finally {
    if (engine !== target) await engine.close();
  }
}
