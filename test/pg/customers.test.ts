// The customer store on PostgreSQL (src/customers/postgres/store.ts, export.ts, and the triggers of schema.sql),
// against the real server `npm run test:pg` starts, each test in a database of its own. The triggers keep the
// aggregate tables and the change log whoever writes customers: checked against naive GROUP BYs after mixed writes,
// also with 20 writers at once on two instances; search against a naive filter; the export against the table.
import { createPgCustomerExport, createPgCustomerRepository, type CustomerRepository } from '../../src/customers/index.ts';
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { CUSTOMER_STATUSES, DAY_MS, type CustomerRecord, type CustomerSort, type CustomerStatus } from '../../src/domain/customers.ts';
import { AppError } from '../../src/domain/errors.ts';
import { ANY_STATUS, STATUS_BIT, type Bounds } from '../../src/domain/segments.ts';
import type { PostgresEngine } from '../../src/db/pg-engine.ts';
import { freshInstances } from '../support/postgres.ts';

const engines: PostgresEngine[] = [];
after(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

const now = new Date('2026-03-01T12:00:00.000Z');
const BASE = Date.UTC(2026, 0, 1);

/** A feed standing for PgChangeFeed: catching up reads the committed generation, which `generation()` then tells. */
function testFeed(engine: PostgresEngine) {
  let published = 0;
  return {
    async catchUp() {
      const [row] = await engine.sql<{ value: number }[]>`SELECT value FROM meta WHERE key = 'customers_generation'`;
      published = row!.value;
    },
    generation: () => published,
  };
}

/** A fresh database and `n` instances on it, each with its repository. */
async function fresh(n = 1) {
  const instances = await freshInstances('customers', n);
  engines.push(...instances);
  return { engines: instances, repos: instances.map((e) => createPgCustomerRepository(e, testFeed(e))), sql: instances[0]!.sql };
}

const COUNTRIES = ['Norway', 'NORWAY', 'Brazil', "Côte d'Ivoire", 'Japan'];

/** The i-th customer of a test: every field varies with i, including activity before 1970 and on day boundaries. */
function record(i: number, over: Partial<CustomerRecord> = {}): CustomerRecord {
  const activity = [BASE + (i % 97) * 3_600_000 * 7, -1, -DAY_MS, -DAY_MS - 1, 0, DAY_MS - 1][i % 6]!;
  return {
    name: `Customer ${i}`,
    email: `c${i}@example.com`,
    country: COUNTRIES[i % COUNTRIES.length]!,
    totalTransactions: i % 11,
    amountCents: (i * 7919) % 100_000,
    lastActivityAt: activity,
    status: CUSTOMER_STATUSES[i % 3]!,
    ...over,
  };
}

/** Returns rows as plain objects, for deepEqual. */
const plain = <T extends object>(rows: readonly T[]): T[] => rows.map((r) => (Array.isArray(r) ? [...r] : { ...r }) as T);

/** Asserts that the aggregate tables hold exactly what GROUP BYs over customers give, and that the stats read them. */
async function assertAggregatesExact(sql: PostgresEngine['sql'], repo: CustomerRepository): Promise<void> {
  const totals = await sql`SELECT status, count(*)::bigint AS customers, sum(amount_cents)::bigint AS amount_cents FROM customers GROUP BY status ORDER BY status`;
  const keptTotals = await sql`SELECT status, customers, amount_cents FROM customer_totals WHERE customers <> 0 OR amount_cents <> 0 ORDER BY status`;
  assert.deepEqual(plain(keptTotals), plain(totals), 'customer_totals');
  assert.equal((await sql`SELECT 1 FROM customer_totals WHERE customers < 0 OR (customers = 0 AND amount_cents <> 0)`).length, 0);
  const days = await sql`
    SELECT status, floor(last_activity_at / 86400000.0)::integer AS day, count(*)::bigint AS customers, sum(amount_cents)::bigint AS amount_cents
    FROM customers GROUP BY 1, 2 ORDER BY 1, 2`;
  assert.deepEqual(plain(await sql`SELECT status, day, customers, amount_cents FROM customer_days ORDER BY status, day`), plain(days), 'customer_days, no empty row');
  const countries = await sql`SELECT country_key, status, count(*)::bigint AS customers FROM customers GROUP BY 1, 2 ORDER BY 1, 2`;
  assert.deepEqual(plain(await sql`SELECT country_key, status, customers FROM customer_countries ORDER BY 1, 2`), plain(countries), 'customer_countries, no empty row');

  const expected = Object.fromEntries(CUSTOMER_STATUSES.map((s) => [s, { customers: 0, cents: 0 }]));
  for (const t of totals) expected[t.status as CustomerStatus] = { customers: t.customers, cents: t.amount_cents };
  assert.deepEqual(await repo.stats.totalsByStatus(), expected);
  const [norway] = await sql`SELECT count(*) AS n, count(*) FILTER (WHERE status = 'churned') AS churned FROM customers WHERE country_key = 'norway'`;
  assert.equal(await repo.stats.countMatching(undefined, 'norway'), norway!.n);
  assert.equal(await repo.stats.countMatching('churned', 'norway'), norway!.churned);
  assert.equal(await repo.stats.countMatching(undefined, undefined), totals.reduce((n, t) => n + t.customers, 0));
  const health = new Date(BASE + 75 * DAY_MS + 5 * 3_600_000);
  const [stale] = await sql`SELECT count(*) AS n FROM customers WHERE status = 'active' AND last_activity_at < ${health.getTime() - 60 * DAY_MS}`;
  assert.equal((await repo.stats.healthInputs(health)).staleActives, stale!.n);
  const inRange = days.filter((d) => d.day >= -1 && d.day < 20_460);
  assert.deepEqual(
    plain(await repo.stats.daysBetween(-1, 20_460)).sort((a, b) => a.day - b.day || a.status.localeCompare(b.status)),
    plain(inRange).sort((a, b) => a.day - b.day || a.status.localeCompare(b.status)),
  );
}

const isNotFound = (error: unknown) => error instanceof AppError && error.code === 'not_found';

test('inserts, imports, updates and deletes keep the aggregates equal to a GROUP BY of customers', async () => {
  const { repos, sql, engines: [engine] } = await fresh();
  const repo = repos[0]!;
  const ids = (await repo.insertCustomers(Array.from({ length: 60 }, (_, i) => record(i)), now)) as string[];
  await assertAggregatesExact(sql, repo);
  await repo.importCustomers(Array.from({ length: 30 }, (_, i) => record(i + 45, { amountCents: i, status: 'churned' })), now, 'update');
  await repo.importCustomers(Array.from({ length: 20 }, (_, i) => record(i + 80)), now, 'skip');
  for (let i = 0; i < 20; i++) await repo.updateCustomer(ids[i]!, { status: CUSTOMER_STATUSES[(i + 1) % 3], lastActivityAt: BASE + i * DAY_MS, country: 'Peru' }, now);
  for (let i = 20; i < 35; i++) await repo.deleteCustomer(ids[i]!);
  // Written outside the repository (as a CSV job or the move would): the triggers count these too.
  await engine!.sql`UPDATE customers SET amount_cents = amount_cents + 1, last_activity_at = last_activity_at - ${DAY_MS} WHERE id % 3 = 0`;
  await engine!.sql`
    INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
    VALUES ('Direct', 'c1@example.com', 'Peru', 'peru', 1, 5, 0, 'active', 0, 0), ('Direct', 'direct@example.com', 'Peru', 'peru', 1, 5, 0, 'active', 0, 0)
    ON CONFLICT (email) DO UPDATE SET status = 'inactive', amount_cents = 77`;
  await assertAggregatesExact(sql, repo);
  // Every customer of a day or a country gone: those rows go, the status totals stay at zero.
  await engine!.sql`DELETE FROM customers`;
  await assertAggregatesExact(sql, repo);
  assert.deepEqual(plain(await sql`SELECT count(*) AS n FROM customer_days UNION ALL SELECT count(*) FROM customer_countries`), [{ n: 0 }, { n: 0 }]);
  assert.deepEqual(plain(await sql`SELECT customers, amount_cents FROM customer_totals WHERE customers <> 0 OR amount_cents <> 0`), []);
});

test('the repository answers as the SQLite one: ids, taken emails, imports, not_found and conflict', async () => {
  const { repos } = await fresh();
  const repo = repos[0]!;
  const a = record(1);
  const b = record(2);
  assert.deepEqual(await repo.insertCustomers([a, b, { ...a, name: 'Again' }], now), ['1', '2', null], 'the second record of an email meets it taken');
  assert.deepEqual(await repo.insertCustomers([a], now), [null]);
  assert.deepEqual(await repo.insertCustomers([], now), []);
  assert.equal((await repo.findCustomer('1'))!.name, a.name);
  assert.equal(await repo.findCustomer('01'), undefined);
  assert.equal(await repo.findCustomer('99'), undefined);
  assert.deepEqual(await repo.emailsStored([a.email, 'nobody@example.com', b.email]), new Set([a.email, b.email]));

  // Ids are opaque: a sequence hands out no number twice, but may skip some (an email found taken used one).
  const x = record(3);
  const skipping = await repo.importCustomers([x, a, { ...x, name: 'X again' }], now, 'skip');
  const xId = skipping[0]!.id;
  assert.deepEqual(skipping, [{ id: xId, updated: false }, null, null]);
  assert.ok(Number(xId) > 2);
  const y = record(4);
  const rows = await repo.importCustomers([{ ...a, name: 'A changed' }, y, { ...y, name: 'Y last' }, { ...a, name: 'A changed' }, b], now, 'update');
  const yId = rows[1]!.id;
  assert.deepEqual(rows, [
    { id: '1', updated: true },
    { id: yId, updated: false },
    { id: yId, updated: true },
    { id: '1', updated: true },
    { id: '2', updated: true },
  ]);
  assert.ok(Number(yId) > Number(xId));
  assert.equal((await repo.findCustomer('1'))!.name, 'A changed');
  assert.equal((await repo.findCustomer(yId))!.name, 'Y last');

  const updated = await repo.updateCustomer('2', { name: 'B renamed', amountCents: 1234, country: ' Peru ' }, new Date(now.getTime() + 1000));
  assert.deepEqual(updated, {
    id: '2',
    name: 'B renamed',
    email: b.email,
    country: ' Peru ',
    totalTransactions: b.totalTransactions,
    totalAmountSpent: 12.34,
    lastActivityDate: new Date(b.lastActivityAt).toISOString(),
    status: b.status,
  });
  assert.deepEqual(await repo.findCustomer('2'), updated);
  assert.equal(await repo.stats.countMatching(undefined, 'peru'), 1, 'the country key is the trimmed, lower-cased country');
  await assert.rejects(repo.updateCustomer('2', { email: a.email }, now), new AppError('conflict', `A customer with the email ${a.email} already exists.`));
  await assert.rejects(repo.updateCustomer('77', { name: 'Nobody' }, now), new AppError('not_found', 'No customer with id 77.'));
  await assert.rejects(repo.updateCustomer('x', { name: 'Nobody' }, now), new AppError('not_found', 'No customer with id x.'));
  await repo.deleteCustomer('2');
  await assert.rejects(repo.deleteCustomer('2'), new AppError('not_found', 'No customer with id 2.'));
  // Left: a (79.19), x (237.57) and y (316.76).
  assert.deepEqual((await repo.topCustomers(2)).map((c) => c.id), [yId, xId]);
  assert.deepEqual(await repo.countryNames(), ["Côte d'Ivoire", 'Japan', 'NORWAY']);
});

test('20 writers at once on two instances never deadlock and leave the aggregates exact and the generations dense', async () => {
  const { repos, sql, engines: instances } = await fresh(2);
  const seeded = (await repos[0]!.insertCustomers(Array.from({ length: 200 }, (_, i) => record(i)), now)) as string[];
  let seed = 42;
  const random = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const writer = async (w: number) => {
    const repo = repos[w % 2]!;
    for (let k = 0; k < 15; k++) {
      const id = seeded[random(seeded.length)]!;
      try {
        switch ((w + k) % 5) {
          case 0: // new customers, some racing another writer for one email
            await repo.insertCustomers([record(1000 + w * 100 + k), record(5000 + (k % 4)), record(2000 + w * 100 + k)], now);
            break;
          case 1: // status and day change
            await repo.updateCustomer(id, { status: CUSTOMER_STATUSES[random(3)], lastActivityAt: BASE + random(30) * DAY_MS, amountCents: random(5000) }, now);
            break;
          case 2:
            await repo.deleteCustomer(id);
            break;
          case 3: // stored emails that other writers replace too, and new ones
            await repo.importCustomers([record(random(200), { status: 'churned', amountCents: w }), record(6000 + w * 100 + k), record(random(200), { country: 'Peru' })], now, 'update');
            break;
          default: {
            // Two statements over the same customers in opposite orders: the turn each statement waits for first
            // (customers_write_turn) means neither holds a customer row the other waits for.
            const few = [seeded[random(50)]!, seeded[50 + random(50)]!];
            const order = w % 2 === 0 ? few : few.reverse();
            await instances[w % 2]!.write(async (tx) => {
              for (const one of order) await tx`UPDATE customers SET status = 'inactive', last_activity_at = last_activity_at + ${DAY_MS} WHERE id = ${Number(one)}`;
            });
          }
        }
      } catch (error) {
        if (!isNotFound(error)) throw error; // a customer another writer deleted: the only failure expected
      }
    }
  };
  const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, w) => writer(w)));
  const failures = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => o.reason as Error);
  assert.deepEqual(failures.map((e) => `${(e as { code?: string }).code}: ${e.message}`), [], 'no deadlock (40P01) nor any other failure');
  await assertAggregatesExact(sql, repos[0]!);
  const [{ generation }] = (await sql<{ generation: number }[]>`SELECT value AS generation FROM meta WHERE key = 'customers_generation'`) as unknown as [{ generation: number }];
  const logged = (await sql<{ generation: number }[]>`SELECT DISTINCT generation FROM customer_changes ORDER BY generation`).map((r) => r.generation);
  assert.deepEqual(logged, Array.from({ length: generation }, (_, i) => i + 1), 'every generation logged, none skipped');
  assert.ok(generation > 200, `most writes changed customers (${generation} generations)`);
});

