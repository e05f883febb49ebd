// The seed on PostgreSQL (src/customers/postgres/seed.ts, `npm run seed` with DATABASE_URL): COPY with the triggers
// off, then the aggregates, the generation and the change log's 'reload' row built in bulk, against the real server
// `npm run test:pg` starts. Each test seeds a database of its own.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { seedPostgres } from '../../src/customers/index.ts';
import type { CustomerRecord } from '../../src/domain/customers.ts';
import type { PostgresEngine } from '../../src/db/pg-engine.ts';
import { seedPostgresDatabase } from '../../scripts/seed.ts';
import { syntheticCustomers } from '../../scripts/synthetic-customers.ts';
import { freshInstances } from '../support/postgres.ts';

const engines: PostgresEngine[] = [];

after(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

/** The one row a query answers. */
async function one<T>(rows: Promise<readonly T[]>): Promise<T> {
  const [row] = await rows;
  assert.ok(row, 'a row');
  return row;
}

/** The customers generation of the database. */
const generationOf = async (engine: PostgresEngine) =>
  (await one(engine.sql<{ value: number }[]>`SELECT value FROM meta WHERE key = 'customers_generation'`)).value;

/** A fresh database with the schema, and two instances on it. */
async function fresh(): Promise<[PostgresEngine, PostgresEngine]> {
  const pair = await freshInstances('seed', 2);
  engines.push(...pair);
  return pair as [PostgresEngine, PostgresEngine];
}

/** Customers COPY must escape (a tab, a backslash, a line break), and one active before 1970 (a negative day). */
const AWKWARD: CustomerRecord[] = [
  { name: 'Tab\there \\ back\nslash', email: 'awkward.1@example.com', country: ' Côte d\'Ivoire ', totalTransactions: 3, amountCents: 1999, lastActivityAt: -1, status: 'churned' },
  { name: 'Zoë Ünal', email: 'awkward.2@example.com', country: 'germany', totalTransactions: 0, amountCents: 0, lastActivityAt: 86_400_000 * 20_000 + 5, status: 'active' },
];

/** The aggregate tables as stored, next to the same sums computed from customers by a naive GROUP BY each. */
async function aggregatesAndNaive(engine: PostgresEngine) {
  const { sql } = engine;
  const stored = {
    totals: await sql`SELECT status, customers, amount_cents FROM customer_totals WHERE customers <> 0 OR amount_cents <> 0 ORDER BY status`,
    days: await sql`SELECT status, day, customers, amount_cents FROM customer_days ORDER BY status, day`,
    countries: await sql`SELECT country_key, status, customers FROM customer_countries ORDER BY country_key, status`,
  };
  const naive = {
    totals: await sql`SELECT status, count(*) AS customers, sum(amount_cents)::bigint AS amount_cents FROM customers GROUP BY status ORDER BY status`,
    days: await sql`
      SELECT status, floor(last_activity_at / 86400000.0)::integer AS day, count(*) AS customers, sum(amount_cents)::bigint AS amount_cents
      FROM customers GROUP BY 1, 2 ORDER BY 1, 2`,
    countries: await sql`SELECT country_key, status, count(*) AS customers FROM customers GROUP BY 1, 2 ORDER BY 1, 2`,
  };
  const plain = (rows: readonly object[]) => rows.map((r) => ({ ...r }) as Record<string, string | number>);
  return {
    stored: { totals: plain(stored.totals), days: plain(stored.days), countries: plain(stored.countries) },
    naive: { totals: plain(naive.totals), days: plain(naive.days), countries: plain(naive.countries) },
  };
}

test('a seed into an empty base leaves aggregates equal to a naive GROUP BY over customers, and the rows as given', async () => {
  const [engine] = await fresh();
  const records = [...AWKWARD, ...syntheticCustomers(3000, { seed: 5, firstSerial: 1 })];
  const result = await seedPostgres(engine, records, records.length, { now: new Date('2026-03-01T00:00:00Z') });
  assert.equal(result.inserted, records.length);
  const { stored, naive } = await aggregatesAndNaive(engine);
  assert.deepEqual(stored, naive);
  assert.equal(stored.totals.length, 3);
  assert.ok(stored.days.some((d) => d.day === -1), 'an instant before 1970 counts on day -1');
  const [awkward] = await engine.sql`SELECT name, country, country_key, created_at FROM customers WHERE email = 'awkward.1@example.com'`;
  assert.deepEqual({ ...awkward }, { name: AWKWARD[0]!.name, country: AWKWARD[0]!.country, country_key: "côte d'ivoire", created_at: Date.parse('2026-03-01T00:00:00Z') });
  // The dropped indexes were built again.
  const indexes = await engine.sql<{ indexname: string }[]>`SELECT indexname FROM pg_indexes WHERE tablename = 'customers' ORDER BY 1`;
  assert.deepEqual(
    indexes.map((i) => i.indexname),
    ['customers_by_activity', 'customers_by_amount', 'customers_by_country', 'customers_by_email', 'customers_by_name', 'customers_by_transactions', 'customers_pkey', 'customers_search'],
  );
});

test('a seed into a base that has customers adds to it and the aggregates count both, the triggers on again after it', async () => {
  const [engine] = await fresh();
  // Written through the triggers: they keep the aggregates of these rows.
  await engine.sql`
    INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
    SELECT 'Before ' || n, 'before.' || n || '@example.com', 'Spain', 'spain', n, n * 100, 1700000000000 + n, 'inactive', 1, 1
    FROM generate_series(1, 500) AS n`;
  const records = [...syntheticCustomers(200, { seed: 6, firstSerial: 1000 })];
  const result = await seedPostgres(engine, records, records.length);
  assert.equal(result.inserted, 200);
  assert.ok(result.firstId > 500, 'the ids of the seed come after the stored ones');
  let { stored, naive } = await aggregatesAndNaive(engine);
  assert.deepEqual(stored, naive);
  assert.equal(stored.totals.reduce((n, t) => n + Number(t.customers), 0), 700);

  // Ids continue after the seed, and the triggers count a later write again.
  const [later] = await engine.sql<{ id: number }[]>`
    INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
    VALUES ('After', 'after@example.com', 'Peru', 'peru', 1, 500, 1700000000000, 'active', 2, 2) RETURNING id`;
  assert.ok(later!.id > result.lastId, `a later insert gets an id (${later!.id}) above the seed's last (${result.lastId})`);
  ({ stored, naive } = await aggregatesAndNaive(engine));
  assert.deepEqual(stored, naive);
  assert.ok(stored.countries.some((c) => c.country_key === 'peru'));
});

test('a seed takes one generation, logs one reload row with it, and notifies running instances', async () => {
  const [engine, other] = await fresh();
  const before = await generationOf(engine);
  let stopListening = () => {};
  const heard = new Promise<string>((resolve, reject) => {
    const listening = new Promise<void>((ready) => {
      stopListening = other.listen('customer_changes', resolve, ready);
    });
    listening.then(() => seedPostgres(engine, syntheticCustomers(50, { seed: 7 }), 50)).catch(reject);
  });
  const payload = await heard;
  stopListening();
  const after = await generationOf(engine);
  assert.equal(after, before + 1);
  assert.equal(payload, String(after));
  const changes = await engine.sql`SELECT generation, op, customer_id FROM customer_changes ORDER BY generation, seq`;
  assert.deepEqual(changes.map((c) => ({ ...c })), [{ generation: after, op: 'reload', customer_id: null }]);
});

test('a seed that fails part-way (a taken email) leaves nothing: no rows, no generation, triggers on', async () => {
  const [engine] = await fresh();
  const taken = [...syntheticCustomers(10, { seed: 8, firstSerial: 1 })];
  await seedPostgres(engine, taken, taken.length);
  const before = await generationOf(engine);
  const again = [...syntheticCustomers(100, { seed: 9, firstSerial: 500 }), taken[3]!];
  await assert.rejects(seedPostgres(engine, again, again.length), (error: { code?: string }) => error.code === '23505');
  const { n } = await one(engine.sql<{ n: number }[]>`SELECT count(*) AS n FROM customers`);
  assert.equal(n, 10);
  const after = await generationOf(engine);
  assert.equal(after, before);
  const triggers = await engine.sql<{ tgenabled: string }[]>`SELECT tgenabled FROM pg_trigger WHERE tgrelid = 'customers'::regclass AND NOT tgisinternal`;
  assert.ok(triggers.length > 0 && triggers.every((t) => t.tgenabled === 'O'), 'the triggers are enabled');
});

test('npm run seed with DATABASE_URL seeds the synthetic customers there, emails following the highest id', async () => {
  const [engine] = await fresh();
  const url = urlOf(engine);
  await seedPostgresDatabase(url, 120, { quiet: true });
  await seedPostgresDatabase(url, 30, { quiet: true });
  const { n, distinct } = await one(engine.sql<{ n: number; distinct: number }[]>`SELECT count(*) AS n, count(DISTINCT email) AS distinct FROM customers`);
  assert.equal(n, 150);
  assert.equal(distinct, 150);
  const { stored, naive } = await aggregatesAndNaive(engine);
  assert.deepEqual(stored, naive);
});

/** The URL the engine was opened on. */
function urlOf(engine: PostgresEngine): string {
  const { host, port, database, user } = engine.sql.options;
  return `postgres://${user}@${host[0]}:${port[0]}/${database}`;
}
