// customers.import from concurrent requests (on SQLite they share the writer thread's transactions; on PostgreSQL each
// is its own): each request's valid rows are stored exactly once, its failures are reported, and the aggregates, the
// search index and the segment counts equal a recomputation from the rows. The clock is TestClock's default, 2026-11-20T12:00:00.000Z.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { assertAggregatesExact, assertRecomputed, searchNames, segmentCount } from './support/aggregates.ts';
import { customerRow, importRows } from './support/customers.ts';

const NOW_MS = Date.parse('2026-11-20T12:00:00.000Z');
const DAY_MS = 86_400_000;
const COUNTRIES = ['France', 'Germany', 'Spain', 'Portugal'];
const STATUSES = ['active', 'inactive', 'churned'];

/** Row `n` of the shared pool: every value follows from n, so two requests holding n carry the same customer. */
function poolRow(n: number) {
  return {
    name: `Pooled ${n}`,
    email: `pooled${n}@imports.example.com`,
    country: COUNTRIES[n % COUNTRIES.length],
    totalTransactions: n % 7,
    totalAmountSpent: (n * 37) % 1000 + 0.25,
    lastActivityDate: new Date(NOW_MS - (n % 90) * DAY_MS - n * 1000).toISOString(),
    status: STATUSES[n % STATUSES.length],
  };
}

/** `assertRecomputed` on the database of a service, whichever its engine. */
function assertServiceRecomputed(service: TestService): Promise<void> {
  return assertRecomputed(service.query, service.anyEngine.kind === 'sqlite');
}

describe('imports from concurrent clients', () => {
  let service: TestService;
  let token: string;

  before(async () => {
    service = await startService();
    token = await service.tokenFor('lifecycle_marketer');
  });
  after(() => service.close());

  test('overlapping requests store each valid email once, report every failure by row, and keep the aggregates exact', async () => {
    // Four requests of 300 rows drawn from a pool of 600 customers, overlapping; every 50th row is invalid.
    const requests = [0, 150, 300, 450].map((start) =>
      Array.from({ length: 300 }, (_, i) => {
        const n = (start + i * 2) % 600;
        return i % 50 === 49 ? { ...poolRow(n), totalTransactions: -1 } : poolRow(n);
      }),
    );
    const replies = await Promise.all(
      requests.map((customers) => service.request('POST', '/v1/customers/import', { token, body: { customers } })),
    );
    const claimed = new Map<string, number>();
    replies.forEach((reply, r) => {
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.imported + reply.body.skipped, 300);
      for (const failure of reply.body.failures) {
        const sent = requests[r]![failure.row - 1]!;
        assert.equal(failure.email, sent.email);
        if (sent.totalTransactions === -1) assert.deepEqual(failure.errors.map((e: { field: string }) => e.field), ['totalTransactions']);
        else assert.equal(failure.reason, `A customer with the email ${sent.email} already exists.`);
      }
      const failed = new Set(reply.body.failures.map((f: { row: number }) => f.row));
      requests[r]!.forEach((sent, i) => {
        if (!failed.has(i + 1)) claimed.set(sent.email, (claimed.get(sent.email) ?? 0) + 1);
      });
    });
    assert.ok([...claimed.values()].every((n) => n === 1), 'no email was stored by two requests');
    const stored = (await service.query<{ email: string }>("SELECT email FROM customers WHERE email LIKE '%imports.example.com'")).map((r) => r.email);
    assert.deepEqual(stored.sort(), [...claimed.keys()].sort());
    const validEmails = new Set(requests.flat().filter((c) => c.totalTransactions >= 0).map((c) => c.email));
    assert.equal(stored.length, validEmails.size);

    await assertServiceRecomputed(service);
    for (const country of COUNTRIES) {
      const reply = await service.request('POST', '/v1/segments/preview', {
        token,
        body: { conditions: [{ field: 'country', operator: 'eq', value: country }, { field: 'totalTransactions', operator: 'gte', value: 3 }] },
      });
      const naive = await service.queryValue('SELECT count(*) FROM customers WHERE country_key = ? AND total_transactions >= 3', country.toLowerCase());
      assert.equal(reply.body.matchCount, naive, country);
    }
  });

  test('importing the same file again stores nothing and reports every row as taken', async () => {
    const customers = Array.from({ length: 20 }, (_, i) => poolRow(1000 + i));
    const first = await service.request('POST', '/v1/customers/import', { token, body: { customers } });
    assert.deepEqual(first.body, { imported: 20, updated: 0, skipped: 0, failures: [] });
    const kpis = (await service.request('GET', '/v1/customers/kpis', { token })).body;
    const again = await service.request('POST', '/v1/customers/import', { token, body: { customers } });
    assert.equal(again.body.imported, 0);
    assert.deepEqual(again.body.failures.map((f: { row: number }) => f.row), customers.map((_, i) => i + 1));
    assert.deepEqual((await service.request('GET', '/v1/customers/kpis', { token })).body, kpis);
    await assertServiceRecomputed(service);
  });
});

