// The customer aggregates over HTTP compared with naive SQL over the customers table: KPIs, the 24-month trend,
// health and the top 25, as test/aggregates.test.ts checks them after random writes; and the aggregate tables (and
// SQLite's search index) against a recomputation from the rows, on either engine.
import assert from 'node:assert/strict';
import type { Db } from '../../src/db/database.ts';
import type { TestService } from '../helpers.ts';

const DAY_MS = 86_400_000;

/** `count` UTC months ending with the month of `now`, oldest first. */
function trailingMonths(now: Date, count: number): string[] {
  return Array.from({ length: count }, (_, i) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - (count - 1 - i), 1)).toISOString().slice(0, 7));
}

/** The customers of each status and the sum of their cents, by naive SQL (the sum cast back to an integer on PostgreSQL). */
export function naiveByStatus<S extends string>(service: TestService): Promise<{ status: S; n: number; cents: number }[]> {
  return service.query('SELECT status, count(*) AS n, CAST(sum(amount_cents) AS BIGINT) AS cents FROM customers GROUP BY status');
}

/** The customers, their cents and the churned among them by UTC month (YYYY-MM) of their last activity. */
export async function naiveMonthly(service: TestService): Promise<{ month: string; n: number; cents: number; churned: number }[]> {
  const months = new Map<string, { month: string; n: number; cents: number; churned: number }>();
  const rows = await service.query<{ last_activity_at: number; amount_cents: number; status: string }>('SELECT last_activity_at, amount_cents, status FROM customers');
  for (const r of rows) {
    const month = new Date(r.last_activity_at).toISOString().slice(0, 7);
    const m = months.get(month) ?? { month, n: 0, cents: 0, churned: 0 };
    m.n++;
    m.cents += r.amount_cents;
    if (r.status === 'churned') m.churned++;
    months.set(month, m);
  }
  return [...months.values()];
}

/** Asserts that GET kpis, trend?months=24, health and top?limit=25 equal what naive SQL over the stored customers gives. */
export async function assertAggregatesExact(service: TestService, token: string, label: string): Promise<void> {
  const get = async (path: string) => {
    const reply = await service.request('GET', path, { token });
    assert.equal(reply.status, 200, reply.text);
    return reply.body;
  };
  const at = service.clock.now();
  const counts = { active: 0, inactive: 0, churned: 0 };
  let cents = 0;
  for (const r of await naiveByStatus<keyof typeof counts>(service)) {
    counts[r.status] = r.n;
    cents += r.cents;
  }
  const n = counts.active + counts.inactive + counts.churned;
  assert.deepEqual(
    await get('/v1/customers/kpis'),
    {
      totalCustomers: n,
      activeCustomers: counts.active,
      totalTransactionValue: cents / 100,
      averageCustomerValue: n === 0 ? 0 : Math.floor((2 * cents + n) / (2 * n)) / 100,
      statusCounts: counts,
    },
    `${label}: kpis`,
  );

  const stale = (await service.queryValue<number>("SELECT count(*) FROM customers WHERE status = 'active' AND last_activity_at < ?", at.getTime() - 60 * DAY_MS))!;
  const numerator = 100 * n - 80 * counts.churned - 50 * counts.inactive - 70 * stale;
  const score = n === 0 ? 0 : Math.min(100, Math.max(0, Math.floor((2 * numerator + n) / (2 * n))));
  const share = (k: number) => (n === 0 ? 0 : Math.floor((2000 * k + n) / (2 * n)) / 10);
  assert.deepEqual(
    await get('/v1/customers/health'),
    {
      score,
      level: score >= 60 ? 'healthy' : score >= 40 ? 'attention' : 'critical',
      activeShare: share(counts.active),
      churnedShare: share(counts.churned),
      inactiveCount: counts.inactive,
      staleActives: n === 0 ? 0 : stale,
    },
    `${label}: health`,
  );

  const monthly = await naiveMonthly(service);
  const trend = trailingMonths(at, 24).map((month) => {
    const m = monthly.find((r) => r.month === month);
    return { month, value: m ? m.cents / 100 : 0, customers: m?.n ?? 0, churned: m?.churned ?? 0 };
  });
  assert.deepEqual(await get('/v1/customers/trend?months=24'), trend, `${label}: trend`);

  const top = await service.query<{ id: number; name: string; country: string; status: string; amount_cents: number; total_transactions: number }>(
    `SELECT id, name, country, status, amount_cents, total_transactions FROM customers
     ORDER BY amount_cents DESC, last_activity_at DESC, id DESC LIMIT 25`,
  );
  assert.deepEqual(
    await get('/v1/customers/top?limit=25'),
    {
      totalValue: cents / 100,
      items: top.map((c) => ({ id: String(c.id), name: c.name, country: c.country, status: c.status, totalAmountSpent: c.amount_cents / 100, totalTransactions: c.total_transactions })),
    },
    `${label}: top`,
  );
}

