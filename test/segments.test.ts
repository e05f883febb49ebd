// Segments: preview, save, list, get (recount), update, delete, validation, roles, and the in-memory matching engine
// behind every count (interface.md sections 2, 4 and 7; product.md section 5). The clock is TestClock's default,
// 2026-11-20T12:00:00.000Z, so "30 days before now" is 2026-10-21T12:00:00.000Z.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Customer } from '../src/domain/customers.ts';
import type { Condition, NumericOperator } from '../src/domain/segments.ts';
import { prng } from '../scripts/synthetic-customers.ts';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { createCustomer as createShared, customerRow, importRows } from './support/customers.ts';

const NOW = '2026-11-20T12:00:00.000Z';
const NOW_MS = Date.parse(NOW);
const DAY_MS = 86_400_000;
/** Exactly 30 days before the clock. */
const T30 = NOW_MS - 30 * DAY_MS;
/** Access tokens live one day, so tests may move the clock by a few milliseconds or hours without signing in again. */
const ENV = { ACCESS_TOKEN_TTL: '86400' };

const SEGMENT_KEYS = ['conditions', 'createdAt', 'id', 'matchCount', 'name', 'updatedAt'];
const CONDITION_KEYS = ['field', 'id', 'operator', 'value'];

type Operator = NumericOperator;

const iso = (ms: number) => new Date(ms).toISOString();
const country = (value: string): Condition => ({ field: 'country', operator: 'eq', value });
const tx = (operator: Operator, value: number): Condition => ({ field: 'totalTransactions', operator, value });
const amount = (operator: Operator, value: number): Condition => ({ field: 'totalAmountSpent', operator, value });
const days = (operator: Operator, value: number): Condition => ({ field: 'lastActivityDays', operator, value });

type Row = Omit<Customer, 'id'>;

/** A valid customer body with a unique email, in a country no condition names unless a test sets one. */
function row(fields: Partial<Row> = {}): Row {
  return customerRow({ country: 'Nowhere', totalAmountSpent: 1, ...fields });
}

async function createCustomer(service: TestService, token: string, fields: Partial<Row>): Promise<string> {
  return (await createShared(service, token, row(fields))).id;
}

/** Previews the conditions and returns matchCount, checking the reply is exactly `{ matchCount: <integer> }`. */
async function preview(service: TestService, token: string, conditions: unknown[]): Promise<number> {
  const reply = await service.request('POST', '/v1/segments/preview', { token, body: { conditions } });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(Object.keys(reply.body), ['matchCount'], reply.text);
  assert.ok(Number.isInteger(reply.body.matchCount), reply.text);
  return reply.body.matchCount as number;
}

