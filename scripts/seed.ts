// `npm run seed -- --customers N [--database PATH | --database-url URL] [--seed S]`: add N synthetic customers to a
// database: the SQLite file (DATABASE_PATH), or the PostgreSQL database of DATABASE_URL (or --database-url) when set.
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/db/database.ts';
import { PostgresEngine } from '../src/db/pg-engine.ts';
import { bulkInsertCustomers, nextSeedSerial, repairInterruptedBulkLoad, seedPostgres } from '../src/customers/index.ts';
import { syntheticCustomers } from './synthetic-customers.ts';

interface SeedOptions {
  seed?: number;
  now?: Date;
  quiet?: boolean;
}

/** Reports progress on stderr: one line rewritten in place on a terminal, whole lines in a log. */
function progressReporter(count: number, options: SeedOptions) {
  const started = performance.now();
  const live = !options.quiet && process.stderr.isTTY;
  const rate = () => Math.round(count / ((performance.now() - started) / 1000));
  return {
    progress(inserted: number) {
      if (options.quiet) return;
      const perSecond = Math.round(inserted / ((performance.now() - started) / 1000));
      const line = `seeding: ${inserted.toLocaleString('en')} / ${count.toLocaleString('en')} rows (${perSecond.toLocaleString('en')} rows/s)`;
      process.stderr.write(live ? `\r${line}` : `${line}\n`);
    },
    /** Logs the end and returns the rows per second of the whole seed. */
    done(where: string): number {
      const perSecond = rate();
      if (!options.quiet) {
        process.stderr.write(`${live ? '\r' : ''}seeded ${count.toLocaleString('en')} customers into ${where} at ${perSecond.toLocaleString('en')} rows/s, search index and aggregates included\n`);
      }
      return perSecond;
    },
  };
}

/** Adds `count` synthetic customers to the database at `path` and returns the rows per second achieved. */
export function seedDatabase(path: string, count: number, options: SeedOptions = {}): number {
  const db = openDatabase(path);
  // A bulk load is the only writer and can be redone: a large cache and no fsync make it several times faster.
  db.pragma('cache_size = -1000000');
  db.pragma('synchronous = OFF');
  const reporter = progressReporter(count, options);
  const firstSerial = (db.prepare('SELECT coalesce(max(id), 0) + 1 AS n FROM customers').get() as { n: number }).n;
  // A seed killed part-way is finished before this one adds to it.
  repairInterruptedBulkLoad(db);
  bulkInsertCustomers(db, syntheticCustomers(count, { seed: options.seed ?? firstSerial, now: options.now, firstSerial }), new Date(), reporter.progress);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return reporter.done(path);
}

/**
 * Adds `count` synthetic customers (the same as `seedDatabase` would add to a base with the same highest id) to the
 * PostgreSQL database at `url`, its schema created first when missing; resolves to the rows per second achieved.
 */
export async function seedPostgresDatabase(url: string, count: number, options: SeedOptions = {}): Promise<number> {
  const engine = new PostgresEngine(url, { max: 2 });
  try {
    const reporter = progressReporter(count, options);
    const firstSerial = await nextSeedSerial(engine);
    const records = syntheticCustomers(count, { seed: options.seed ?? firstSerial, now: options.now, firstSerial });
    await seedPostgres(engine, records, count, { onProgress: reporter.progress });
    return reporter.done(new URL(url).pathname.slice(1) || url);
  } finally {
    await engine.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { customers: { type: 'string' }, database: { type: 'string' }, 'database-url': { type: 'string' }, seed: { type: 'string' } },
  });
  const count = Number(values.customers);
  if (!Number.isSafeInteger(count) || count < 1) {
    process.stderr.write('Usage: npm run seed -- --customers N [--database PATH | --database-url URL] [--seed S]\n');
    process.exit(2);
  }
  const seed = values.seed === undefined ? undefined : Number(values.seed);
  const url = values['database-url'] ?? (values.database === undefined ? process.env.DATABASE_URL : undefined);
  if (url) await seedPostgresDatabase(url, count, { seed });
  else seedDatabase(values.database ?? process.env.DATABASE_PATH ?? './data/campaigns.db', count, { seed });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