test('each transaction that changes customers logs its changes under the next generation, and notifies it', async () => {
  const { repos, sql, engines: [engine] } = await fresh();
  const repo = repos[0]!;
  const heard: string[] = [];
  let fifth: () => void;
  const heardFifth = new Promise<void>((resolve) => (fifth = resolve));
  await new Promise<void>((listening) => {
    engine!.listen('customer_changes', (payload) => {
      heard.push(payload);
      if (payload === '5') fifth();
    }, listening);
  });
  const [a, b, c] = [record(1), record(2), record(3)];
  await repo.insertCustomers([a, b, a], now); // 1
  await repo.insertCustomers([a], now); // nothing stored: no generation
  await repo.updateCustomer('1', { status: 'churned' }, now); // 2
  await assert.rejects(repo.updateCustomer('1', { email: b.email }, now)); // rolled back: no generation
  await repo.deleteCustomer('2'); // 3
  // 4: the last record of an email gives its fields; the new customer is logged after the replaced one.
  const [, { id: cId }] = (await repo.importCustomers([{ ...a, status: 'active' }, c, { ...a, amountCents: 5 }], now, 'update')) as unknown as [{ id: string }, { id: string }];
  await repo.importCustomers([c], now, 'update'); // unchanged: no write, no generation
  await assert.rejects(
    engine!.write(async (tx) => {
      await tx`UPDATE customers SET status = 'active'`;
      throw new Error('undone');
    }),
  );
  await engine!.write(async (tx) => {
    await tx`UPDATE customers SET total_transactions = 9 WHERE id = 1`;
    await tx`DELETE FROM customers WHERE id = ${Number(cId)}`;
  }); // 5
  const facts = (id: number, r: CustomerRecord) => [id, r.country.toLowerCase(), r.status, r.totalTransactions, r.amountCents, r.lastActivityAt];
  const log = await sql`
    SELECT generation, op, customer_id, country_key, status, total_transactions, amount_cents, last_activity_at
    FROM customer_changes ORDER BY generation, seq`.values();
  assert.deepEqual(plain(log), [
    [1, 'upsert', ...facts(1, a)],
    [1, 'upsert', ...facts(2, b)],
    [2, 'upsert', ...facts(1, { ...a, status: 'churned' })],
    [3, 'delete', 2, null, null, null, null, null],
    [4, 'upsert', ...facts(1, { ...a, amountCents: 5 })],
    [4, 'upsert', ...facts(Number(cId), c)],
    [5, 'upsert', ...facts(1, { ...a, amountCents: 5, totalTransactions: 9 })],
    [5, 'delete', Number(cId), null, null, null, null, null],
  ]);
  assert.deepEqual(plain(await sql`SELECT value FROM meta WHERE key = 'customers_generation'`), [{ value: 5 }]);
  await heardFifth;
  assert.deepEqual(heard, ['1', '2', '3', '4', '5']);
});