async function saveSegment(service: TestService, token: string, name: string, conditions: unknown[]) {
  const reply = await service.request('POST', '/v1/segments', { token, body: { name, conditions } });
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

async function listSegments(service: TestService, token: string): Promise<any[]> {
  const reply = await service.request('GET', '/v1/segments', { token });
  assert.equal(reply.status, 200, reply.text);
  assert.ok(Array.isArray(reply.body), reply.text);
  return reply.body as any[];
}

/** Asserts each [conditions, expected count, why] case against preview. */
async function expectCounts(service: TestService, token: string, cases: [Condition[], number, string][]): Promise<void> {
  for (const [conditions, expected, why] of cases) {
    assert.equal(await preview(service, token, conditions), expected, `${JSON.stringify(conditions)}: ${why}`);
  }
}

// =============================================================================================
// Matching on a hand-checkable dataset of six customers (the clock is NOW):
//
//   name  country   transactions  amount   last activity
//   c1    France     4             99.99   exactly 30 days ago               (T30)
//   c2    FRANCE     5            100      30 days + 1 ms ago                (T30 - 1 ms)
//   c3    Germany    6            100.01   30 days - 1 ms ago                (T30 + 1 ms)
//   c4    France     5              0.29   1 day ago
//   c5    Spain      0              0.30   400 days ago
//   c6    Francia   50              0.28   now

describe('segments preview: matching at exact boundaries on a hand-checkable dataset', () => {
  let service: TestService;
  let token: string;

  before(async () => {
    service = await startService({ env: ENV });
    token = await service.tokenFor('lifecycle_marketer');
    const rows: Partial<Row>[] = [
      { name: 'c1', country: 'France', totalTransactions: 4, totalAmountSpent: 99.99, lastActivityDate: iso(T30) },
      { name: 'c2', country: 'FRANCE', totalTransactions: 5, totalAmountSpent: 100, lastActivityDate: iso(T30 - 1) },
      { name: 'c3', country: 'Germany', totalTransactions: 6, totalAmountSpent: 100.01, lastActivityDate: iso(T30 + 1) },
      { name: 'c4', country: 'France', totalTransactions: 5, totalAmountSpent: 0.29, lastActivityDate: iso(NOW_MS - DAY_MS) },
      { name: 'c5', country: 'Spain', totalTransactions: 0, totalAmountSpent: 0.3, lastActivityDate: iso(NOW_MS - 400 * DAY_MS) },
      { name: 'c6', country: 'Francia', totalTransactions: 50, totalAmountSpent: 0.28, lastActivityDate: NOW },
    ];
    for (const fields of rows) await createCustomer(service, token, fields);
    assert.equal(iso(T30), '2026-10-21T12:00:00.000Z');
  });
  after(() => service.close());

  test('totalTransactions: gt and lt are strict, gte and lte inclusive at the exact integer value', async () => {
    await expectCounts(service, token, [
      [[tx('gt', 5)], 2, 'c3 (6), c6 (50)'],
      [[tx('gte', 5)], 4, 'c2, c4 (5), c3, c6'],
      [[tx('lt', 5)], 2, 'c1 (4), c5 (0)'],
      [[tx('lte', 5)], 4, 'c1, c5, c2, c4'],
      [[tx('gte', 0)], 6, 'everyone'],
      [[tx('lte', 0)], 1, 'c5'],
      [[tx('lt', 0)], 0, 'nobody below 0'],
      [[tx('gte', 50)], 1, 'c6'],
      [[tx('gt', 50)], 0, 'nobody above 50'],
      // A fractional value lies between integers: gt 4.5 and gte 4.5 mean the same.
      [[tx('gt', 4.5)], 4, 'c2, c3, c4, c6'],
      [[tx('gte', 4.5)], 4, 'c2, c3, c4, c6'],
      [[tx('lte', 4.5)], 2, 'c1, c5'],
    ]);
  });

  test('totalAmountSpent: strict and inclusive at 100 with customers at 99.99, 100 and 100.01', async () => {
    await expectCounts(service, token, [
      [[amount('gt', 100)], 1, 'c3 (100.01)'],
      [[amount('gte', 100)], 2, 'c2 (100), c3'],
      [[amount('lt', 100)], 4, 'c1 (99.99), c4, c5, c6'],
      [[amount('lte', 100)], 5, 'all but c3'],
      [[amount('gt', 99.99)], 2, 'c2, c3'],
      [[amount('gte', 100.01)], 1, 'c3'],
      [[amount('lt', 100.01)], 5, 'all but c3'],
      [[amount('gt', 100.005)], 1, 'c3: 100.005 lies between 100 and 100.01'],
      [[amount('lt', 100.005)], 5, 'all but c3'],
    ]);
  });

  test('totalAmountSpent: 0.29 (whose *100 is not exact in binary) and 0.30 are exact boundaries', async () => {
    // 0.29 * 100 === 28.999999999999996 in IEEE doubles: a bound computed as value * 100 would misplace 0.29.
    assert.notEqual(0.29 * 100, 29);
    await expectCounts(service, token, [
      [[amount('gt', 0.29)], 4, 'c1, c2, c3, c5 (0.30): c4 at 0.29 is not greater'],
      [[amount('gte', 0.29)], 5, 'c4 too'],
      [[amount('lt', 0.29)], 1, 'c6 (0.28) only'],
      [[amount('lte', 0.29)], 2, 'c4 (0.29) and c6 (0.28)'],
      [[amount('gte', 0.3)], 4, 'c5 (0.30), c1, c2, c3'],
      [[amount('gt', 0.3)], 3, 'c1, c2, c3'],
      [[amount('lt', 0.3)], 2, 'c4, c6'],
      [[amount('lte', 0.3)], 3, 'c4, c5, c6'],
    ]);
  });

  test('lastActivityDays: gt 30 is earlier than now minus 30 days, lt 30 later, gte and lte include the boundary', async () => {
    assert.equal(service.clock.now().toISOString(), NOW);
    await expectCounts(service, token, [
      [[days('gt', 30)], 2, 'c2 (30 days + 1 ms ago), c5 (400 days)'],
      [[days('gte', 30)], 3, 'c1 (exactly 30 days), c2, c5'],
      [[days('lt', 30)], 3, 'c3 (30 days - 1 ms ago), c4 (1 day), c6 (now)'],
      [[days('lte', 30)], 4, 'c1, c3, c4, c6'],
      [[days('lte', 0)], 1, 'c6, last active exactly now'],
      [[days('lt', 0)], 0, 'nobody later than now'],
      [[days('gt', 0)], 5, 'everyone but c6'],
      [[days('gte', 400)], 1, 'c5, exactly 400 days ago'],
      [[days('gt', 400)], 0, 'nobody earlier than 400 days ago'],
    ]);
  });

  test('lastActivityDays follows the clock: moving it by 1 ms moves the boundary across c1, c2 and c3', async () => {
    try {
      // Clock 1 ms earlier: the boundary is T30 - 1 ms, where c2 is.
      service.clock.advance(-1);
      await expectCounts(service, token, [
        [[days('gt', 30)], 1, 'c5 only: c2 is now exactly on the boundary'],
        [[days('gte', 30)], 2, 'c2, c5'],
        [[days('lt', 30)], 4, 'c1, c3, c4, c6'],
        [[days('lte', 30)], 5, 'all but c5'],
      ]);
      // Clock 1 ms later than NOW: the boundary is T30 + 1 ms, where c3 is.
      service.clock.advance(2);
      await expectCounts(service, token, [
        [[days('gt', 30)], 3, 'c1, c2, c5'],
        [[days('gte', 30)], 4, 'c1, c2, c3, c5'],
        [[days('lt', 30)], 2, 'c4, c6'],
        [[days('lte', 30)], 3, 'c3, c4, c6'],
      ]);
      // Twelve hours later c6 (last active at NOW) is half a day idle.
      service.clock.advance(12 * 3_600_000 - 1);
      await expectCounts(service, token, [
        [[days('lt', 0.5)], 0, 'c6 is exactly 0.5 days idle'],
        [[days('lte', 0.5)], 1, 'c6'],
        [[days('gt', 1.5)], 4, 'c1, c2, c3, c5: c4 is exactly 1.5 days idle'],
        [[days('gte', 1.5)], 5, 'c4 too'],
      ]);
    } finally {
      service.clock.set(NOW);
    }
    assert.equal(await preview(service, token, [days('gt', 30)]), 2);
  });

  test('country matches without regard to case, trims the value, and matches only by equality', async () => {
    await expectCounts(service, token, [
      [[country('france')], 3, "c1 'France', c2 'FRANCE', c4 'France'"],
      [[country('France')], 3, 'same'],
      [[country('FRANCE')], 3, 'same'],
      [[country('  fRaNcE  ')], 3, 'value trimmed'],
      [[country('Fra')], 0, 'a prefix is not equal'],
      [[country('Franc')], 0, 'a prefix is not equal'],
      [[country('Francia')], 1, "c6 only, not the 'Franc...' others"],
      [[country('france ia')], 0, 'no fuzzy matching'],
      [[country('GERMANY')], 1, 'c3'],
      [[country('Atlantis')], 0, 'unknown country'],
    ]);
  });

  test('conditions combine with AND; two different countries give 0; a same country twice is that country', async () => {
    await expectCounts(service, token, [
      [[country('France'), tx('gte', 5)], 2, 'c2, c4'],
      [[country('France'), amount('lt', 1)], 1, 'c4'],
      [[country('France'), tx('gte', 5), days('gt', 30)], 1, 'c2'],
      [[tx('gte', 5), amount('gte', 100), days('lt', 30)], 1, 'c3'],
      [[tx('gte', 4), tx('lte', 5)], 3, 'c1, c2, c4: two bounds on one field'],
      [[amount('gt', 0.28), amount('lt', 0.3)], 1, 'c4'],
      [[country('France'), country('Germany')], 0, 'no customer is in two countries'],
      [[country('Germany'), tx('gt', 0), country('France')], 0, 'two countries, wherever they appear'],
      [[country('France'), country('fRANCE ')], 3, 'the same country twice'],
      [[tx('gt', 5), tx('lt', 5)], 0, 'contradictory bounds'],
    ]);
  });

  test('zero matches gives exactly { matchCount: 0 }, and preview replies exactly { matchCount } with an integer', async () => {
    const none = await service.request('POST', '/v1/segments/preview', { token, body: { conditions: [tx('gt', 1000)] } });
    assert.equal(none.status, 200, none.text);
    assert.equal(none.headers.get('x-api-version'), 'v1');
    assert.deepEqual(none.body, { matchCount: 0 });
    const some = await service.request('POST', '/v1/segments/preview', { token, body: { conditions: [country('france')] } });
    assert.equal(some.status, 200, some.text);
    assert.deepEqual(some.body, { matchCount: 3 });
    assert.equal(some.text, '{"matchCount":3}');
  });

  test('ten conditions are accepted (the upper limit)', async () => {
    const ten = [country('France'), ...Array.from({ length: 9 }, () => tx('gte', 4))];
    assert.equal(ten.length, 10);
    assert.equal(await preview(service, token, ten), 3);
  });
});

// =============================================================================================
// Validation of preview, save and update.

describe('segments: validation of conditions and names', () => {
  let service: TestService;
  let token: string;

  before(async () => {
    service = await startService({ env: ENV });
    token = await service.tokenFor('lifecycle_marketer');
    await createCustomer(service, token, { country: 'France', totalTransactions: 3 });
  });
  after(() => service.close());

  const valid = [country('France'), tx('gte', 1)];
  const conditionCases: [string, unknown, string[]][] = [
    ['an empty conditions array', [], ['conditions']],
    ['11 conditions', Array.from({ length: 11 }, () => tx('gte', 0)), ['conditions']],
    ['conditions not an array', { field: 'country', operator: 'eq', value: 'France' }, ['conditions']],
    ['an unknown field', [{ field: 'email', operator: 'eq', value: 'x' }], ['conditions.0.field']],
    ['a missing field', [{ operator: 'gt', value: 1 }], ['conditions.0.field']],
    ['eq on a numeric field', [{ field: 'totalTransactions', operator: 'eq', value: 5 }], ['conditions.0.operator']],
    ['an unknown operator on a numeric field', [{ field: 'totalAmountSpent', operator: 'between', value: 5 }], ['conditions.0.operator']],
    ['gt on country', [{ field: 'country', operator: 'gt', value: 'France' }], ['conditions.0.operator']],
    ['a string value for a numeric field', [{ field: 'totalAmountSpent', operator: 'gt', value: '100' }], ['conditions.0.value']],
    ['a null value for a numeric field', [{ field: 'lastActivityDays', operator: 'lt', value: null }], ['conditions.0.value']],
    ['a numeric value for country', [{ field: 'country', operator: 'eq', value: 33 }], ['conditions.0.value']],
    ['an empty country', [{ field: 'country', operator: 'eq', value: '' }], ['conditions.0.value']],
    ['a blank country', [{ field: 'country', operator: 'eq', value: '   ' }], ['conditions.0.value']],
    ['a bad value at index 2', [...valid, { field: 'totalTransactions', operator: 'gt', value: '5' }], ['conditions.2.value']],
    ['a bad operator at index 2', [...valid, { field: 'country', operator: 'lte', value: 'Spain' }], ['conditions.2.operator']],
    ['a bad field at index 2', [...valid, { field: 'tier', operator: 'eq', value: 'gold' }], ['conditions.2.field']],
  ];

  for (const [what, conditions, fields] of conditionCases) {
    test(`preview, save and update reject ${what} with 400 naming ${fields.join(', ')}`, async () => {
      assertProblem(await service.request('POST', '/v1/segments/preview', { token, body: { conditions } }), 400, 'validation_failed', fields);
      assertProblem(await service.request('POST', '/v1/segments', { token, body: { name: 'Bad one', conditions } }), 400, 'validation_failed', fields);
      const saved = await saveSegment(service, token, 'Valid one', valid);
      const patched = await service.request('PATCH', `/v1/segments/${saved.id}`, { token, body: { conditions } });
      assertProblem(patched, 400, 'validation_failed', fields);
      // Nothing changed.
      const got = await service.request('GET', `/v1/segments/${saved.id}`, { token });
      assert.deepEqual(got.body.conditions, saved.conditions);
    });
  }

  test('preview and save without conditions are 400 naming conditions; a malformed body is 400 naming body', async () => {
    assertProblem(await service.request('POST', '/v1/segments/preview', { token, body: {} }), 400, 'validation_failed', ['conditions']);
    assertProblem(await service.request('POST', '/v1/segments', { token, body: { name: 'No conditions' } }), 400, 'validation_failed', ['conditions']);
    assertProblem(await service.request('POST', '/v1/segments', { token, body: { conditions: valid } }), 400, 'validation_failed', ['name']);
    const malformed = await service.request('POST', '/v1/segments/preview', { token, raw: '{"conditions": [', headers: { 'content-type': 'application/json' } });
    assertProblem(malformed, 400, 'validation_failed', ['body']);
  });

  test('numeric values must be finite numbers; negative and fractional ones are accepted', async () => {
    // JSON cannot carry Infinity or NaN; a huge exponent parses to Infinity.
    const infinite = await service.request('POST', '/v1/segments/preview', {
      token,
      raw: '{"conditions":[{"field":"totalAmountSpent","operator":"gt","value":1e999}]}',
      headers: { 'content-type': 'application/json' },
    });
    assertProblem(infinite, 400, 'validation_failed', ['conditions.0.value']);
    assert.equal(await preview(service, token, [tx('gt', -1)]), 1);
    assert.equal(await preview(service, token, [tx('lt', -0.5)]), 0);
    assert.equal(await preview(service, token, [tx('gt', 2.5)]), 1);
    assert.equal(await preview(service, token, [tx('gt', 3.0001)]), 0);
  });

  test('segment names are trimmed and must be 2 to 80 characters: 1 and 81 are rejected, 2 and 80 accepted', async () => {
    for (const name of ['a', '  a  ', '', '   ', 'x'.repeat(81), ` ${'y'.repeat(81)} `]) {
      const reply = await service.request('POST', '/v1/segments', { token, body: { name, conditions: valid } });
      assertProblem(reply, 400, 'validation_failed', ['name']);
    }
    assertProblem(await service.request('POST', '/v1/segments', { token, body: { name: 42, conditions: valid } }), 400, 'validation_failed', ['name']);

    const two = await saveSegment(service, token, '  ab  ', valid);
    assert.equal(two.name, 'ab');
    const eighty = await saveSegment(service, token, `\t${'z'.repeat(80)} `, valid);
    assert.equal(eighty.name, 'z'.repeat(80));

    // The same rule on update; a rejected rename leaves the name as it was.
    for (const name of [' b ', 'q'.repeat(81)]) {
      const reply = await service.request('PATCH', `/v1/segments/${two.id}`, { token, body: { name } });
      assertProblem(reply, 400, 'validation_failed', ['name']);
    }
    const got = await service.request('GET', `/v1/segments/${two.id}`, { token });
    assert.equal(got.body.name, 'ab');
    const renamed = await service.request('PATCH', `/v1/segments/${two.id}`, { token, body: { name: ` ${'r'.repeat(80)} ` } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.name, 'r'.repeat(80));
  });
});

// =============================================================================================
// Save, list, get, update, delete and roles, over four customers:
//   Norway  tx 10  500.00  10 days ago
//   norway  tx  2   50.00  100 days ago
//   Sweden  tx 20 1000.00   5 days ago
//   Denmark tx  0    0.00  200 days ago

describe('segments: save, list, get, update, delete and roles', () => {
  let service: TestService;
  let lead: string;
  let marketer: string;

  before(async () => {
    service = await startService({ env: ENV });
    lead = await service.tokenFor('marketing_lead');
    marketer = await service.tokenFor('lifecycle_marketer');
    await importRows(service, lead, [
      row({ country: 'Norway', totalTransactions: 10, totalAmountSpent: 500, lastActivityDate: iso(NOW_MS - 10 * DAY_MS) }),
      row({ country: 'norway', totalTransactions: 2, totalAmountSpent: 50, lastActivityDate: iso(NOW_MS - 100 * DAY_MS) }),
      row({ country: 'Sweden', totalTransactions: 20, totalAmountSpent: 1000, lastActivityDate: iso(NOW_MS - 5 * DAY_MS) }),
      row({ country: 'Denmark', totalTransactions: 0, totalAmountSpent: 0, lastActivityDate: iso(NOW_MS - 200 * DAY_MS) }),
    ]);
  });
  after(() => service.close());

  test('save stores the count preview gives, with exactly id, name, conditions, matchCount, createdAt, updatedAt', async () => {
    service.clock.set(NOW);
    const conditions = [country('  NORWAY '), amount('gte', 50), days('lte', 100.5), tx('lt', 10.5)];
    assert.equal(await preview(service, marketer, conditions), 2);

    const reply = await service.request('POST', '/v1/segments', { token: marketer, body: { name: '  Nordic buyers  ', conditions } });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.headers.get('x-api-version'), 'v1');
    const saved = reply.body;
    assert.deepEqual(Object.keys(saved).sort(), SEGMENT_KEYS);
    assert.equal(typeof saved.id, 'string');
    assert.ok(saved.id.length > 0);
    assert.equal(saved.name, 'Nordic buyers');
    assert.equal(saved.matchCount, 2);
    assert.equal(saved.createdAt, NOW);
    assert.equal(saved.updatedAt, NOW);

    // Stored conditions: an id each, distinct, same order and values (the country value trimmed, case kept).
    assert.equal(saved.conditions.length, 4);
    for (const c of saved.conditions) {
      assert.deepEqual(Object.keys(c).sort(), CONDITION_KEYS);
      assert.equal(typeof c.id, 'string');
      assert.ok(c.id.length > 0);
    }
    assert.equal(new Set(saved.conditions.map((c: { id: string }) => c.id)).size, 4);
    assert.deepEqual(
      saved.conditions.map(({ field, operator, value }: Condition) => ({ field, operator, value })),
      [country('NORWAY'), amount('gte', 50), days('lte', 100.5), tx('lt', 10.5)],
    );

    // GET returns the same segment (the count is still 2).
    const got = await service.request('GET', `/v1/segments/${saved.id}`, { token: lead });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, saved);

    // A second save of the same conditions gets a new segment id and new condition ids.
    const again = await saveSegment(service, marketer, 'Nordic buyers', conditions);
    assert.notEqual(again.id, saved.id);
    assert.equal(again.matchCount, 2);
    const allIds = [...saved.conditions, ...again.conditions].map((c: { id: string }) => c.id);
    assert.equal(new Set(allIds).size, 8);
  });

  test('save stores 0 for conditions nobody matches, as preview does', async () => {
    const conditions = [country('Norway'), country('Sweden')];
    assert.equal(await preview(service, lead, conditions), 0);
    const saved = await saveSegment(service, lead, 'Nobody', conditions);
    assert.equal(saved.matchCount, 0);
    const saved2 = await saveSegment(service, lead, 'Big spenders', [amount('gt', 499.99)]);
    assert.equal(saved2.matchCount, await preview(service, lead, [amount('gt', 499.99)]));
    assert.equal(saved2.matchCount, 2);
  });

  test('GET /v1/segments is newest first and shows the stored counts', async () => {
    service.clock.set('2026-11-20T13:00:00.000Z');
    try {
      const a = await saveSegment(service, lead, 'List A', [country('Sweden')]);
      service.clock.advance(1000);
      const b = await saveSegment(service, marketer, 'List B', [tx('gte', 2)]);
      service.clock.advance(1000);
      const c = await saveSegment(service, lead, 'List C', [country('Denmark'), tx('lte', 0)]);
      assert.equal(a.createdAt, '2026-11-20T13:00:00.000Z');
      assert.equal(b.createdAt, '2026-11-20T13:00:01.000Z');
      assert.equal(c.createdAt, '2026-11-20T13:00:02.000Z');

      const list = await listSegments(service, lead);
      assert.deepEqual(list.slice(0, 3).map((s) => s.id), [c.id, b.id, a.id]);
      assert.deepEqual(list.slice(0, 3).map((s) => s.matchCount), [1, 3, 1]);
      for (const s of list) assert.deepEqual(Object.keys(s).sort(), SEGMENT_KEYS);
      // The whole list is ordered by createdAt, newest first.
      const created = list.map((s) => s.createdAt as string);
      assert.deepEqual(created, [...created].sort().reverse());
      // List entries equal what save returned.
      assert.deepEqual(list[0], c);
      assert.deepEqual(list[2], a);
    } finally {
      service.clock.set(NOW);
    }
  });

  test('after customers change, the list keeps the stored count; GET /v1/segments/{id} recounts, stores, and the list shows it', async () => {
    const saved = await saveSegment(service, lead, 'Finns', [country('Finland')]);
    assert.equal(saved.matchCount, 0);
    const ids = [
      await createCustomer(service, lead, { country: 'Finland' }),
      await createCustomer(service, marketer, { country: 'FINLAND' }),
    ];
    const stored = () => listSegments(service, lead).then((list) => list.find((s) => s.id === saved.id).matchCount);
    assert.equal(await stored(), 0, 'the list shows the count stored at save');

    const got = await service.request('GET', `/v1/segments/${saved.id}`, { token: marketer });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(Object.keys(got.body).sort(), SEGMENT_KEYS);
    assert.equal(got.body.matchCount, 2, 'GET recounts');
    assert.deepEqual(got.body.conditions, saved.conditions);
    assert.equal(await stored(), 2, 'the recount was stored');

    // A delete: the list keeps 2 until the next GET.
    const removed = await service.request('DELETE', `/v1/customers/${ids[0]}`, { token: lead });
    assert.equal(removed.status, 200, removed.text);
    assert.equal(await stored(), 2);
    assert.equal(await preview(service, lead, [country('Finland')]), 1);
    const regot = await service.request('GET', `/v1/segments/${saved.id}`, { token: lead });
    assert.equal(regot.body.matchCount, 1);
    assert.equal(await stored(), 1);
  });

  test('PATCH renaming only keeps the conditions and recounts; replacing conditions recounts and stores', async () => {
    service.clock.set(NOW);
    try {
      const saved = await saveSegment(service, lead, 'Icelanders', [country('Iceland'), tx('gte', 3)]);
      assert.equal(saved.matchCount, 0);
      await createCustomer(service, lead, { country: 'Iceland', totalTransactions: 3, totalAmountSpent: 30 });
      await createCustomer(service, lead, { country: 'iceland', totalTransactions: 7, totalAmountSpent: 70 });
      await createCustomer(service, lead, { country: 'Iceland', totalTransactions: 2, totalAmountSpent: 20 });

      service.clock.advance(60_000);
      const renamed = await service.request('PATCH', `/v1/segments/${saved.id}`, { token: marketer, body: { name: '  Icelandic regulars ' } });
      assert.equal(renamed.status, 200, renamed.text);
      assert.deepEqual(Object.keys(renamed.body).sort(), SEGMENT_KEYS);
      assert.equal(renamed.body.id, saved.id);
      assert.equal(renamed.body.name, 'Icelandic regulars');
      assert.deepEqual(renamed.body.conditions, saved.conditions, 'conditions kept, with their ids');
      assert.equal(renamed.body.matchCount, 2, 'recounted');
      assert.equal(renamed.body.createdAt, NOW);
      assert.equal(renamed.body.updatedAt, '2026-11-20T12:01:00.000Z');
      let listed = (await listSegments(service, lead)).find((s) => s.id === saved.id);
      assert.deepEqual(listed, renamed.body);

      service.clock.advance(60_000);
      const replaced = await service.request('PATCH', `/v1/segments/${saved.id}`, {
        token: marketer,
        body: { conditions: [amount('lte', 30), country(' ICELAND ')] },
      });
      assert.equal(replaced.status, 200, replaced.text);
      assert.equal(replaced.body.name, 'Icelandic regulars', 'name kept');
      assert.deepEqual(
        replaced.body.conditions.map(({ field, operator, value }: Condition) => ({ field, operator, value })),
        [amount('lte', 30), country('ICELAND')],
      );
      for (const c of replaced.body.conditions) assert.equal(typeof c.id, 'string');
      assert.equal(new Set(replaced.body.conditions.map((c: { id: string }) => c.id)).size, 2);
      assert.equal(replaced.body.matchCount, 2, 'the 30 and the 20 customers');
      assert.equal(replaced.body.updatedAt, '2026-11-20T12:02:00.000Z');
      listed = (await listSegments(service, lead)).find((s) => s.id === saved.id);
      assert.deepEqual(listed, replaced.body, 'stored');

      const both = await service.request('PATCH', `/v1/segments/${saved.id}`, {
        token: lead,
        body: { name: 'Iceland 7+', conditions: [tx('gte', 7), country('iceland')] },
      });
      assert.equal(both.status, 200, both.text);
      assert.equal(both.body.name, 'Iceland 7+');
      assert.equal(both.body.matchCount, 1);
      const got = await service.request('GET', `/v1/segments/${saved.id}`, { token: lead });
      assert.deepEqual(got.body, both.body);
    } finally {
      service.clock.set(NOW);
    }
  });

  test('PATCH, GET and DELETE of an unknown id are 404 not_found', async () => {
    const unknown = 'no-such-segment';
    assertProblem(await service.request('PATCH', `/v1/segments/${unknown}`, { token: lead, body: { name: 'Renamed' } }), 404, 'not_found');
    assertProblem(await service.request('PATCH', `/v1/segments/${unknown}`, { token: lead, body: { conditions: [tx('gt', 1)] } }), 404, 'not_found');
    assertProblem(await service.request('GET', `/v1/segments/${unknown}`, { token: lead }), 404, 'not_found');
    assertProblem(await service.request('DELETE', `/v1/segments/${unknown}`, { token: lead }), 404, 'not_found');
  });

  test('DELETE returns 200 with body null; a later GET is 404, a second DELETE is 404, and the list no longer has it', async () => {
    const saved = await saveSegment(service, lead, 'Short-lived', [country('Sweden')]);
    const removed = await service.request('DELETE', `/v1/segments/${saved.id}`, { token: lead });
    assert.equal(removed.status, 200, removed.text);
    assert.equal(removed.text, 'null');
    assertProblem(await service.request('GET', `/v1/segments/${saved.id}`, { token: lead }), 404, 'not_found');
    assertProblem(await service.request('DELETE', `/v1/segments/${saved.id}`, { token: lead }), 404, 'not_found');
    assertProblem(await service.request('PATCH', `/v1/segments/${saved.id}`, { token: lead, body: { name: 'Back' } }), 404, 'not_found');
    const list = await listSegments(service, lead);
    assert.equal(list.some((s) => s.id === saved.id), false);
  });

  test('a lifecycle_marketer may list, preview, create, get, update and delete segments', async () => {
    const created = await service.request('POST', '/v1/segments', { token: marketer, body: { name: 'By marketer', conditions: [country('Denmark')] } });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.matchCount, 1);
    const listed = await listSegments(service, marketer);
    assert.deepEqual(listed.find((s) => s.id === created.body.id), created.body);
    const got = await service.request('GET', `/v1/segments/${created.body.id}`, { token: marketer });
    assert.equal(got.status, 200, got.text);
    const updated = await service.request('PATCH', `/v1/segments/${created.body.id}`, { token: marketer, body: { name: 'By marketer, renamed' } });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.name, 'By marketer, renamed');
    const removed = await service.request('DELETE', `/v1/segments/${created.body.id}`, { token: marketer });
    assert.equal(removed.status, 200, removed.text);
    assert.equal(removed.text, 'null');
    assertProblem(await service.request('GET', `/v1/segments/${created.body.id}`, { token: marketer }), 404, 'not_found');
  });

  test('every segment operation without a token, or with an invalid one, is 401 unauthenticated', async () => {
    const saved = await saveSegment(service, lead, 'Guarded', [country('Sweden')]);
    const calls: [string, string, unknown][] = [
      ['GET', '/v1/segments', undefined],
      ['POST', '/v1/segments/preview', { conditions: [country('Sweden')] }],
      ['POST', '/v1/segments', { name: 'Anonymous', conditions: [country('Sweden')] }],
      ['GET', `/v1/segments/${saved.id}`, undefined],
      ['PATCH', `/v1/segments/${saved.id}`, { name: 'Anonymous' }],
      ['DELETE', `/v1/segments/${saved.id}`, undefined],
    ];
    for (const [method, path, body] of calls) {
      assertProblem(await service.request(method, path, { body }), 401, 'unauthenticated');
      assertProblem(await service.request(method, path, { body, token: 'not-a-token' }), 401, 'unauthenticated');
    }
    // Nothing was changed or created by those calls.
    const got = await service.request('GET', `/v1/segments/${saved.id}`, { token: lead });
    assert.equal(got.body.name, 'Guarded');
    assert.equal((await listSegments(service, lead)).some((s) => s.name === 'Anonymous'), false);
  });
});

