// Customer aggregates: customers.kpis, customers.health, customers.activityTrend and customers.top
// (interface.md section 4, product.md section 4). The clock starts at TestClock's default, 2026-11-20T12:00:00.000Z,
// so the 60-day stale cut-off is 2026-09-21T12:00:00.000Z and the default trend runs 2026-06 .. 2026-11.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { prng } from '../scripts/synthetic-customers.ts';
import type { Customer, CustomerStatus } from '../src/domain/customers.ts';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { naiveByStatus, naiveMonthly } from './support/aggregates.ts';
import { customerRow, importRows } from './support/customers.ts';

const NOW = '2026-11-20T12:00:00.000Z';
const DAY_MS = 86_400_000;
/** Access tokens live one day, so tests may move the clock forward by hours without signing in again. */
const ENV = { ACCESS_TOKEN_TTL: '86400' };

type Status = CustomerStatus;
type Row = Omit<Customer, 'id'>;

/** A valid customer row with a unique email. */
function row(status: Status, totalAmountSpent: number, lastActivityDate: string, extra: Partial<Row> = {}): Row {
  return customerRow({ status, totalAmountSpent, lastActivityDate, ...extra });
}

/** The ISO instant `days` days (and `ms` milliseconds) before NOW. */
function daysAgo(days: number, ms = 0): string {
  return new Date(Date.parse(NOW) - days * DAY_MS - ms).toISOString();
}

/** `count` rows of one status, last active 5 days ago (never stale). */
function many(count: number, status: Status, amount = 10): Row[] {
  return Array.from({ length: count }, () => row(status, amount, daysAgo(5)));
}

/** The expected trend: `months` ascending, zero-filled, with the given non-empty months. */
function trendOf(months: string[], filled: Record<string, [value: number, customers: number, churned: number]>) {
  for (const month of Object.keys(filled)) assert.ok(months.includes(month), `bad expectation: ${month}`);
  return months.map((month) => {
    const [value, customers, churned] = filled[month] ?? [0, 0, 0];
    return { month, value, customers, churned };
  });
}

/** `count` UTC months ending with the month of `now`, oldest first. */
function trailingMonths(now: Date, count: number): string[] {
  return Array.from({ length: count }, (_, i) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - (count - 1 - i), 1)).toISOString().slice(0, 7));
}

const DEFAULT_MONTHS = ['2026-06', '2026-07', '2026-08', '2026-09', '2026-10', '2026-11'];

const EMPTY_KPIS = { totalCustomers: 0, activeCustomers: 0, totalTransactionValue: 0, averageCustomerValue: 0, statusCounts: { active: 0, inactive: 0, churned: 0 } };
const EMPTY_HEALTH = { score: 0, level: 'critical', activeShare: 0, churnedShare: 0, inactiveCount: 0, staleActives: 0 };

// =============================================================================================
// Hand-built bases: every test starts from an empty base at NOW.