/** The customers of the search test: cases, accents, and the characters LIKE gives a meaning to. */
const NAMED: [string, string][] = [
  ['Zoë Quartermain', 'zq@harbour.example'],
  ['ZOË ZOLA', 'zz@ZOLA.example'.toLowerCase()],
  ['Émile Zola', 'emile@zola.example'],
  ['émile zola', 'emile2@zola.example'],
  ['Percent 100% Sure', 'p100@percent.example'],
  ['Under_Score', 'under_score@u.example'],
  ['a_b and a%b', 'ab@lit.example'],
  ['Back\\Slash', 'back\\slash@b.example'],
  ["O'Brien Öl", 'obrien@ol.example'],
  ['ÖSTERREICH', 'at@ol.example'],
  ['Straße Süd', 'strasse@sued.example'],
  ['bob', 'b@b.example'],
];

/** Lower-cases ASCII letters only: SQLite's NOCASE and lower() in the "C" collation. */
const asciiLower = (text: string) => text.replace(/[A-Z]/g, (c) => c.toLowerCase());

test('search finds what a naive case-insensitive substring filter finds, in each sort, page by page', async () => {
  const { repos } = await fresh();
  const repo = repos[0]!;
  const records = [
    ...NAMED.map(([name, email], i) => record(i, { name, email })),
    ...Array.from({ length: 150 }, (_, i) => record(100 + i, { name: `Filler ${i} ${['zo', 'ë', 'ab', 'Ü'][i % 4]}` })),
  ];
  const ids = (await repo.insertCustomers(records, now)) as string[];
  const stored = records.map((r, i) => ({ ...r, id: Number(ids[i]) }));
  const naive = (term: string, status: CustomerStatus | 'all', country: string, sort: CustomerSort, direction: 'asc' | 'desc') => {
    const t = term.toLowerCase();
    const sign = direction === 'asc' ? 1 : -1;
    const key = (c: (typeof stored)[number]) =>
      sort === 'name' ? asciiLower(c.name) : sort === 'totalAmountSpent' ? c.amountCents : sort === 'totalTransactions' ? c.totalTransactions : c.lastActivityAt;
    return stored
      .filter((c) => c.name.toLowerCase().includes(t) || c.email.toLowerCase().includes(t))
      .filter((c) => status === 'all' || c.status === status)
      .filter((c) => country === '' || c.country.toLowerCase() === country.toLowerCase())
      .sort((p, q) => {
        const [kp, kq] = [key(p), key(q)];
        const order = typeof kp === 'string' ? Buffer.compare(Buffer.from(kp), Buffer.from(kq as string)) : kp - (kq as number);
        return sign * (order || p.id - q.id);
      })
      .map((c) => String(c.id));
  };
  const terms = ['zoë', 'ZOË', 'Zo', 'zo', 'ë', 'Ë', 'o', 'QU', 'quarter', 'HARBOUR', '%', '_', '\\', '100%', 'a_b', 'a%', 'é', 'ÉMILE', 'mile z', '@', '.example', 'none-such', 'ß', 'straSSe', "o'b", 'öl', 'Ö', 'ü', 'ab', 'b'];
  const views: [CustomerStatus | 'all', string, CustomerSort, 'asc' | 'desc'][] = [
    ['all', '', 'name', 'asc'],
    ['all', '', 'lastActivityDate', 'desc'],
    ['active', '', 'totalAmountSpent', 'desc'],
    ['all', 'norway', 'totalTransactions', 'asc'],
  ];
  for (const term of terms) {
    for (const [status, country, sort, direction] of views) {
      const expected = naive(term, status, country, sort, direction);
      const got: string[] = [];
      for (let page = 1; ; page++) {
        const { items, total } = await repo.listCustomers({ search: term, status, country, sort, direction, page, limit: 7 });
        assert.equal(total, expected.length, `total of ${JSON.stringify(term)} ${status} ${country} ${sort}`);
        if (items.length === 0) break;
        got.push(...items.map((c) => c.id));
      }
      assert.deepEqual(got, expected, `${JSON.stringify(term)} ${status} ${country} ${sort} ${direction}`);
    }
  }
  assert.deepEqual(await repo.listCustomers({ search: 'zo\nla', status: 'all', country: '', sort: 'name', direction: 'asc', page: 1, limit: 5 }), { items: [], total: 0 });

  // A search's total is remembered until customers change: a new match counts at once.
  const before = (await repo.listCustomers({ search: 'quarter', status: 'all', country: '', sort: 'name', direction: 'asc', page: 1, limit: 5 })).total;
  await repo.insertCustomers([record(999, { name: 'Another QUARTERmain' })], now);
  assert.equal((await repo.listCustomers({ search: 'quarter', status: 'all', country: '', sort: 'name', direction: 'asc', page: 1, limit: 5 })).total, before + 1);
});