// =============================================================================================
// The matching engine follows every write, from this process and from others.

describe('segments: the matching engine follows customer writes', () => {
  let service: TestService;
  let lead: string;

  before(async () => {
    service = await startService({ env: ENV });
    lead = await service.tokenFor('marketing_lead');
  });
  after(() => service.close());

  test('preview counts change right after a customer is created, updated (amount, date, country, transactions), deleted and imported', async () => {
    const testland = (...more: Condition[]) => preview(service, lead, [country('Testland'), ...more]);
    assert.equal(await testland(), 0);

    const id = await createCustomer(service, lead, {
      country: 'Testland',
      totalTransactions: 10,
      totalAmountSpent: 50,
      lastActivityDate: iso(NOW_MS - 5 * DAY_MS),
      status: 'active',
    });
    assert.equal(await testland(), 1, 'after create');
    assert.equal(await testland(amount('gt', 100)), 0);
    assert.equal(await testland(days('gt', 30)), 0);
    assert.equal(await testland(tx('gt', 10)), 0);

    const patch = async (changes: Partial<Row>) => {
      const reply = await service.request('PATCH', `/v1/customers/${id}`, { token: lead, body: changes });
      assert.equal(reply.status, 200, reply.text);
    };

    // A status change keeps every count (status is not a segment field).
    await patch({ status: 'churned' });
    assert.equal(await testland(), 1, 'after status change');
    assert.equal(await testland(amount('lte', 50), days('lte', 5), tx('gte', 10)), 1);

    await patch({ totalAmountSpent: 150.25 });
    assert.equal(await testland(amount('gt', 100)), 1, 'after amount change');
    assert.equal(await testland(amount('gte', 150.25)), 1);
    assert.equal(await testland(amount('gt', 150.25)), 0);
    assert.equal(await testland(amount('lte', 50)), 0);

    await patch({ lastActivityDate: iso(NOW_MS - 40 * DAY_MS) });
    assert.equal(await testland(days('gt', 30)), 1, 'after date change');
    assert.equal(await testland(days('gte', 40)), 1);
    assert.equal(await testland(days('gt', 40)), 0);

    await patch({ totalTransactions: 11 });
    assert.equal(await testland(tx('gt', 10)), 1, 'after transactions change');

    await patch({ country: 'Otherland' });
    assert.equal(await testland(), 0, 'after country change, the old country');
    assert.equal(await preview(service, lead, [country('otherland')]), 1, 'the new country');

    const removed = await service.request('DELETE', `/v1/customers/${id}`, { token: lead });
    assert.equal(removed.status, 200, removed.text);
    assert.equal(await preview(service, lead, [country('Otherland')]), 0, 'after delete');
    assert.equal(await preview(service, lead, [tx('gte', 0)]), 0, 'nobody left');

    await importRows(service, lead, [
      row({ country: 'Testland', totalTransactions: 1 }),
      row({ country: 'TESTLAND', totalTransactions: 2 }),
      row({ country: 'Otherland', totalTransactions: 3 }),
    ]);
    assert.equal(await testland(), 2, 'after import');
    assert.equal(await preview(service, lead, [tx('gte', 2)]), 2);
    assert.equal(await preview(service, lead, [tx('gte', 0)]), 3);

    // An import whose rows all fail changes nothing.
    const failed = await service.request('POST', '/v1/customers/import', { token: lead, body: { customers: [{ ...row({ country: 'Testland' }), email: 'nope' }] } });
    assert.equal(failed.status, 200, failed.text);
    assert.equal(failed.body.imported, 0);
    assert.equal(await testland(), 2);
  });

  test('ids beyond 32 bits are matched, updated and deleted like any other', async () => {
    const wide = await startService({ env: ENV });
    try {
      const token = await wide.tokenFor('marketing_lead');
      const small = await createCustomer(wide, token, { country: 'Narrowland', totalTransactions: 1 });
      // The ids go on from the highest handed out (AUTOINCREMENT, an identity's sequence): the next ones are above 2^32.
      await wide.query(
        wide.anyEngine.kind === 'sqlite'
          ? "UPDATE sqlite_sequence SET seq = ? WHERE name = 'customers'"
          : "SELECT setval(pg_get_serial_sequence('customers', 'id'), ?)",
        2 ** 32 + 5,
      );
      const big = await createCustomer(wide, token, { country: 'Wideland', totalTransactions: 2 });
      assert.equal(big, String(2 ** 32 + 6));
      await importRows(wide, token, [row({ country: 'Wideland', totalTransactions: 3 })]);
      assert.equal(await preview(wide, token, [country('Wideland')]), 2);
      assert.equal(await preview(wide, token, [tx('gte', 1)]), 3);
      const patched = await wide.request('PATCH', `/v1/customers/${big}`, { token, body: { country: 'Narrowland' } });
      assert.equal(patched.status, 200, patched.text);
      assert.equal(await preview(wide, token, [country('Narrowland')]), 2);
      assert.equal((await wide.request('DELETE', `/v1/customers/${big}`, { token })).status, 200);
      assert.equal((await wide.request('DELETE', `/v1/customers/${small}`, { token })).status, 200);
      assert.equal(await preview(wide, token, [country('Narrowland')]), 0);
      assert.equal(await preview(wide, token, [tx('gte', 1)]), 1);
    } finally {
      await wide.close();
    }
  });

  test('counts are exact at the largest stored values (totalTransactions 9007199254740991, totalAmountSpent 90071992547409)', async () => {
    const big = 'Bigland';
    await createCustomer(service, lead, { country: big, totalTransactions: Number.MAX_SAFE_INTEGER, totalAmountSpent: 90071992547409 });
    await createCustomer(service, lead, { country: big, totalTransactions: 1, totalAmountSpent: 1 });
    const twoTo52 = 2 ** 52; // 4503599627370496
    const cases: [Condition, number, string][] = [
      [tx('gte', Number.MAX_SAFE_INTEGER), 1, 'the big customer'],
      [tx('gt', twoTo52), 1, '9007199254740991 > 4503599627370496'],
      [tx('gte', 5e15), 1, '9007199254740991 >= 5e15'],
      [tx('lte', twoTo52), 1, 'only the customer with 1 transaction'],
      [tx('lt', 5e15), 1, 'only the customer with 1 transaction'],
      [tx('gt', Number.MAX_SAFE_INTEGER), 0, 'nobody above the maximum'],
      [tx('lte', Number.MAX_SAFE_INTEGER), 2, 'both'],
      [tx('gt', 1e300), 0, 'nobody'],
      [tx('lt', 1e300), 2, 'both'],
      [amount('gte', 90071992547409), 1, 'the big customer'],
      [amount('gt', 40000000000000), 1, '4e15 cents is below 2^52'],
      [amount('gt', 50000000000000), 1, '90071992547409 > 50000000000000'],
      [amount('lt', 50000000000000), 1, 'only the customer with 1.00'],
      [amount('gt', 90071992547409), 0, 'nobody above the maximum'],
      [amount('lte', 90071992547409), 2, 'both'],
      [amount('gt', 1e300), 0, 'nobody'],
      [amount('lt', 1e300), 2, 'both'],
    ];
    const actual: string[] = [];
    const expected: string[] = [];
    for (const [condition, count, why] of cases) {
      const label = `${condition.field} ${condition.operator} ${condition.value} (${why})`;
      // The SQL definition agrees with the hand count.
      assert.equal(await referenceCount(service, [country(big), condition], NOW_MS), count, label);
      actual.push(`${label}: ${await preview(service, lead, [country(big), condition])}`);
      expected.push(`${label}: ${count}`);
    }
    assert.deepEqual(actual, expected);
  });
});

