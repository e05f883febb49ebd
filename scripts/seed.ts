// `npm run seed -- --customers N [--database PATH] [--seed S]`: add N synthetic customers to a database.
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/db/database.ts';
import { bulkInsertCustomers, repairInterruptedBulkLoad } from '../src/customers/index.ts';
import { syntheticCustomers } from './synthetic-customers.ts';

/** Adds `count` synthetic customers to the database at `path` and returns the rows per second achieved. */
export function seedDatabase(path: string, count: number, options: { seed?: number; now?: Date; quiet?: boolean } = {}): number {
  const db = openDatabase(path);
  // A bulk load is the only writer and can be redone: a large cache and no fsync make it several times faster.
  db.pragma('cache_size = -1000000');
  db.pragma('synchronous = OFF');
  const started = performance.now();
  const firstSerial = (db.prepare('SELECT coalesce(max(id), 0) + 1 AS n FROM customers').get() as { n: number }).n;
  // On a terminal one progress line is rewritten in place; in a log (stderr not a terminal) each is a whole line.
  const live = !options.quiet && process.stderr.isTTY;
  const progress = (inserted: number) => {
    if (options.quiet) return;
    const rate = Math.round(inserted / ((performance.now() - started) / 1000));
    const line = `seeding: ${inserted.toLocaleString('en')} / ${count.toLocaleString('en')} rows (${rate.toLocaleString('en')} rows/s)`;
    process.stderr.write(live ? `\r${line}` : `${line}\n`);
  };
  // A seed killed part-way is finished before this one adds to it.
  repairInterruptedBulkLoad(db);
  bulkInsertCustomers(db, syntheticCustomers(count, { seed: options.seed ?? firstSerial, now: options.now, firstSerial }), new Date(), progress);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const rate = Math.round(count / ((performance.now() - started) / 1000));
  if (!options.quiet) process.stderr.write(`${live ? '\r' : ''}seeded ${count.toLocaleString('en')} customers into ${path} at ${rate.toLocaleString('en')} rows/s, search index and aggregates included\n`);
  return rate;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { customers: { type: 'string' }, database: { type: 'string' }, seed: { type: 'string' } } });
  const count = Number(values.customers);
  if (!Number.isSafeInteger(count) || count < 1) {
    process.stderr.write('Usage: npm run seed -- --customers N [--database PATH] [--seed S]\n');
    process.exit(2);
  }
  seedDatabase(values.database ?? process.env.DATABASE_PATH ?? './data/campaigns.db', count, {
    seed: values.seed === undefined ? undefined : Number(values.seed),
  });
}