test('the export gives the customers within the bounds in id order, each as its step reads it, holding no transaction between steps', async () => {
  const { repos, sql, engines: [engine] } = await fresh();
  const repo = repos[0]!;
  const records = Array.from({ length: 15_000 }, (_, i) => record(i));
  for (let i = 0; i < records.length; i += 3000) await repo.insertCustomers(records.slice(i, i + 3000), now);
  const exporter = createPgCustomerExport(engine!);
  const bounds: Bounds = {
    countryKeys: ['brazil', 'norway'],
    excludedCountryKeys: [],
    statuses: STATUS_BIT.active | STATUS_BIT.churned,
    transactions: [2, Infinity],
    cents: [-Infinity, 80_000],
    lastActivityAt: [-DAY_MS, Infinity],
  };
  const expected = await sql`
    SELECT id, email, name, country, status, amount_cents, total_transactions, last_activity_at FROM customers
    WHERE country_key IN ('brazil', 'norway') AND status IN ('active', 'churned') AND total_transactions >= 2
      AND amount_cents <= 80000 AND last_activity_at >= ${-DAY_MS} ORDER BY id`.values();
  assert.ok(expected.length > 2048, `more than one batch (${expected.length})`);

  const reading = exporter.matchingCustomers(bounds);
  const first = await reading.next();
  assert.equal(first.done, false);
  // Changed after the start, before their step: the last match deleted is left out, a new match is not read (it came
  // after the start), and one renamed comes renamed.
  const lastId = expected[expected.length - 1]![0] as number;
  const renamedId = expected[expected.length - 2]![0] as number;
  await repo.deleteCustomer(String(lastId));
  await repo.updateCustomer(String(renamedId), { name: 'Renamed Late' }, now);
  await repo.insertCustomers([record(9000, { country: 'Brazil', status: 'active', totalTransactions: 5, amountCents: 1 })], now);
  const rows = [...(first.value as unknown[][])];
  for await (const batch of reading) rows.push(...batch);
  const renamedAt = expected.length - 2;
  const want = expected.slice(0, -1).map((row, i) => (i === renamedAt ? [row[0], row[1], 'Renamed Late', ...row.slice(3)] : [...row]));
  assert.deepEqual(rows, want);

  const others: Bounds = { countryKeys: undefined, excludedCountryKeys: ['japan', 'norway'], statuses: ANY_STATUS, transactions: [-Infinity, Infinity], cents: [-Infinity, Infinity], lastActivityAt: [-Infinity, Infinity] };
  const outside = (await sql`SELECT id FROM customers WHERE country_key NOT IN ('japan', 'norway') ORDER BY id`.values()).map((r) => r[0]);
  const got: number[] = [];
  for await (const batch of exporter.matchingCustomers(others)) got.push(...batch.map((r) => r[0]));
  assert.deepEqual(got, outside);
  assert.equal((await exporter.matchingCustomers(null).next()).done, true);

  const stopped = exporter.matchingCustomers(others);
  await stopped.next();
  // A snapshot held would show as another session's xmin, holding back vacuum while a slow client reads.
  const open = () => sql`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND backend_xmin IS NOT NULL AND pid <> pg_backend_pid()`;
  assert.equal((await open())[0]!.n, 0, 'no snapshot is held while the download is read');
  await stopped.return();
});