describe('customer aggregates over hand-built bases', () => {
  let service: TestService;
  let token: string;

  const get = async (path: string) => {
    const reply = await service.request('GET', path, { token });
    assert.equal(reply.status, 200, `${path}: ${reply.text}`);
    return reply.body;
  };
  const kpis = () => get('/v1/customers/kpis');
  const health = () => get('/v1/customers/health');
  const trend = (months?: number) => get(`/v1/customers/trend${months === undefined ? '' : `?months=${months}`}`);
  const top = (limit?: number) => get(`/v1/customers/top${limit === undefined ? '' : `?limit=${limit}`}`);

  /** Imports the rows through HTTP; all must be stored. */
  const seed = (rows: Row[]) => importRows(service, token, rows);
  const idOf = async (email: string): Promise<string> => {
    const reply = await service.request('GET', `/v1/customers?search=${encodeURIComponent(email)}`, { token });
    assert.equal(reply.body.total, 1, reply.text);
    return reply.body.items[0].id as string;
  };

  before(async () => {
    service = await startService({ env: ENV });
    token = await service.tokenFor('marketing_lead');
  });
  after(() => service.close());

  // An empty base at NOW before every test, emptied through HTTP so the aggregates see the deletes.
  beforeEach(async () => {
    service.clock.set(NOW);
    for (;;) {
      const page = await get('/v1/customers?limit=200');
      if (page.items.length === 0) break;
      for (const item of page.items) {
        const reply = await service.request('DELETE', `/v1/customers/${item.id}`, { token });
        assert.equal(reply.status, 200, reply.text);
      }
    }
  });

  // ------------------------------------------------------------------------------------------
  // KPIs

  test('kpis of an empty base are all zeros', async () => {
    assert.deepEqual(await kpis(), EMPTY_KPIS);
  });

  test('kpis: spends 1000, 500, 250.5, 0 give total 1750.5 and an average of 437.63 (437.625 rounded half-up)', async () => {
    await seed([row('active', 1000, daysAgo(1)), row('active', 500, daysAgo(100)), row('inactive', 250.5, daysAgo(3)), row('churned', 0, daysAgo(400))]);
    assert.deepEqual(await kpis(), {
      totalCustomers: 4,
      activeCustomers: 2,
      totalTransactionValue: 1750.5,
      averageCustomerValue: 437.63,
      statusCounts: { active: 2, inactive: 1, churned: 1 },
    });
  });

  test('kpis averageCustomerValue is rounded half-up to cents', async () => {
    // 0.01 + 0 over 2 customers = 0.005 -> 0.01 (half-up, not half-even)
    await seed([row('active', 0.01, daysAgo(1)), row('active', 0, daysAgo(1))]);
    let got = await kpis();
    assert.equal(got.totalTransactionValue, 0.01);
    assert.equal(got.averageCustomerValue, 0.01);
    // + 10 -> 10.01 over 3 = 3.33666.. -> 3.34
    await seed([row('inactive', 10, daysAgo(1))]);
    got = await kpis();
    assert.equal(got.totalTransactionValue, 10.01);
    assert.equal(got.averageCustomerValue, 3.34);
    // + 0.01 -> 10.02 over 4 = 2.505 -> 2.51
    await seed([row('churned', 0.01, daysAgo(1))]);
    got = await kpis();
    assert.equal(got.totalTransactionValue, 10.02);
    assert.equal(got.averageCustomerValue, 2.51);
    assert.deepEqual(got.statusCounts, { active: 2, inactive: 1, churned: 1 });
  });

  // ------------------------------------------------------------------------------------------
  // Health: score = clamp(0, 100, round(100 - churned% * 0.8 - inactive% * 0.5 - staleActive% * 0.7))

  test('health of an empty base is exactly { score 0, critical, 0, 0, 0, 0 }', async () => {
    const got = await health();
    assert.deepEqual(got, EMPTY_HEALTH);
    assert.deepEqual(Object.keys(got).sort(), ['activeShare', 'churnedShare', 'inactiveCount', 'level', 'score', 'staleActives']);
  });

  test('health example: 2 active recent, 1 inactive, 1 churned -> 68 healthy', async () => {
    // 100 - 25*0.8 - 25*0.5 = 67.5 -> 68 (half-up)
    await seed([...many(2, 'active'), ...many(1, 'inactive'), ...many(1, 'churned')]);
    assert.deepEqual(await health(), { score: 68, level: 'healthy', activeShare: 50, churnedShare: 25, inactiveCount: 1, staleActives: 0 });
  });

  test('health example: all inactive -> 50 attention', async () => {
    // 100 - 100*0.5 = 50
    await seed(many(3, 'inactive'));
    assert.deepEqual(await health(), { score: 50, level: 'attention', activeShare: 0, churnedShare: 0, inactiveCount: 3, staleActives: 0 });
  });

  test('health example: one active customer idle for 90 days -> 30 critical with 1 stale active', async () => {
    // 100 - 100*0.7 = 30
    await seed([row('active', 10, daysAgo(90))]);
    assert.deepEqual(await health(), { score: 30, level: 'critical', activeShare: 100, churnedShare: 0, inactiveCount: 0, staleActives: 1 });
  });

  test('health example: all churned -> 20 critical', async () => {
    // 100 - 100*0.8 = 20
    await seed(many(2, 'churned'));
    assert.deepEqual(await health(), { score: 20, level: 'critical', activeShare: 0, churnedShare: 100, inactiveCount: 0, staleActives: 0 });
  });

  test('health: only recent active customers -> 100 healthy', async () => {
    await seed(many(3, 'active'));
    assert.deepEqual(await health(), { score: 100, level: 'healthy', activeShare: 100, churnedShare: 0, inactiveCount: 0, staleActives: 0 });
  });

  test('health level boundary: a score of exactly 60 is healthy (1 active + 1 churned)', async () => {
    // 100 - 50*0.8 = 60
    await seed([...many(1, 'active'), ...many(1, 'churned')]);
    assert.deepEqual(await health(), { score: 60, level: 'healthy', activeShare: 50, churnedShare: 50, inactiveCount: 0, staleActives: 0 });
  });

  test('health level boundary: a score of 59 is attention (3 active, 5 inactive, 2 churned)', async () => {
    // 100 - 20*0.8 - 50*0.5 = 100 - 16 - 25 = 59
    await seed([...many(3, 'active'), ...many(5, 'inactive'), ...many(2, 'churned')]);
    assert.deepEqual(await health(), { score: 59, level: 'attention', activeShare: 30, churnedShare: 20, inactiveCount: 5, staleActives: 0 });
  });

  test('health level boundary: a raw score of 59.5 rounds half-up to 60 and is healthy', async () => {
    // 20 customers: 3 churned (15%), 10 inactive (50%), 7 active of which 1 stale (5%):
    // 100 - 15*0.8 - 50*0.5 - 5*0.7 = 100 - 12 - 25 - 3.5 = 59.5 -> 60
    await seed([...many(3, 'churned'), ...many(10, 'inactive'), ...many(6, 'active'), row('active', 10, daysAgo(61))]);
    assert.deepEqual(await health(), { score: 60, level: 'healthy', activeShare: 35, churnedShare: 15, inactiveCount: 10, staleActives: 1 });
  });

  test('health level boundary: a score of exactly 40 is attention (1 active, 4 inactive, 5 churned)', async () => {
    // 100 - 50*0.8 - 40*0.5 = 100 - 40 - 20 = 40
    await seed([...many(1, 'active'), ...many(4, 'inactive'), ...many(5, 'churned')]);
    assert.deepEqual(await health(), { score: 40, level: 'attention', activeShare: 10, churnedShare: 50, inactiveCount: 4, staleActives: 0 });
  });

  test('health level boundary: a score of 39 is critical (2 active, 1 inactive, 7 churned)', async () => {
    // 100 - 70*0.8 - 10*0.5 = 100 - 56 - 5 = 39
    await seed([...many(2, 'active'), ...many(1, 'inactive'), ...many(7, 'churned')]);
    assert.deepEqual(await health(), { score: 39, level: 'critical', activeShare: 20, churnedShare: 70, inactiveCount: 1, staleActives: 0 });
  });

  test('health combines the churned and stale shares: 1 churned + 1 active idle 200 days -> 25 critical', async () => {
    // 100 - 50*0.8 - 50*0.7 = 100 - 40 - 35 = 25
    await seed([row('churned', 1, daysAgo(1)), row('active', 1, daysAgo(200))]);
    assert.deepEqual(await health(), { score: 25, level: 'critical', activeShare: 50, churnedShare: 50, inactiveCount: 0, staleActives: 1 });
  });

  test('health shares are rounded half-up to one decimal: 1 churned of 3 -> 33.3, and 2 of 3 -> 66.7', async () => {
    // 2 active + 1 churned: activeShare 66.666.. -> 66.7, churnedShare 33.333.. -> 33.3, score 100 - 26.67 = 73.33 -> 73
    await seed([...many(2, 'active'), ...many(1, 'churned')]);
    assert.deepEqual(await health(), { score: 73, level: 'healthy', activeShare: 66.7, churnedShare: 33.3, inactiveCount: 0, staleActives: 0 });
    // + 1 churned, - 1 active = 1 active + 2 churned: activeShare 33.3, churnedShare 66.7, score 100 - 53.33 = 46.67 -> 47
    await seed(many(1, 'churned'));
    const active = await service.request('GET', '/v1/customers?status=active&limit=1', { token });
    const removed = await service.request('DELETE', `/v1/customers/${active.body.items[0].id}`, { token });
    assert.equal(removed.status, 200, removed.text);
    assert.deepEqual(await health(), { score: 47, level: 'attention', activeShare: 33.3, churnedShare: 66.7, inactiveCount: 0, staleActives: 0 });
  });

  test('health shares round a trailing 5 up: 1 churned of 16 -> 6.3 and 15 active of 16 -> 93.8', async () => {
    // 6.25 -> 6.3 and 93.75 -> 93.8 (half-up, not half-even); score 100 - 6.25*0.8 = 95
    await seed([...many(15, 'active'), ...many(1, 'churned')]);
    assert.deepEqual(await health(), { score: 95, level: 'healthy', activeShare: 93.8, churnedShare: 6.3, inactiveCount: 0, staleActives: 0 });
  });

  test('health stale cut-off: active exactly 60 days before now is not stale, 60 days + 1 ms is; only active customers count', async () => {
    // Cut-off at NOW is 2026-09-21T12:00:00.000Z.
    assert.equal(daysAgo(60), '2026-09-21T12:00:00.000Z');
    await seed([
      row('active', 10, '2026-09-21T12:00:00.000Z'), // exactly 60 days: not stale
      row('active', 10, '2026-09-21T11:59:59.999Z'), // 60 days + 1 ms: stale
      row('inactive', 10, '2026-01-01'), // old but not active: not stale
      row('churned', 10, '2026-01-01'), // old but not active: not stale
    ]);
    // 4 customers, 1 inactive, 1 churned, 1 stale: 100 - 25*0.8 - 25*0.5 - 25*0.7 = 100 - 20 - 12.5 - 17.5 = 50
    assert.deepEqual(await health(), { score: 50, level: 'attention', activeShare: 50, churnedShare: 25, inactiveCount: 1, staleActives: 1 });

    // One millisecond later the first one is stale too: 100 - 20 - 12.5 - 35 = 32.5 -> 33
    service.clock.advance(1);
    assert.deepEqual(await health(), { score: 33, level: 'critical', activeShare: 50, churnedShare: 25, inactiveCount: 1, staleActives: 2 });
  });

  test('health stale cut-off on a day boundary: with the clock at midnight UTC, 00:00 of the cut-off day is not stale, 1 ms earlier is', async () => {
    service.clock.set('2026-11-20T00:00:00.000Z');
    await seed([
      row('active', 10, '2026-09-21T00:00:00.000Z'), // exactly 60 days before the clock
      row('active', 10, '2026-09-20T23:59:59.999Z'), // 1 ms more
      row('active', 10, '2026-09-20T00:00:00.000Z'), // a whole day more
      row('active', 10, '2026-09-21T23:59:59.999Z'), // on the cut-off day, after the cut-off instant
    ]);
    // 4 active, 2 stale: 100 - 50*0.7 = 65
    assert.deepEqual(await health(), { score: 65, level: 'healthy', activeShare: 100, churnedShare: 0, inactiveCount: 0, staleActives: 2 });
  });

  test('health: an active customer becomes stale as the clock advances past 60 days of idleness', async () => {
    // Last active 2026-09-22T06:00Z: 59 days 6 hours before NOW.
    await seed([row('active', 10, '2026-09-22T06:00:00.000Z'), row('active', 10, daysAgo(1))]);
    assert.deepEqual(await health(), { score: 100, level: 'healthy', activeShare: 100, churnedShare: 0, inactiveCount: 0, staleActives: 0 });
    service.clock.advance(18 * 3_600_000); // 2026-11-21T06:00Z: exactly 60 days
    assert.equal((await health()).staleActives, 0);
    service.clock.advance(1); // 60 days + 1 ms: 100 - 50*0.7 = 65
    assert.deepEqual(await health(), { score: 65, level: 'healthy', activeShare: 100, churnedShare: 0, inactiveCount: 0, staleActives: 1 });
    // Moving the clock back makes it fresh again: staleness is computed from the clock, not stored.
    service.clock.set(NOW);
    assert.equal((await health()).staleActives, 0);
  });

  // ------------------------------------------------------------------------------------------
  // Trend

  test('trend defaults to 6 zero-filled months ending with the current month, each with exactly month, value, customers, churned', async () => {
    const got = await trend();
    assert.deepEqual(got, trendOf(DEFAULT_MONTHS, {}));
    for (const point of got) assert.deepEqual(Object.keys(point).sort(), ['churned', 'customers', 'month', 'value']);
  });

  test('trend months=3 and months=24 give exactly that many ascending months ending with 2026-11', async () => {
    assert.deepEqual(
      (await trend(3)).map((p: { month: string }) => p.month),
      ['2026-09', '2026-10', '2026-11'],
    );
    const long = (await trend(24)).map((p: { month: string }) => p.month);
    assert.equal(long.length, 24);
    assert.equal(long[0], '2024-12');
    assert.equal(long[12], '2025-12');
    assert.equal(long[23], '2026-11');
    assert.deepEqual(long, [...long].sort());
    assert.equal(new Set(long).size, 24);
  });

  for (const value of ['2', '25', 'x', '3.5', '0', '-6', '']) {
    test(`trend months=${JSON.stringify(value)} is 400 validation_failed naming months`, async () => {
      const reply = await service.request('GET', `/v1/customers/trend?months=${encodeURIComponent(value)}`, { token });
      assertProblem(reply, 400, 'validation_failed', ['months']);
    });
  }

  test('trend buckets customers by the UTC month of their last activity; value sums their spend, churned counts the churned', async () => {
    await seed([
      row('active', 100, '2026-09-30T23:30:00-02:00'), // 2026-10-01T01:30Z: October
      row('churned', 50.25, '2026-10-31T23:59:59.999Z'), // October
      row('churned', 10, '2026-11-01T00:00:00Z'), // November
      row('active', 5, '2026-11-21T00:00:00Z'), // November (within a day ahead of the clock)
      row('inactive', 7, '2026-06-01'), // the first month of the window
      row('inactive', 0.01, '2026-08-15T12:00:00+14:00'), // 2026-08-14T22:00Z: August
      row('active', 1000, '2026-05-31T23:59:59.999Z'), // May: outside 6 months
      row('churned', 3, '2025-01-15'), // outside 6 and 12 months, inside 24
      row('churned', 4, '2024-11-30T23:59:59.999Z'), // outside 24 months
    ]);
    assert.deepEqual(
      await trend(),
      trendOf(DEFAULT_MONTHS, {
        '2026-06': [7, 1, 0],
        '2026-08': [0.01, 1, 0],
        '2026-10': [150.25, 2, 1],
        '2026-11': [15, 2, 1],
      }),
    );
    assert.deepEqual(
      await trend(3),
      trendOf(['2026-09', '2026-10', '2026-11'], {
        '2026-10': [150.25, 2, 1],
        '2026-11': [15, 2, 1],
      }),
    );
    assert.deepEqual(
      await trend(12),
      trendOf(trailingMonths(new Date(NOW), 12), {
        '2026-05': [1000, 1, 0],
        '2026-06': [7, 1, 0],
        '2026-08': [0.01, 1, 0],
        '2026-10': [150.25, 2, 1],
        '2026-11': [15, 2, 1],
      }),
    );
    assert.deepEqual(
      await trend(24),
      trendOf(trailingMonths(new Date(NOW), 24), {
        '2025-01': [3, 1, 1],
        '2026-05': [1000, 1, 0],
        '2026-06': [7, 1, 0],
        '2026-08': [0.01, 1, 0],
        '2026-10': [150.25, 2, 1],
        '2026-11': [15, 2, 1],
      }),
    );
  });

  test('trend follows the clock across a year boundary', async () => {
    service.clock.set('2027-01-15T00:00:00.000Z');
    const lateToken = await service.tokenFor('lifecycle_marketer'); // the clock moved past the lead's token lifetime
    const reply = await service.request('POST', '/v1/customers/import', {
      token: lateToken,
      body: { customers: [row('churned', 20, '2026-12-31T23:59:59.999Z'), row('active', 30, '2027-01-01T00:00:00Z'), row('active', 40, '2026-10-31')] },
    });
    assert.equal(reply.body.imported, 3, reply.text);
    const got = await service.request('GET', '/v1/customers/trend?months=3', { token: lateToken });
    assert.deepEqual(got.body, trendOf(['2026-11', '2026-12', '2027-01'], { '2026-12': [20, 1, 1], '2027-01': [30, 1, 0] }));
    // The next test's reset puts the clock back to NOW, where the lead's token is still valid, and empties the base.
  });

  // ------------------------------------------------------------------------------------------
  // Top

  test('top: default limit 5, ordered by totalAmountSpent desc with ties by most recent activity; exact item keys; totalValue of the whole base', async () => {
    const rows = {
      t1: row('active', 500, '2026-10-01', { name: 'T1', country: 'Spain', totalTransactions: 11 }),
      t2: row('inactive', 500, '2026-11-01', { name: 'T2', country: 'Italy', totalTransactions: 12 }),
      t3: row('churned', 900, '2026-01-01', { name: 'T3', country: 'France', totalTransactions: 13 }),
      t4: row('active', 100, '2026-11-10', { name: 'T4', country: 'Japan', totalTransactions: 14 }),
      t5: row('active', 500, '2026-09-01', { name: 'T5', country: 'Chile', totalTransactions: 15 }),
      t6: row('inactive', 50, '2026-11-19', { name: 'T6', country: 'Peru', totalTransactions: 16 }),
      t7: row('active', 0, '2026-11-20', { name: 'T7', country: 'Kenya', totalTransactions: 17 }),
    };
    await seed(Object.values(rows));
    const expected: Record<string, Record<string, unknown>> = {};
    for (const [key, r] of Object.entries(rows)) {
      expected[key] = {
        id: await idOf(r.email),
        name: r.name,
        country: r.country,
        status: r.status,
        totalAmountSpent: r.totalAmountSpent,
        totalTransactions: r.totalTransactions,
      };
    }
    // 900 (t3); 500 x3 by recency: t2 (11-01), t1 (10-01), t5 (09-01); 100 (t4); 50 (t6); 0 (t7). Whole base: 2550.
    const byDefault = await top();
    assert.deepEqual(Object.keys(byDefault).sort(), ['items', 'totalValue']);
    for (const item of byDefault.items) assert.deepEqual(Object.keys(item).sort(), ['country', 'id', 'name', 'status', 'totalAmountSpent', 'totalTransactions']);
    assert.deepEqual(byDefault, { totalValue: 2550, items: [expected.t3, expected.t2, expected.t1, expected.t5, expected.t4] });
    assert.deepEqual(await top(1), { totalValue: 2550, items: [expected.t3] });
    assert.deepEqual(await top(25), { totalValue: 2550, items: [expected.t3, expected.t2, expected.t1, expected.t5, expected.t4, expected.t6, expected.t7] });
  });

  test('top of an empty base is { totalValue: 0, items: [] }', async () => {
    assert.deepEqual(await top(), { totalValue: 0, items: [] });
  });

  for (const value of ['0', '26', 'x', '1.5', '-1']) {
    test(`top limit=${value} is 400 validation_failed naming limit`, async () => {
      const reply = await service.request('GET', `/v1/customers/top?limit=${value}`, { token });
      assertProblem(reply, 400, 'validation_failed', ['limit']);
    });
  }

  // ------------------------------------------------------------------------------------------
  // Aggregates follow every write

  test('kpis, health, trend and top change after create, update (status, amount, date), delete and import', async () => {
    const create = async (r: Row) => {
      const reply = await service.request('POST', '/v1/customers', { token, body: r });
      assert.equal(reply.status, 200, reply.text);
      return reply.body.id as string;
    };
    const patch = async (id: string, changes: Partial<Row>) => {
      const reply = await service.request('PATCH', `/v1/customers/${id}`, { token, body: changes });
      assert.equal(reply.status, 200, reply.text);
    };
    const check = async (k: unknown, h: unknown, t: Record<string, [number, number, number]>) => {
      assert.deepEqual(await kpis(), k);
      assert.deepEqual(await health(), h);
      assert.deepEqual(await trend(), trendOf(DEFAULT_MONTHS, t));
    };

    // 1. create A: active, 100, 2026-11-10
    const a = row('active', 100, '2026-11-10');
    const aId = await create(a);
    await check(
      { totalCustomers: 1, activeCustomers: 1, totalTransactionValue: 100, averageCustomerValue: 100, statusCounts: { active: 1, inactive: 0, churned: 0 } },
      { score: 100, level: 'healthy', activeShare: 100, churnedShare: 0, inactiveCount: 0, staleActives: 0 },
      { '2026-11': [100, 1, 0] },
    );

    // 2. create B: churned, 50.5, 2026-08-15. Health 100 - 50*0.8 = 60.
    const bId = await create(row('churned', 50.5, '2026-08-15'));
    await check(
      { totalCustomers: 2, activeCustomers: 1, totalTransactionValue: 150.5, averageCustomerValue: 75.25, statusCounts: { active: 1, inactive: 0, churned: 1 } },
      { score: 60, level: 'healthy', activeShare: 50, churnedShare: 50, inactiveCount: 0, staleActives: 0 },
      { '2026-08': [50.5, 1, 1], '2026-11': [100, 1, 0] },
    );

    // 3. A -> inactive. Health 100 - 40 - 25 = 35.
    await patch(aId, { status: 'inactive' });
    await check(
      { totalCustomers: 2, activeCustomers: 0, totalTransactionValue: 150.5, averageCustomerValue: 75.25, statusCounts: { active: 0, inactive: 1, churned: 1 } },
      { score: 35, level: 'critical', activeShare: 0, churnedShare: 50, inactiveCount: 1, staleActives: 0 },
      { '2026-08': [50.5, 1, 1], '2026-11': [100, 1, 0] },
    );

    // 4. A -> churned. Health 100 - 80 = 20; November now has a churned customer.
    await patch(aId, { status: 'churned' });
    await check(
      { totalCustomers: 2, activeCustomers: 0, totalTransactionValue: 150.5, averageCustomerValue: 75.25, statusCounts: { active: 0, inactive: 0, churned: 2 } },
      { score: 20, level: 'critical', activeShare: 0, churnedShare: 100, inactiveCount: 0, staleActives: 0 },
      { '2026-08': [50.5, 1, 1], '2026-11': [100, 1, 1] },
    );

    // 5. A -> active with 200 spent. Average 250.5 / 2 = 125.25.
    await patch(aId, { status: 'active', totalAmountSpent: 200 });
    await check(
      { totalCustomers: 2, activeCustomers: 1, totalTransactionValue: 250.5, averageCustomerValue: 125.25, statusCounts: { active: 1, inactive: 0, churned: 1 } },
      { score: 60, level: 'healthy', activeShare: 50, churnedShare: 50, inactiveCount: 0, staleActives: 0 },
      { '2026-08': [50.5, 1, 1], '2026-11': [200, 1, 0] },
    );

    // 6. A last active 2026-08-01 (111 days ago): stale, and moves from November to August. Health 100 - 40 - 35 = 25.
    await patch(aId, { lastActivityDate: '2026-08-01' });
    await check(
      { totalCustomers: 2, activeCustomers: 1, totalTransactionValue: 250.5, averageCustomerValue: 125.25, statusCounts: { active: 1, inactive: 0, churned: 1 } },
      { score: 25, level: 'critical', activeShare: 50, churnedShare: 50, inactiveCount: 0, staleActives: 1 },
      { '2026-08': [250.5, 2, 1] },
    );

    // 7. delete B. One stale active left: 30.
    const removed = await service.request('DELETE', `/v1/customers/${bId}`, { token });
    assert.equal(removed.status, 200, removed.text);
    await check(
      { totalCustomers: 1, activeCustomers: 1, totalTransactionValue: 200, averageCustomerValue: 200, statusCounts: { active: 1, inactive: 0, churned: 0 } },
      { score: 30, level: 'critical', activeShare: 100, churnedShare: 0, inactiveCount: 0, staleActives: 1 },
      { '2026-08': [200, 1, 0] },
    );

    // 8. import C (inactive, 99.99, 2026-10-05), D (active, 0.01, today) and a duplicate of A (skipped, changes nothing).
    // 3 customers, 1 inactive, 1 stale: 100 - 33.33*0.5 - 33.33*0.7 = 100 - 40 = 60. Total 300, average 100.
    const imported = await service.request('POST', '/v1/customers/import', {
      token,
      body: { customers: [row('inactive', 99.99, '2026-10-05'), row('active', 0.01, '2026-11-20'), { ...row('churned', 5000, '2026-11-01'), email: a.email }] },
    });
    assert.equal(imported.status, 200, imported.text);
    assert.equal(imported.body.imported, 2);
    assert.equal(imported.body.skipped, 1);
    await check(
      { totalCustomers: 3, activeCustomers: 2, totalTransactionValue: 300, averageCustomerValue: 100, statusCounts: { active: 2, inactive: 1, churned: 0 } },
      { score: 60, level: 'healthy', activeShare: 66.7, churnedShare: 0, inactiveCount: 1, staleActives: 1 },
      { '2026-08': [200, 1, 0], '2026-10': [99.99, 1, 0], '2026-11': [0.01, 1, 0] },
    );
    const leaders = await top();
    assert.equal(leaders.totalValue, 300);
    assert.deepEqual(
      leaders.items.map((i: { totalAmountSpent: number }) => i.totalAmountSpent),
      [200, 99.99, 0.01],
    );
    assert.equal(leaders.items[0].id, aId);
  });
});