describe('customers.import with onExisting', () => {
  let service: TestService;
  let token: string;

  before(async () => {
    service = await startService();
    token = await service.tokenFor('lifecycle_marketer');
  });
  after(() => service.close());

  const stored = async (email: string) =>
    (await service.query('SELECT id, name, country, status, amount_cents, last_activity_at FROM customers WHERE email = ?', email))[0];
  const KENYA_BIG = [{ field: 'country', operator: 'eq', value: 'Kenya' }, { field: 'totalTransactions', operator: 'gte', value: 5 }];

  test('onExisting=update replaces stored customers in one transaction: counts, aggregates, a segment count and search are exact', async () => {
    const [ada, bo, cy] = [
      customerRow({ name: 'Ada Oldname', country: 'France', status: 'active', totalTransactions: 1, totalAmountSpent: 10 }),
      customerRow({ name: 'Bo Before', country: 'Kenya', status: 'active', totalTransactions: 9, totalAmountSpent: 500, lastActivityDate: '2026-03-01T00:00:00.000Z' }),
      customerRow({ name: 'Cy Same', country: 'Kenya', status: 'inactive', totalTransactions: 7 }),
    ];
    await importRows(service, token, [ada, bo, cy]);
    const adaId = ((await stored(ada.email)) as { id: number }).id;
    assert.equal(await segmentCount(service, token, KENYA_BIG), 2);
    await assertAggregatesExact(service, token, 'before');

    const fresh = customerRow({ name: 'Dee New', country: 'Kenya', totalTransactions: 2 });
    const customers = [
      { ...ada, email: ` ${ada.email.toUpperCase()} `, name: 'Ada Newname', country: 'Kenya', status: 'churned', totalTransactions: 12, totalAmountSpent: 1234.5, lastActivityDate: '2026-10-15' },
      { ...bo, status: 'churned', totalAmountSpent: 0.1 },
      cy,
      fresh,
      { ...cy, totalAmountSpent: -1 },
      { ...ada, name: 'Ada Third' },
    ];
    const reply = await service.request('POST', '/v1/customers/import', { token, body: { onExisting: 'update', customers } });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, {
      imported: 1,
      updated: 3,
      skipped: 2,
      failures: [
        { row: 5, email: cy.email, reason: 'Amount spent must be a number of 0 or more.', errors: [{ field: 'totalAmountSpent', message: 'Amount spent must be a number of 0 or more.' }] },
        {
          row: 6,
          email: ada.email,
          reason: `The email ${ada.email} is on an earlier row of this file; only that row is imported.`,
          errors: [{ field: 'email', message: `The email ${ada.email} is on an earlier row of this file; only that row is imported.` }],
        },
      ],
    });
    assert.equal(reply.body.imported + reply.body.updated + reply.body.skipped, customers.length);
    assert.deepEqual(await stored(ada.email), { id: adaId, name: 'Ada Newname', country: 'Kenya', status: 'churned', amount_cents: 123450, last_activity_at: Date.parse('2026-10-15') });
    assert.equal(await segmentCount(service, token, KENYA_BIG), 3, 'Ada moves in, Bo and Cy stay, Dee stays out');
    assert.equal(await segmentCount(service, token, KENYA_BIG), await service.queryValue("SELECT count(*) FROM customers WHERE country_key = 'kenya' AND total_transactions >= 5"));
    await assertAggregatesExact(service, token, 'after the update');
    assert.deepEqual(await searchNames(service, token, 'Newname'), ['Ada Newname']);
    assert.deepEqual(await searchNames(service, token, 'Oldname'), []);
    await assertServiceRecomputed(service);
  });

  test('without onExisting a stored email is a reported failure and the stored customer is left as it was', async () => {
    const kept = customerRow({ name: 'Kept Asis', totalAmountSpent: 42 });
    await importRows(service, token, [kept]);
    const before = await stored(kept.email);
    const kpis = (await service.request('GET', '/v1/customers/kpis', { token })).body;
    for (const body of [{ customers: [{ ...kept, name: 'Changed', totalAmountSpent: 1 }] }, { onExisting: 'skip', customers: [{ ...kept, name: 'Changed', totalAmountSpent: 1 }] }]) {
      const reply = await service.request('POST', '/v1/customers/import', { token, body });
      const reason = `A customer with the email ${kept.email} already exists.`;
      assert.deepEqual(reply.body, { imported: 0, updated: 0, skipped: 1, failures: [{ row: 1, email: kept.email, reason, errors: [{ field: 'email', message: reason }] }] });
    }
    assert.deepEqual(await stored(kept.email), before);
    assert.deepEqual((await service.request('GET', '/v1/customers/kpis', { token })).body, kpis);
    assert.deepEqual(await searchNames(service, token, 'Changed'), []);
  });

  test('an onExisting other than skip or update is 400 naming onExisting, and nothing is stored', async () => {
    const row = customerRow();
    for (const onExisting of ['merge', 'UPDATE', 1, null]) {
      const reply = await service.request('POST', '/v1/customers/import', { token, body: { onExisting, customers: [row] } });
      assertProblem(reply, 400, 'validation_failed', ['onExisting']);
    }
    assert.equal(await stored(row.email), undefined);
  });
});