describe('segments: counts stay exact when a customer\'s values outgrow the engine\'s compact columns', () => {
  // The engine holds transactions, amounts and activity (in whole seconds) in 4 bytes a value until one does not
  // fit: then transactions and amounts move to 8 bytes together, and activity (in ms) on its own. Counts must not
  // change across either move, in either order.
  let service: TestService;
  let token: string;
  const W = 'Widenland';
  const T40 = NOW_MS - 40 * DAY_MS;

  before(async () => {
    service = await startService({ env: ENV });
    token = await service.tokenFor('lifecycle_marketer');
    for (const [transactions, amountSpent, at] of [
      [3, 10, NOW_MS - 10 * DAY_MS],
      [7, 20, T40],
      [9, 30, NOW_MS - 100 * DAY_MS],
    ] as const) {
      await createCustomer(service, token, { country: W, totalTransactions: transactions, totalAmountSpent: amountSpent, lastActivityDate: iso(at) });
    }
  });
  after(() => service.close());

  test('whole seconds, then milliseconds, an instant before 1970 and counts beyond 2^32: each count as by hand', async () => {
    const w = (...more: Condition[]) => [country(W), ...more];
    await expectCounts(service, token, [
      [w(days('gt', 30)), 2, '40 and 100 days ago'],
      [w(days('gt', 40)), 1, 'exactly 40 days ago is not more than 40'],
      [w(days('gte', 40)), 2, 'exactly 40 days ago is at least 40'],
      [w(days('lte', 10.5)), 1, '10 days ago'],
      [w(days('lt', 39.9999999)), 1, '10 days ago: 40 days ago is a little older'],
      [w(tx('gte', 7)), 2, '7 and 9'],
      [w(amount('gt', 15)), 2, '20 and 30'],
    ]);
    // Remembered counts follow the clock: 1 ms later, exactly 40 days ago is more than 40 days ago.
    await expectCounts(service, token, [[w(days('lte', 40)), 2, '10 and exactly 40 days ago']]);
    try {
      service.clock.advance(1);
      await expectCounts(service, token, [
        [w(days('gt', 40)), 2, '40 days and 1 ms, 100 days ago'],
        [w(days('lte', 40)), 1, '10 days ago'],
      ]);
    } finally {
      service.clock.set(NOW);
    }
    // 500 ms older than 40 days: activity now needs milliseconds.
    await createCustomer(service, token, { country: W, totalTransactions: 4, totalAmountSpent: 15, lastActivityDate: iso(T40 - 500) });
    await expectCounts(service, token, [
      [w(days('gt', 30)), 3, '40 days, 40 days and 500 ms, 100 days ago'],
      [w(days('gt', 40)), 2, '40 days and 500 ms, 100 days ago'],
      [w(days('gte', 40)), 3, 'and exactly 40 days ago'],
      [w(days('lte', 10.5)), 1, '10 days ago'],
      [w(days('lt', 40 + 400 / DAY_MS)), 2, '10 and 40 days ago, not 40 days and 500 ms'],
      [w(days('lt', 40 + 600 / DAY_MS)), 3, 'and 40 days and 500 ms ago'],
      [w(tx('gte', 7)), 2, '7 and 9'],
      [w(amount('gte', 15)), 3, '15, 20 and 30'],
    ]);
    await createCustomer(service, token, { country: W, totalTransactions: 5_000_000_000, totalAmountSpent: 50_000_000, lastActivityDate: '1969-07-20T20:17:40.000Z' });
    await expectCounts(service, token, [
      [w(tx('gt', 4_294_967_295)), 1, '5e9 transactions'],
      [w(amount('gt', 42_949_672.95)), 1, '5e9 cents'],
      [w(days('gt', 20_000)), 1, 'July 1969'],
      [w(days('gt', 40)), 3, '40 days and 500 ms, 100 days ago, 1969'],
      [w(days('gte', 40)), 4, 'and exactly 40 days ago'],
      [w(tx('gte', 7)), 3, '7, 9 and 5e9'],
    ]);
  });

  test('amounts outgrow their column first while activity stays in whole seconds: each count as by hand', async () => {
    // A service of its own: the one above has widened every column already.
    const service = await startService({ env: ENV });
    try {
      const token = await service.tokenFor('lifecycle_marketer');
      const V = 'Numberland';
      const v = (...more: Condition[]) => [country(V), ...more];
      await createCustomer(service, token, { country: V, totalTransactions: 2, totalAmountSpent: 10, lastActivityDate: iso(NOW_MS - 10 * DAY_MS) });
      await createCustomer(service, token, { country: V, totalTransactions: 6_000_000_000, totalAmountSpent: 60_000_000, lastActivityDate: iso(T40) });
      await expectCounts(service, token, [
        [v(tx('gt', 4_294_967_295)), 1, '6e9 transactions'],
        [v(amount('gt', 42_949_672.95)), 1, '6e9 cents'],
        [v(days('gt', 40)), 0, 'exactly 40 days ago is not more than 40'],
        [v(days('gte', 40)), 1, 'exactly 40 days ago is at least 40'],
        [v(days('lt', 39.9999999)), 1, '10 days ago'],
        [v(tx('lte', 2), days('lte', 10.5)), 1, '2 transactions 10 days ago'],
      ]);
    } finally {
      await service.close();
    }
  });
});