// =============================================================================================
// Random writes through HTTP; every aggregate equals its naive SQL over the customers table.


describe('customer aggregates after random writes equal naive SQL over the customers table', () => {
  let service: TestService;
  let token: string;

  before(async () => {
    service = await startService({ env: ENV });
    token = await service.tokenFor('marketing_lead');
  });
  after(() => service.close());

  test('300 random creates, updates, deletes and imports: kpis, trend, health, top, list totals and search match naive SQL', async () => {
    const random = prng(20261120);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
    const COUNTRIES = ['France', 'france', ' FRANCE ', 'Germany', 'Spain', 'Japan', 'Brazil', 'Kenya'];
    const STATUSES: Status[] = ['active', 'active', 'inactive', 'churned'];
    let uniq = 0;

    const now = () => service.clock.now().getTime();
    /** A last-activity instant within about 7 months before the clock and at most 0.9 day after it; sometimes right on the stale cut-off. */
    const randomDate = (): string => {
      const r = random();
      if (r < 0.05) return new Date(now() - 60 * DAY_MS).toISOString();
      if (r < 0.1) return new Date(now() - 60 * DAY_MS - 1).toISOString();
      if (r < 0.15) return new Date(now() - 60 * DAY_MS + 1).toISOString();
      if (r < 0.2) return new Date(now() - int(0, 200) * DAY_MS).toISOString().slice(0, 10); // a calendar date
      return new Date(now() - Math.floor(random() * 210 * DAY_MS) + Math.floor(random() * 0.9 * DAY_MS)).toISOString();
    };
    const randomAmount = (): number => {
      const r = random();
      if (r < 0.1) return 0;
      if (r < 0.2) return int(0, 100_000) / 1000; // three decimals: rounded half-up by the service
      return int(0, 500_000) / 100;
    };
    const newEmail = () => `cust${++uniq}z@${pick(['shop.test', 'mail.example.com', 'corp.io'])}`;
    const randomRow = (): Row => ({
      name: `${pick(['Ana', 'Ben', 'Chloé', 'Dev', 'Eli', 'Fay'])} ${pick(['Smith', 'Moreau', 'Tanaka', 'Silva'])} ${uniq + 1}`,
      email: newEmail(),
      country: pick(COUNTRIES),
      totalTransactions: int(0, 500),
      totalAmountSpent: randomAmount(),
      lastActivityDate: randomDate(),
      status: pick(STATUSES),
    });
    const storedIds = async () => (await service.query<{ id: number }>('SELECT id FROM customers ORDER BY id')).map((r) => String(r.id));
    const storedEmails = async () => (await service.query<{ email: string }>('SELECT email FROM customers')).map((r) => r.email);
    const count = async () => (await service.queryValue<number>('SELECT count(*) AS n FROM customers'))!;
    const emailOf = async (id: string) => (await service.queryValue<string>('SELECT email FROM customers WHERE id = ?', Number(id)))!;
    const deletedEmails: string[] = [];
    const replacedEmails: string[] = [];

    const checkAll = async (label: string) => {
      const at = service.clock.now();
      // KPIs
      const byStatus = await naiveByStatus<Status>(service);
      const counts = { active: 0, inactive: 0, churned: 0 };
      let cents = 0;
      for (const r of byStatus) {
        counts[r.status] = r.n;
        cents += r.cents;
      }
      const n = counts.active + counts.inactive + counts.churned;
      const kpis = await service.request('GET', '/v1/customers/kpis', { token });
      assert.deepEqual(
        kpis.body,
        {
          totalCustomers: n,
          activeCustomers: counts.active,
          totalTransactionValue: cents / 100,
          // half-up of cents / n, in integers: floor((2 * cents + n) / (2n))
          averageCustomerValue: n === 0 ? 0 : Math.floor((2 * cents + n) / (2 * n)) / 100,
          statusCounts: counts,
        },
        `${label}: kpis`,
      );

      // Health
      const stale = (await service.queryValue<number>("SELECT count(*) AS n FROM customers WHERE status = 'active' AND last_activity_at < ?", at.getTime() - 60 * DAY_MS))!;
      const health = await service.request('GET', '/v1/customers/health', { token });
      if (n === 0) assert.deepEqual(health.body, EMPTY_HEALTH);
      else {
        // 100 - 80c/n - 50i/n - 70s/n, rounded half-up, in integers
        const numerator = 100 * n - 80 * counts.churned - 50 * counts.inactive - 70 * stale;
        const score = Math.min(100, Math.max(0, Math.floor((2 * numerator + n) / (2 * n))));
        const share = (k: number) => Math.floor((2000 * k + n) / (2 * n)) / 10;
        assert.deepEqual(
          health.body,
          {
            score,
            level: score >= 60 ? 'healthy' : score >= 40 ? 'attention' : 'critical',
            activeShare: share(counts.active),
            churnedShare: share(counts.churned),
            inactiveCount: counts.inactive,
            staleActives: stale,
          },
          `${label}: health`,
        );
      }

      // Trend over 24 months
      const monthly = await naiveMonthly(service);
      const months = trailingMonths(at, 24);
      const expectedTrend = months.map((month) => {
        const m = monthly.find((r) => r.month === month);
        return { month, value: m ? m.cents / 100 : 0, customers: m?.n ?? 0, churned: m?.churned ?? 0 };
      });
      const trend = await service.request('GET', '/v1/customers/trend?months=24', { token });
      assert.deepEqual(trend.body, expectedTrend, `${label}: trend`);
      const trend6 = await service.request('GET', '/v1/customers/trend', { token });
      assert.deepEqual(trend6.body, expectedTrend.slice(-6), `${label}: trend 6`);

      // Top 25: the order of (amount, last activity) is exact; each item is its stored customer.
      const expectedTop = await service.query<{ id: number; name: string; country: string; status: Status; amount_cents: number; total_transactions: number; last_activity_at: number }>(
        `SELECT id, name, country, status, amount_cents, total_transactions, last_activity_at FROM customers
         ORDER BY amount_cents DESC, last_activity_at DESC LIMIT 25`,
      );
      const top = await service.request('GET', '/v1/customers/top?limit=25', { token });
      assert.equal(top.body.totalValue, cents / 100, `${label}: top totalValue`);
      assert.equal(top.body.items.length, expectedTop.length);
      const seen = new Set<string>();
      for (const [i, item] of (top.body.items as { id: string; name: string; country: string; status: Status; totalAmountSpent: number; totalTransactions: number }[]).entries()) {
        const [stored] = await service.query<{ name: string; country: string; status: Status; amount_cents: number; total_transactions: number; last_activity_at: number }>(
          'SELECT * FROM customers WHERE id = ?',
          Number(item.id),
        );
        assert.ok(stored, `${label}: top item ${item.id} exists`);
        assert.deepEqual(item, {
          id: item.id,
          name: stored.name,
          country: stored.country,
          status: stored.status,
          totalAmountSpent: stored.amount_cents / 100,
          totalTransactions: stored.total_transactions,
        });
        const want = expectedTop[i]!;
        assert.deepEqual([stored.amount_cents, stored.last_activity_at], [want.amount_cents, want.last_activity_at], `${label}: top #${i + 1}`);
        seen.add(item.id);
      }
      assert.equal(seen.size, top.body.items.length);

      // List totals: everyone, by status, by country (any case), and both.
      const listTotal = async (params: string) => (await service.request('GET', `/v1/customers?limit=1&${params}`, { token })).body.total as number;
      assert.equal(await listTotal(''), n, `${label}: list total`);
      for (const status of ['active', 'inactive', 'churned'] as const) assert.equal(await listTotal(`status=${status}`), counts[status], `${label}: ${status}`);
      for (const country of ['France', 'germany', 'KENYA']) {
        const key = country.toLowerCase();
        const byCountry = await service.queryValue('SELECT count(*) AS n FROM customers WHERE lower(trim(country)) = ?', key);
        assert.equal(await listTotal(`country=${country}`), byCountry, `${label}: country ${country}`);
        const byBoth = await service.queryValue("SELECT count(*) AS n FROM customers WHERE lower(trim(country)) = ? AND status = 'churned'", key);
        assert.equal(await listTotal(`country=${country}&status=churned`), byBoth, `${label}: country ${country} churned`);
      }

      // Search: random terms of 1 to 5 characters give what a naive substring scan gives.
      // The terms are cut from emails: no LIKE wildcard (% or _) is in them.
      const naiveSearch = async (term: string) => {
        const like = `%${term.toLowerCase()}%`;
        const rows = await service.query<{ id: number }>('SELECT id FROM customers WHERE lower(name) LIKE ? OR lower(email) LIKE ? ORDER BY id', like, like);
        return rows.map((r) => String(r.id));
      };
      const emails = await storedEmails();
      for (let k = 0; k < 6 && emails.length > 0; k++) {
        const email = pick(emails);
        const length = int(1, 5);
        const start = int(0, email.length - length);
        const term = email.slice(start, start + length).toUpperCase();
        assert.doesNotMatch(term, /[%_]/);
        const want = await naiveSearch(term);
        const got = await service.request('GET', `/v1/customers?limit=200&sort=name&search=${encodeURIComponent(term)}`, { token });
        assert.equal(got.body.total, want.length, `${label}: search ${term}`);
        if (want.length <= 200) {
          assert.deepEqual(
            (got.body.items as { id: string }[]).map((c) => c.id).sort(),
            [...want].sort(),
            `${label}: search ${term}`,
          );
        }
      }
      // Every stored customer is found by its unique email local part; deleted and replaced emails find nobody.
      for (const email of emails.filter(() => random() < 0.15)) {
        const local = email.slice(0, email.indexOf('@'));
        const got = await service.request('GET', `/v1/customers?search=${encodeURIComponent(local)}`, { token });
        assert.equal(got.body.total, 1, `${label}: search ${local}`);
        assert.equal(got.body.items[0].email, email);
      }
      for (const email of [...deletedEmails, ...replacedEmails].filter((e) => !emails.includes(e)).slice(-20)) {
        const local = email.slice(0, email.indexOf('@'));
        const got = await service.request('GET', `/v1/customers?search=${encodeURIComponent(local)}`, { token });
        assert.equal(got.body.total, 0, `${label}: gone ${local}`);
      }
    };

    let advanced = 0;
    for (let op = 1; op <= 300; op++) {
      const r = random();
      const ids = await storedIds();
      if (r < 0.35 || ids.length < 3) {
        const fields = randomRow();
        const duplicate = random() < 0.1 && ids.length > 0;
        if (duplicate) fields.email = pick(await storedEmails()).toUpperCase();
        const before = await count();
        const reply = await service.request('POST', '/v1/customers', { token, body: fields });
        if (duplicate) assertProblem(reply, 409, 'conflict');
        else assert.equal(reply.status, 200, reply.text);
        assert.equal(await count(), before + (duplicate ? 0 : 1));
      } else if (r < 0.6) {
        const id = pick(ids);
        const changes: Record<string, unknown> = {};
        if (random() < 0.5) changes.status = pick(STATUSES);
        if (random() < 0.4) changes.totalAmountSpent = randomAmount();
        if (random() < 0.4) changes.lastActivityDate = randomDate();
        if (random() < 0.2) changes.country = pick(COUNTRIES);
        if (random() < 0.15) changes.name = `Renamed ${op}`;
        let conflict = false;
        const oldEmail = await emailOf(id);
        if (random() < 0.15) {
          conflict = random() < 0.3;
          changes.email = conflict ? pick((await storedEmails()).filter((e) => e !== oldEmail)) : newEmail();
        }
        const reply = await service.request('PATCH', `/v1/customers/${id}`, { token, body: changes });
        if (conflict) assertProblem(reply, 409, 'conflict');
        else {
          assert.equal(reply.status, 200, reply.text);
          if (changes.email) replacedEmails.push(oldEmail);
        }
      } else if (r < 0.75) {
        const id = pick(ids);
        const email = await emailOf(id);
        const reply = await service.request('DELETE', `/v1/customers/${id}`, { token });
        assert.equal(reply.status, 200, reply.text);
        deletedEmails.push(email);
      } else {
        const rows: unknown[] = [];
        let bad = 0;
        for (let k = int(1, 12); k > 0; k--) {
          const x = random();
          if (x < 0.08) {
            rows.push({ ...randomRow(), status: 'vip' });
            bad++;
          } else if (x < 0.16 && ids.length > 0) {
            rows.push({ ...randomRow(), email: pick(await storedEmails()) });
            bad++;
          } else rows.push(randomRow());
        }
        const before = await count();
        const reply = await service.request('POST', '/v1/customers/import', { token, body: { customers: rows } });
        assert.equal(reply.status, 200, reply.text);
        assert.equal(reply.body.skipped, bad, reply.text);
        assert.equal(reply.body.imported, rows.length - bad);
        assert.equal(await count(), before + rows.length - bad);
      }
      if (random() < 0.05 && advanced < 20) {
        service.clock.advance(3_600_000); // one hour: moves the stale cut-off across stored instants
        advanced++;
      }
      if (op % 60 === 0) await checkAll(`after ${op} operations`);
    }
    const total = await count();
    assert.ok(total > 50, `a meaningful base: ${total}`);
    assert.ok(deletedEmails.length > 10);
  });
});