/** Returns how many customers a segment preview of the conditions counts. */
export async function segmentCount(service: TestService, token: string, conditions: unknown[]): Promise<number> {
  const reply = await service.request('POST', '/v1/segments/preview', { token, body: { conditions } });
  assert.equal(reply.status, 200, reply.text);
  return reply.body.matchCount as number;
}

/** Returns the names of the customers a search finds. */
export async function searchNames(service: TestService, token: string, term: string): Promise<string[]> {
  const reply = await service.request('GET', `/v1/customers?limit=200&search=${encodeURIComponent(term)}`, { token });
  assert.equal(reply.status, 200, reply.text);
  return (reply.body.items as { name: string }[]).map((c) => c.name).sort();
}

/** Runs one SQL statement (`?` placeholders) and resolves to its rows: a service's `query`, or a SQLite connection's. */
export type Query = (text: string, ...params: unknown[]) => Promise<unknown[]>;

/** The `Query` of a SQLite connection the test opened itself. */
export function queryOf(db: Db): Query {
  return async (text, ...params) => {
    const statement = db.prepare(text);
    if (statement.reader) return statement.all(...params);
    statement.run(...params);
    return [];
  };
}

/**
 * Asserts that every aggregate table equals a GROUP BY over customers (sums cast back to integers for PostgreSQL) and,
 * on SQLite, that the FTS5 search index holds every customer and passes its integrity check. PostgreSQL keeps its
 * search index (a pg_trgm index on customers) itself: searches over HTTP check it there.
 */
export async function assertRecomputed(query: Query, sqlite: boolean): Promise<void> {
  assert.deepEqual(
    await query('SELECT status, customers, amount_cents FROM customer_totals WHERE customers <> 0 ORDER BY status'),
    await query('SELECT status, count(*) AS customers, CAST(sum(amount_cents) AS BIGINT) AS amount_cents FROM customers GROUP BY status ORDER BY status'),
  );
  assert.deepEqual(
    await query('SELECT status, day, customers, amount_cents FROM customer_days ORDER BY status, day'),
    await query(`SELECT status, CAST(last_activity_at / ${DAY_MS} AS INTEGER) AS day, count(*) AS customers, CAST(sum(amount_cents) AS BIGINT) AS amount_cents
                 FROM customers GROUP BY status, day ORDER BY status, day`),
  );
  assert.deepEqual(
    await query('SELECT country_key, status, customers FROM customer_countries ORDER BY country_key, status'),
    await query('SELECT country_key, status, count(*) AS customers FROM customers GROUP BY country_key, status ORDER BY country_key, status'),
  );
  if (!sqlite) return;
  for (const term of ['imports.example.com', 'example', 'smith', 'a.b']) {
    const indexed = await query(`SELECT rowid FROM customer_search WHERE customer_search MATCH ? ORDER BY rowid`, `"${term}"`);
    const stored = await query(`SELECT id AS rowid FROM customers WHERE instr(lower(name || char(10) || email), ?) ORDER BY id`, term);
    assert.deepEqual(indexed, stored, term);
  }
  await query(`INSERT INTO customer_search (customer_search, rank) VALUES ('integrity-check', 0)`);
}