// =============================================================================================
// A random dataset checked against a plain SQL count of the same conditions.


const SQL_OPERATOR: Record<Operator, string> = { gt: '>', gte: '>=', lt: '<', lte: '<=' };
/** More days back is an earlier instant: the comparison flips onto the timestamp. */
const SQL_FLIPPED: Record<Operator, string> = { gt: '<', gte: '<=', lt: '>', lte: '>=' };

/** A number bound as a double on both engines (PostgreSQL would otherwise read 0.5 against a BIGINT column as BIGINT). */
const NUMBER = 'CAST(? AS DOUBLE PRECISION)';

/** The definition of matching, as SQL over the stored columns (ASCII countries only). */
async function referenceCount(service: TestService, conditions: Condition[], nowMs: number): Promise<number> {
  const clauses: string[] = [];
  const params: (string | number)[] = [];
  for (const c of conditions) {
    if (c.field === 'country' || c.field === 'status') {
      const column = c.field === 'country' ? 'lower(country)' : 'status';
      const values = (c.operator === 'in' ? c.value : [c.value]).map((value) => (c.field === 'country' ? value.trim().toLowerCase() : value));
      clauses.push(`${column} ${c.operator === 'neq' ? 'NOT IN' : 'IN'} (${values.map(() => '?').join(', ')})`);
      params.push(...values);
    } else if (c.field === 'totalTransactions') {
      clauses.push(`total_transactions ${SQL_OPERATOR[c.operator]} ${NUMBER}`);
      params.push(c.value);
    } else if (c.field === 'totalAmountSpent') {
      clauses.push(`amount_cents / 100.0 ${SQL_OPERATOR[c.operator]} ${NUMBER}`);
      params.push(c.value);
    } else {
      clauses.push(`last_activity_at ${SQL_FLIPPED[c.operator]} (${NUMBER} - ${NUMBER} * 86400000.0)`);
      params.push(nowMs, c.value);
    }
  }
  const sql = `SELECT count(*) FROM customers WHERE ${clauses.join(' AND ')}`;
  return (await service.queryValue<number>(sql, ...params))!;
}

// Twice: the matching engine holds activity in whole seconds (4 bytes) until an instant with milliseconds comes.
for (const { label, wholeSeconds } of [
  { label: 'activity with milliseconds', wholeSeconds: false },
  { label: 'activity in whole seconds', wholeSeconds: true },
]) {
  describe(`segments preview equals a plain SQL count on a random dataset (${label})`, () => {
    let service: TestService;
    let token: string;
    const rng = prng(20261120);
    const int = (lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
    const COUNTRIES = ['France', 'FRANCE', 'france', 'Germany', 'GERMANY', 'Spain', 'Italy', 'Portugal', 'United Kingdom'];
    const COUNTRY_VALUES = ['France', 'france', '  FRANCE ', 'Germany', 'germany', 'Spain', 'SPAIN', 'italy', 'Portugal', 'united kingdom', 'Atlantis', 'Fra', 'United'];
    const data: { transactions: number; cents: number; at: number }[] = [];
    const TOTAL = 3000;

    before(async () => {
      service = await startService({ env: ENV });
      token = await service.tokenFor('lifecycle_marketer');
      const rows: Row[] = [];
      for (let i = 0; i < TOTAL; i++) {
        const transactions = int(0, 50);
        // Cents: mostly spread, sometimes from a small set so that values repeat.
        const cents = rng() < 0.2 ? pick([0, 29, 30, 999, 1000, 1001, 10_000, 12_345]) : int(0, 500_000);
        // Last activity: over two years, sometimes exactly a whole number of days before now.
        const back = rng() < 0.15 ? int(0, 730) * DAY_MS : int(0, 730 * DAY_MS);
        const at = NOW_MS - (wholeSeconds ? back - (back % 1000) : back);
        data.push({ transactions, cents, at });
        rows.push(
          row({
            country: pick(COUNTRIES),
            totalTransactions: transactions,
            totalAmountSpent: cents / 100,
            lastActivityDate: iso(at),
            status: pick(['active', 'inactive', 'churned'] as const),
          }),
        );
      }
      for (let i = 0; i < rows.length; i += 1000) await importRows(service, token, rows.slice(i, i + 1000));
      assert.equal(await service.queryValue('SELECT count(*) FROM customers'), TOTAL);
    });
    after(() => service.close());

    function randomCondition(nowMs: number): Condition {
      const field = pick(['country', 'totalTransactions', 'totalAmountSpent', 'lastActivityDays'] as const);
      if (field === 'country') return country(pick(COUNTRY_VALUES));
      const operator = pick(['gt', 'gte', 'lt', 'lte'] as const);
      const sample = pick(data);
      const r = rng();
      let value: number;
      if (field === 'totalTransactions') {
        value = r < 0.4 ? int(-1, 52) : r < 0.7 ? sample.transactions : int(0, 50) + pick([0.5, 0.25, 0.999, 0.001, -0.001]);
      } else if (field === 'totalAmountSpent') {
        value =
          r < 0.35
            ? sample.cents / 100
            : r < 0.55
              ? int(0, 500_000) / 100
              : r < 0.8
                ? int(0, 5_000_000) / 1000
                : pick([0, 0.29, 0.3, 0.1, 0.7, 1.15, 100, 100.005, 2000.01, 1e-9, -5, 4999.99, 5000.01]);
      } else {
        value = r < 0.3 ? int(0, 800) : r < 0.6 ? (nowMs - sample.at) / DAY_MS : r < 0.8 ? rng() * 800 : pick([0, 0.5, 1.5, 30, 60, 365, 730, -1]);
      }
      return { field, operator, value };
    }

    async function compare(sets: number, label: string): Promise<{ nonTrivial: number }> {
      const nowMs = service.clock.now().getTime();
      let nonTrivial = 0;
      for (let i = 0; i < sets; i++) {
        const conditions = Array.from({ length: int(1, 4) }, () => randomCondition(nowMs));
        const expected = await referenceCount(service, conditions, nowMs);
        const actual = await preview(service, token, conditions);
        assert.equal(actual, expected, `${label} set ${i}: ${JSON.stringify(conditions)}`);
        if (expected > 0 && expected < TOTAL) nonTrivial++;
      }
      return { nonTrivial };
    }

    test('200 random condition sets (1-4 conditions, fractional and exact data values) count as the SQL definition does', async () => {
      assert.equal(service.clock.now().toISOString(), NOW);
      const { nonTrivial } = await compare(200, 'at NOW');
      // The sets must discriminate: most of them match some but not all customers.
      assert.ok(nonTrivial >= 100, `only ${nonTrivial} non-trivial sets`);
    });

    test('after the clock moves by a fractional number of hours, 60 more random sets still agree', async () => {
      try {
        service.clock.advance(7 * 3_600_000 + 123);
        const { nonTrivial } = await compare(60, 'at NOW + 7 h 123 ms');
        assert.ok(nonTrivial >= 30, `only ${nonTrivial} non-trivial sets`);
      } finally {
        service.clock.set(NOW);
      }
    });

    test('after customers all over the base are deleted, then edited, 60 more random sets still agree', async () => {
      // The engine holds the base in blocks (the first loaded, later ones as customers arrive): the writes land in each.
      const lead = await service.tokenFor('marketing_lead');
      const ids = (await service.query<{ id: number }>('SELECT id FROM customers ORDER BY id')).map((r) => r.id);
      for (let i = 1; i < ids.length; i += 150) assert.equal((await service.request('DELETE', `/v1/customers/${ids[i]}`, { token: lead })).status, 200);
      assert.ok((await compare(30, 'after deletes')).nonTrivial >= 15);
      for (let i = 0; i < ids.length; i += 150) {
        const at = NOW_MS - int(0, 730) * DAY_MS;
        const changes = { totalTransactions: int(0, 50), totalAmountSpent: int(0, 500_000) / 100, lastActivityDate: iso(at), country: pick(COUNTRIES) };
        const reply = await service.request('PATCH', `/v1/customers/${ids[i]}`, { token: lead, body: changes });
        assert.equal(reply.status, 200, reply.text);
      }
      assert.ok((await compare(30, 'after edits')).nonTrivial >= 15);
    });

    test('single conditions at every exact data value of a few customers agree with SQL for all four operators', async () => {
      const nowMs = service.clock.now().getTime();
      for (let i = 0; i < 5; i++) {
        const sample = data[i * 97]!;
        for (const operator of ['gt', 'gte', 'lt', 'lte'] as const) {
          for (const c of [tx(operator, sample.transactions), amount(operator, sample.cents / 100), days(operator, (nowMs - sample.at) / DAY_MS)]) {
            assert.equal(await preview(service, token, [c]), await referenceCount(service, [c], nowMs), JSON.stringify(c));
          }
        }
      }
    });
  });
}
