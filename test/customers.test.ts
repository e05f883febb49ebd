// customers.*: create, get, update, delete, list (search, filters, sort, pagination), import, and roles
// (interface.md sections 2, 4, 7 and 8; product.md sections 2, 3 and 4). The clock is TestClock's default,
// 2026-11-20T12:00:00.000Z, so "one day in the future" ends at 2026-11-21T12:00:00.000Z.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseIsoDate, type Customer } from '../src/domain/customers.ts';
import { assertProblem, startService, type Reply, type TestService } from './helpers.ts';
import { createCustomer, customerRow } from './support/customers.ts';

const CUSTOMER_KEYS = ['country', 'email', 'id', 'lastActivityDate', 'name', 'status', 'totalAmountSpent', 'totalTransactions'];
const ALL_FIELDS = ['name', 'email', 'country', 'totalTransactions', 'totalAmountSpent', 'lastActivityDate', 'status'];

type CustomerBody = Omit<Customer, 'id'>;

/** A valid create body with a unique email; `overrides` replace fields (or add invalid ones). */
function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...customerRow({ totalTransactions: 3, totalAmountSpent: 120.5, lastActivityDate: '2026-10-01T09:30:00.000Z' }), ...overrides };
}

test('parseIsoDate answers the same for a text it has read before, valid or not, and after many others', () => {
  const cases: [string, number | undefined][] = [
    ['2026-09-30', Date.UTC(2026, 8, 30)],
    ['2025-12-01T09:30:00+01:00', Date.UTC(2025, 11, 1, 8, 30)],
    ['2026-02-30', undefined],
    ['yesterday', undefined],
  ];
  const check = () => {
    for (const [text, expected] of cases) assert.equal(parseIsoDate(text), expected, text);
  };
  check();
  check(); // remembered now
  // More distinct dates than it remembers (every day from 1990 on), each right, then the first ones again.
  for (let day = 0; day < 6000; day++) {
    const ms = Date.UTC(1990, 0, 1 + day);
    assert.equal(parseIsoDate(new Date(ms).toISOString().slice(0, 10)), ms);
  }
  check();
});

function qs(params: Record<string, string | number>): string {
  return `?${new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString()}`;
}

const create = createCustomer;

async function total(service: TestService, token: string): Promise<number> {
  const reply = await service.request('GET', '/v1/customers', { token });
  assert.equal(reply.status, 200, reply.text);
  return reply.body.total as number;
}

function ids(reply: Reply): string[] {
  return (reply.body.items as Customer[]).map((c) => c.id);
}

// =============================================================================================
// Create, get, update, delete, import, roles: one service, each test makes its own customers.

describe('customers: single-record operations, import and roles', () => {
  let service: TestService;
  let lead: string;
  let marketer: string;
  let admin: string;

  before(async () => {
    service = await startService();
    lead = await service.tokenFor('marketing_lead');
    marketer = await service.tokenFor('lifecycle_marketer');
    admin = await service.tokenFor('admin');
  });
  after(() => service.close());

  // ------------------------------------------------------------------------------------------
  // customers.create

  test('create returns 200 with exactly the Customer fields and a non-empty string id', async () => {
    const reply = await service.request('POST', '/v1/customers', {
      token: lead,
      body: {
        name: 'Ada Lovelace',
        email: 'ada@analytical.io',
        country: 'United Kingdom',
        totalTransactions: 12,
        totalAmountSpent: 1200.5,
        lastActivityDate: '2026-09-30T14:00:00Z',
        status: 'active',
      },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.headers.get('x-api-version'), 'v1');
    assert.deepEqual(Object.keys(reply.body).sort(), CUSTOMER_KEYS);
    assert.equal(typeof reply.body.id, 'string');
    assert.ok(reply.body.id.length > 0);
    assert.deepEqual(reply.body, {
      id: reply.body.id,
      name: 'Ada Lovelace',
      email: 'ada@analytical.io',
      country: 'United Kingdom',
      totalTransactions: 12,
      totalAmountSpent: 1200.5,
      lastActivityDate: '2026-09-30T14:00:00.000Z',
      status: 'active',
    });
    // What GET returns is what create returned.
    const got = await service.request('GET', `/v1/customers/${reply.body.id}`, { token: lead });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, reply.body);
  });

  test('create trims and lower-cases the email, and trims name and country', async () => {
    const created = await create(
      service,
      lead,
      body({ name: '  Grace Hopper  ', email: '  Grace.HOPPER@Navy.MIL ', country: ' United States\t' }),
    );
    assert.equal(created.name, 'Grace Hopper');
    assert.equal(created.email, 'grace.hopper@navy.mil');
    assert.equal(created.country, 'United States');
    const got = await service.request('GET', `/v1/customers/${created.id}`, { token: lead });
    assert.deepEqual(got.body, created);
  });

  test('create returns lastActivityDate in canonical UTC form: a calendar date is UTC midnight, an offset is converted', async () => {
    const cases: [string, string][] = [
      ['2026-09-30', '2026-09-30T00:00:00.000Z'],
      ['2026-09-30T10:00:00+02:00', '2026-09-30T08:00:00.000Z'],
      ['2026-09-30T23:30:00-02:00', '2026-10-01T01:30:00.000Z'],
      ['2026-09-30T14:00:00Z', '2026-09-30T14:00:00.000Z'],
      ['2024-02-29', '2024-02-29T00:00:00.000Z'],
    ];
    for (const [given, expected] of cases) {
      const created = await create(service, lead, body({ lastActivityDate: given }));
      assert.equal(created.lastActivityDate, expected, `lastActivityDate ${given}`);
      const got = await service.request('GET', `/v1/customers/${created.id}`, { token: lead });
      assert.equal(got.body.lastActivityDate, expected);
    }
  });

  test('create rounds totalAmountSpent half-up to 2 decimals (1.005 -> 1.01, 2.675 -> 2.68, 0.125 -> 0.13, 10 -> 10)', async () => {
    const cases: [number, number][] = [
      [1.005, 1.01],
      [2.675, 2.68],
      [0.125, 0.13],
      [10, 10],
      [1.004, 1],
      [0.005, 0.01],
      [0, 0],
      [99.999, 100],
    ];
    for (const [given, expected] of cases) {
      const created = await create(service, lead, body({ totalAmountSpent: given }));
      assert.equal(created.totalAmountSpent, expected, `totalAmountSpent ${given}`);
      const got = await service.request('GET', `/v1/customers/${created.id}`, { token: lead });
      assert.equal(got.body.totalAmountSpent, expected, `stored totalAmountSpent ${given}`);
    }
  });

  test('create accepts lastActivityDate up to exactly one day after the clock, and rejects anything later', async () => {
    // The clock is 2026-11-20T12:00:00.000Z: the last accepted instant is 2026-11-21T12:00:00.000Z.
    assert.equal(service.clock.now().toISOString(), '2026-11-20T12:00:00.000Z');
    const accepted = await create(service, lead, body({ lastActivityDate: '2026-11-21T11:00:00Z' }));
    assert.equal(accepted.lastActivityDate, '2026-11-21T11:00:00.000Z');
    const boundary = await create(service, lead, body({ lastActivityDate: '2026-11-21T12:00:00.000Z' }));
    assert.equal(boundary.lastActivityDate, '2026-11-21T12:00:00.000Z');

    const before = await total(service, lead);
    for (const late of ['2026-11-21T12:00:00.001Z', '2026-11-22T13:00:00Z', '2026-11-22']) {
      const reply = await service.request('POST', '/v1/customers', { token: lead, body: body({ lastActivityDate: late }) });
      assertProblem(reply, 400, 'validation_failed', ['lastActivityDate']);
    }
    assert.equal(await total(service, lead), before);
  });

  test('create accepts the length boundaries: name of 200 characters, country of 2 and of 80 characters', async () => {
    const name = 'n'.repeat(200);
    const a = await create(service, lead, body({ name, country: 'FR' }));
    assert.equal(a.name, name);
    assert.equal(a.country, 'FR');
    const b = await create(service, lead, body({ country: 'c'.repeat(80) }));
    assert.equal(b.country, 'c'.repeat(80));
  });

  const invalidCases: [string, string, unknown][] = [
    ['name', "''", ''],
    ['name', 'only spaces', '   '],
    ['name', '201 characters', 'x'.repeat(201)],
    ['name', 'a number', 42],
    ['email', "'nope'", 'nope'],
    ['email', "'a@b' (no top-level label)", 'a@b'],
    ['country', "'X' (1 character)", 'X'],
    ['country', "' X ' (1 character once trimmed)", ' X '],
    ['country', '81 characters', 'c'.repeat(81)],
    ['totalTransactions', '-1', -1],
    ['totalTransactions', '1.5', 1.5],
    ['totalTransactions', "'3' (a string)", '3'],
    ['totalAmountSpent', '-0.01', -0.01],
    ['totalAmountSpent', "'10' (a string)", '10'],
    ['totalAmountSpent', 'missing', undefined],
    ['lastActivityDate', "'2026-02-30' (no such day)", '2026-02-30'],
    ['lastActivityDate', "'yesterday'", 'yesterday'],
    ['lastActivityDate', "'2026-11-22T13:00:00Z' (more than one day ahead of the clock)", '2026-11-22T13:00:00Z'],
    ['lastActivityDate', "'2026-13-01' (no such month)", '2026-13-01'],
    ['status', "'vip'", 'vip'],
  ];
  for (const [field, label, value] of invalidCases) {
    test(`create with ${field} ${label} is 400 validation_failed naming only ${field}; nothing is stored`, async () => {
      const fields = body();
      if (value === undefined) delete fields[field];
      else fields[field] = value;
      const before = await total(service, lead);
      const reply = await service.request('POST', '/v1/customers', { token: lead, body: fields });
      assertProblem(reply, 400, 'validation_failed', [field]);
      assert.equal(typeof reply.body.errors[0].message, 'string');
      assert.ok(reply.body.errors[0].message.length > 0);
      assert.equal(await total(service, lead), before);
    });
  }

  test('create with a body missing all fields is 400 validation_failed naming all seven fields', async () => {
    const reply = await service.request('POST', '/v1/customers', { token: lead, body: {} });
    assertProblem(reply, 400, 'validation_failed', ALL_FIELDS);
  });

  test('create ignores unknown properties: a client cannot choose the id', async () => {
    const created = await create(service, lead, body({ id: '424242', createdAt: 'yesterday', vip: true }));
    assert.deepEqual(Object.keys(created).sort(), CUSTOMER_KEYS);
    assert.notEqual(created.id, '424242');
  });

  test('create with an email already stored in another case is 409 conflict; the total and the stored customer are unchanged', async () => {
    const original = await create(
      service,
      lead,
      body({ name: 'First Owner', email: 'dup.owner@example.com', country: 'Spain', totalTransactions: 4, totalAmountSpent: 40, status: 'inactive' }),
    );
    const before = await total(service, lead);
    const reply = await service.request('POST', '/v1/customers', {
      token: lead,
      body: body({ name: 'Second Owner', email: '  DUP.Owner@Example.COM ', country: 'Italy', totalTransactions: 99, totalAmountSpent: 9999, status: 'active' }),
    });
    assertProblem(reply, 409, 'conflict');
    assert.equal(await total(service, lead), before);
    const got = await service.request('GET', `/v1/customers/${original.id}`, { token: lead });
    assert.deepEqual(got.body, original);
    const search = await service.request('GET', `/v1/customers${qs({ search: 'dup.owner@example.com' })}`, { token: lead });
    assert.equal(search.body.total, 1);
    assert.deepEqual(search.body.items, [original]);
  });

  // ------------------------------------------------------------------------------------------
  // customers.get / update / delete by id

  test('GET /v1/customers/{id} of an unknown id or a non-numeric id is 404 not_found', async () => {
    for (const id of ['999999', 'abc', '0', '-1', '1.5', '12abc', '99999999999999999999']) {
      assertProblem(await service.request('GET', `/v1/customers/${id}`, { token: lead }), 404, 'not_found');
    }
  });

  test('PATCH changes only the given fields and validates and normalises them like create', async () => {
    const original = await create(
      service,
      lead,
      body({ name: 'Patch Me', country: 'Germany', totalTransactions: 5, totalAmountSpent: 50, lastActivityDate: '2026-10-10', status: 'active' }),
    );

    let reply = await service.request('PATCH', `/v1/customers/${original.id}`, { token: lead, body: { name: '  Patched Name ' } });
    assert.equal(reply.status, 200, reply.text);
    let expected: Customer = { ...original, name: 'Patched Name' };
    assert.deepEqual(reply.body, expected);

    reply = await service.request('PATCH', `/v1/customers/${original.id}`, { token: lead, body: { totalAmountSpent: 2.675, totalTransactions: 6 } });
    assert.equal(reply.status, 200, reply.text);
    expected = { ...expected, totalAmountSpent: 2.68, totalTransactions: 6 };
    assert.deepEqual(reply.body, expected);

    reply = await service.request('PATCH', `/v1/customers/${original.id}`, {
      token: lead,
      body: { lastActivityDate: '2026-09-30T10:00:00+02:00', email: ' Patched.Email@Example.COM', country: ' Austria ' },
    });
    assert.equal(reply.status, 200, reply.text);
    expected = { ...expected, lastActivityDate: '2026-09-30T08:00:00.000Z', email: 'patched.email@example.com', country: 'Austria' };
    assert.deepEqual(reply.body, expected);

    // An empty change set changes nothing.
    reply = await service.request('PATCH', `/v1/customers/${original.id}`, { token: lead, body: {} });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, expected);

    // Unknown properties are ignored: the id cannot be changed.
    reply = await service.request('PATCH', `/v1/customers/${original.id}`, { token: lead, body: { id: '777777' } });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, expected);

    const got = await service.request('GET', `/v1/customers/${original.id}`, { token: lead });
    assert.deepEqual(got.body, expected);
  });

  test('PATCH status moves freely: active -> churned -> inactive -> active', async () => {
    const customer = await create(service, lead, body({ status: 'active' }));
    for (const status of ['churned', 'inactive', 'active', 'inactive', 'churned', 'active'] as const) {
      const reply = await service.request('PATCH', `/v1/customers/${customer.id}`, { token: lead, body: { status } });
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual(reply.body, { ...customer, status });
    }
  });

  const invalidChanges: [string, unknown][] = [
    ['name', ''],
    ['name', 'x'.repeat(201)],
    ['email', 'nope'],
    ['country', 'X'],
    ['totalTransactions', -1],
    ['totalTransactions', 2.5],
    ['totalAmountSpent', -0.01],
    ['totalAmountSpent', '10'],
    ['lastActivityDate', '2026-02-30'],
    ['lastActivityDate', '2026-11-22T13:00:00Z'],
    ['status', 'vip'],
  ];
  test('PATCH with an invalid field is 400 validation_failed naming that field, and the customer is unchanged', async () => {
    const customer = await create(service, lead, body());
    for (const [field, value] of invalidChanges) {
      const reply = await service.request('PATCH', `/v1/customers/${customer.id}`, { token: lead, body: { [field]: value } });
      assertProblem(reply, 400, 'validation_failed', [field]);
    }
    const both = await service.request('PATCH', `/v1/customers/${customer.id}`, { token: lead, body: { name: '', status: 'vip' } });
    assertProblem(both, 400, 'validation_failed', ['name', 'status']);
    const got = await service.request('GET', `/v1/customers/${customer.id}`, { token: lead });
    assert.deepEqual(got.body, customer);
  });

  test('PATCH of an unknown or non-numeric id is 404 not_found', async () => {
    assertProblem(await service.request('PATCH', '/v1/customers/999999', { token: lead, body: { status: 'churned' } }), 404, 'not_found');
    assertProblem(await service.request('PATCH', '/v1/customers/abc', { token: lead, body: { status: 'churned' } }), 404, 'not_found');
  });

  test("PATCH email to another customer's email (in another case) is 409 conflict; neither customer changes", async () => {
    const a = await create(service, lead, body({ email: 'owner.a@example.com', name: 'Owner A' }));
    const b = await create(service, lead, body({ email: 'owner.b@example.com', name: 'Owner B' }));
    const reply = await service.request('PATCH', `/v1/customers/${b.id}`, {
      token: lead,
      body: { email: 'OWNER.A@example.com', name: 'Renamed B' },
    });
    assertProblem(reply, 409, 'conflict');
    assert.deepEqual((await service.request('GET', `/v1/customers/${a.id}`, { token: lead })).body, a);
    assert.deepEqual((await service.request('GET', `/v1/customers/${b.id}`, { token: lead })).body, b);
    // Setting a customer's own email again (in another case) is not a conflict.
    const same = await service.request('PATCH', `/v1/customers/${a.id}`, { token: lead, body: { email: 'Owner.A@Example.com' } });
    assert.equal(same.status, 200, same.text);
    assert.deepEqual(same.body, a);
  });

  test('DELETE as a lifecycle_marketer is 403 forbidden and the customer still exists (403 comes before 404)', async () => {
    const customer = await create(service, lead, body());
    assertProblem(await service.request('DELETE', `/v1/customers/${customer.id}`, { token: marketer }), 403, 'forbidden');
    assertProblem(await service.request('DELETE', '/v1/customers/999999', { token: marketer }), 403, 'forbidden');
    const got = await service.request('GET', `/v1/customers/${customer.id}`, { token: lead });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, customer);
  });

  test('DELETE as a marketing_lead is 200 with body null; then GET is 404 and DELETE again is 404', async () => {
    const customer = await create(service, lead, body());
    const before = await total(service, lead);
    const reply = await service.request('DELETE', `/v1/customers/${customer.id}`, { token: lead });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.text, 'null');
    assert.equal(reply.body, null);
    assert.equal(await total(service, lead), before - 1);
    assertProblem(await service.request('GET', `/v1/customers/${customer.id}`, { token: lead }), 404, 'not_found');
    assertProblem(await service.request('DELETE', `/v1/customers/${customer.id}`, { token: lead }), 404, 'not_found');
    assertProblem(await service.request('PATCH', `/v1/customers/${customer.id}`, { token: lead, body: { name: 'Ghost' } }), 404, 'not_found');
    assertProblem(await service.request('DELETE', '/v1/customers/abc', { token: lead }), 404, 'not_found');
    // The email is free again: a new customer with it gets a new id.
    const again = await create(service, lead, body({ email: customer.email }));
    assert.notEqual(again.id, customer.id);
  });

  test('DELETE as an admin is 200 with body null', async () => {
    const customer = await create(service, lead, body());
    const reply = await service.request('DELETE', `/v1/customers/${customer.id}`, { token: admin });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.text, 'null');
    assertProblem(await service.request('GET', `/v1/customers/${customer.id}`, { token: lead }), 404, 'not_found');
  });

  // ------------------------------------------------------------------------------------------
  // customers.list query validation

  const badQueries: [string, string][] = [
    ['limit', '0'],
    ['limit', '201'],
    ['limit', 'abc'],
    ['limit', '-1'],
    ['limit', '2.5'],
    ['page', '0'],
    ['page', '1.5'],
    ['page', 'x'],
    ['sort', 'email'],
    ['direction', 'up'],
    ['status', 'vip'],
  ];
  for (const [name, value] of badQueries) {
    test(`list with ${name}=${value} is 400 validation_failed naming ${name}`, async () => {
      const reply = await service.request('GET', `/v1/customers?${name}=${encodeURIComponent(value)}`, { token: lead });
      assertProblem(reply, 400, 'validation_failed', [name]);
    });
  }

  test('list accepts limit=1 and limit=200 and echoes page and limit', async () => {
    for (const limit of [1, 200]) {
      const reply = await service.request('GET', `/v1/customers${qs({ limit, page: 1 })}`, { token: lead });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.limit, limit);
      assert.equal(reply.body.page, 1);
      assert.equal(reply.body.items.length, Math.min(limit, reply.body.total));
    }
  });

  test('list search ignores case for non-ASCII letters too, for 1-2 character terms as for longer ones', async () => {
    // The only customer of this service with these letters: É and Å appear only in upper case.
    const emile = await create(service, lead, body({ name: 'Émile Ångström', email: 'emile@lappland.example', country: 'Lappland' }));
    for (const term of ['ÉMI', 'émi', 'ÅNG', 'ång', 'ÅNGSTRÖM', 'ångström', 'É', 'é', 'ÅN', 'ån', 'Ån', 'åN']) {
      for (const params of [{ search: term }, { search: term, country: 'lappland' }] as Record<string, string>[]) {
        const reply = await service.request('GET', `/v1/customers${qs(params)}`, { token: lead });
        assert.equal(reply.status, 200, reply.text);
        assert.deepEqual(reply.body.items, [emile], `search ${JSON.stringify(params)}`);
        assert.equal(reply.body.total, 1, `search ${JSON.stringify(params)}`);
      }
    }
  });

  // ------------------------------------------------------------------------------------------
  // customers.import

  test('import of a mixed file stores the 2 valid rows and reports the 4 others by 1-based row, in order', async () => {
    const existing = await create(
      service,
      lead,
      body({ name: 'Already Here', email: 'already.here@import.test', country: 'Portugal', totalTransactions: 7, totalAmountSpent: 70, status: 'inactive' }),
    );
    const before = await total(service, lead);
    const rows: unknown[] = [
      // 1: valid (email normalised, amount rounded)
      { name: 'Imported One', email: ' Imported.One@Import.TEST ', country: 'Norway', totalTransactions: 1, totalAmountSpent: 1.005, lastActivityDate: '2026-09-30', status: 'active' },
      // 2: bad email
      { name: 'Bad Email', email: 'Not-An-Email ', country: 'Norway', totalTransactions: 1, totalAmountSpent: 10, lastActivityDate: '2026-09-30', status: 'active' },
      // 3: duplicate of a stored customer, in another case
      { name: 'Imposter', email: 'ALREADY.HERE@import.test', country: 'Chile', totalTransactions: 99, totalAmountSpent: 9999, lastActivityDate: '2026-11-01', status: 'active' },
      // 4: valid
      { name: 'Imported Two', email: 'imported.two@import.test', country: 'Sweden', totalTransactions: 2, totalAmountSpent: 20, lastActivityDate: '2026-10-15T10:00:00+02:00', status: 'churned' },
      // 5: duplicate of row 1, in another case
      { name: 'Row One Again', email: 'IMPORTED.ONE@import.test', country: 'Peru', totalTransactions: 50, totalAmountSpent: 500, lastActivityDate: '2026-11-02', status: 'inactive' },
      // 6: not an object
      42,
    ];
    const reply = await service.request('POST', '/v1/customers/import', { token: lead, body: { customers: rows } });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), ['failures', 'imported', 'skipped', 'updated']);
    assert.equal(reply.body.imported, 2);
    assert.equal(reply.body.skipped, 4);
    const failures = reply.body.failures as { row: number; email: string | null; reason: string; errors: { field: string; message: string }[] }[];
    assert.deepEqual(
      failures.map((f) => f.row),
      [2, 3, 5, 6],
    );
    for (const failure of failures) {
      assert.deepEqual(Object.keys(failure).sort(), ['email', 'errors', 'reason', 'row']);
      assert.equal(typeof failure.reason, 'string');
      assert.ok(failure.reason.length > 0);
      assert.ok(failure.errors.length > 0);
      for (const error of failure.errors) {
        assert.deepEqual(Object.keys(error).sort(), ['field', 'message']);
        assert.equal(typeof error.field, 'string');
        assert.equal(typeof error.message, 'string');
      }
    }
    const [bad, dupStored, dupInFile, notObject] = failures as [(typeof failures)[0], (typeof failures)[0], (typeof failures)[0], (typeof failures)[0]];
    assert.equal(bad.email, 'not-an-email');
    assert.deepEqual(
      bad.errors.map((e) => e.field),
      ['email'],
    );

    assert.equal(dupStored.email, 'already.here@import.test');
    assert.equal(dupStored.reason, 'A customer with the email already.here@import.test already exists.');
    assert.deepEqual(dupStored.errors, [{ field: 'email', message: dupStored.reason }]);

    assert.equal(dupInFile.email, 'imported.one@import.test');
    assert.equal(dupInFile.reason, 'A customer with the email imported.one@import.test already exists.');
    assert.deepEqual(dupInFile.errors, [{ field: 'email', message: dupInFile.reason }]);

    assert.equal(notObject.email, null);

    // Exactly the two valid rows were stored, as given in their own rows (row 5 did not overwrite row 1).
    assert.equal(await total(service, lead), before + 2);
    const found = await service.request('GET', `/v1/customers${qs({ search: '@import.test', sort: 'name', direction: 'asc' })}`, { token: lead });
    assert.equal(found.body.total, 3);
    const items = found.body.items as Customer[];
    assert.deepEqual(
      items.map(({ id: _id, ...rest }) => rest),
      [
        { name: 'Already Here', email: 'already.here@import.test', country: 'Portugal', totalTransactions: 7, totalAmountSpent: 70, lastActivityDate: existing.lastActivityDate, status: 'inactive' },
        { name: 'Imported One', email: 'imported.one@import.test', country: 'Norway', totalTransactions: 1, totalAmountSpent: 1.01, lastActivityDate: '2026-09-30T00:00:00.000Z', status: 'active' },
        { name: 'Imported Two', email: 'imported.two@import.test', country: 'Sweden', totalTransactions: 2, totalAmountSpent: 20, lastActivityDate: '2026-10-15T08:00:00.000Z', status: 'churned' },
      ],
    );
    // The stored customer is untouched by its duplicate (row 3).
    assert.deepEqual((await service.request('GET', `/v1/customers/${existing.id}`, { token: lead })).body, existing);
    // Nothing of the invalid or duplicate rows was stored anywhere.
    for (const term of ['not-an-email', 'Imposter', 'Row One Again', 'Bad Email']) {
      const search = await service.request('GET', `/v1/customers${qs({ search: term })}`, { token: lead });
      assert.equal(search.body.total, 0, term);
    }
  });

  test('import of a file where every row fails stores nothing and reports every row', async () => {
    const before = await total(service, lead);
    const reply = await service.request('POST', '/v1/customers/import', {
      token: lead,
      body: { customers: [null, { name: 'No Email' }, 'text'] },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.imported, 0);
    assert.equal(reply.body.skipped, 3);
    assert.deepEqual(
      reply.body.failures.map((f: { row: number }) => f.row),
      [1, 2, 3],
    );
    assert.deepEqual(
      reply.body.failures[1].errors.map((e: { field: string }) => e.field),
      ['email', 'country', 'totalTransactions', 'totalAmountSpent', 'lastActivityDate', 'status'],
    );
    assert.equal(await total(service, lead), before);
  });

  test('import accepts 1000 rows (imported 1000) and rejects 1001 rows, 0 rows, a missing or non-array customers with 400 naming customers', async () => {
    const rowsOf = (n: number, prefix: string) =>
      Array.from({ length: n }, (_, i) => ({
        name: `Bulk ${prefix} ${i}`,
        email: `bulk.${prefix}.${i}@bulk.test`,
        country: 'Iceland',
        totalTransactions: i % 7,
        totalAmountSpent: i,
        lastActivityDate: '2026-08-01',
        status: 'active',
      }));
    const before = await total(service, lead);

    const tooMany = await service.request('POST', '/v1/customers/import', { token: lead, body: { customers: rowsOf(1001, 'x') } });
    assertProblem(tooMany, 400, 'validation_failed', ['customers']);
    assert.equal(await total(service, lead), before);

    const none = await service.request('POST', '/v1/customers/import', { token: lead, body: { customers: [] } });
    assertProblem(none, 400, 'validation_failed', ['customers']);
    const missing = await service.request('POST', '/v1/customers/import', { token: lead, body: {} });
    assertProblem(missing, 400, 'validation_failed', ['customers']);
    const notArray = await service.request('POST', '/v1/customers/import', { token: lead, body: { customers: { name: 'x' } } });
    assertProblem(notArray, 400, 'validation_failed', ['customers']);
    assert.equal(await total(service, lead), before);

    const full = await service.request('POST', '/v1/customers/import', { token: lead, body: { customers: rowsOf(1000, 'y') } });
    assert.equal(full.status, 200, full.text);
    assert.deepEqual(full.body, { imported: 1000, updated: 0, skipped: 0, failures: [] });
    assert.equal(await total(service, lead), before + 1000);
    const bulk = await service.request('GET', `/v1/customers${qs({ country: 'iceland', limit: 1 })}`, { token: lead });
    assert.equal(bulk.body.total, 1000);
  });

  // ------------------------------------------------------------------------------------------
  // Roles and authentication

  test('a lifecycle_marketer can list, get, create, update and import customers', async () => {
    const created = await service.request('POST', '/v1/customers', { token: marketer, body: body({ name: 'By Marketer' }) });
    assert.equal(created.status, 200, created.text);
    const id = created.body.id as string;

    const list = await service.request('GET', `/v1/customers${qs({ search: 'By Marketer' })}`, { token: marketer });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.items, [created.body]);

    const got = await service.request('GET', `/v1/customers/${id}`, { token: marketer });
    assert.equal(got.status, 200, got.text);

    const updated = await service.request('PATCH', `/v1/customers/${id}`, { token: marketer, body: { status: 'churned' } });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.status, 'churned');

    const imported = await service.request('POST', '/v1/customers/import', { token: marketer, body: { customers: [body({ name: 'Imported By Marketer' })] } });
    assert.equal(imported.status, 200, imported.text);
    assert.deepEqual(imported.body, { imported: 1, updated: 0, skipped: 0, failures: [] });
  });

  test('customers operations without a token are 401 unauthenticated', async () => {
    assertProblem(await service.request('GET', '/v1/customers'), 401, 'unauthenticated');
    assertProblem(await service.request('POST', '/v1/customers', { body: body() }), 401, 'unauthenticated');
    assertProblem(await service.request('POST', '/v1/customers/import', { body: { customers: [body()] } }), 401, 'unauthenticated');
    assertProblem(await service.request('GET', '/v1/customers/1'), 401, 'unauthenticated');
  });
});

// =============================================================================================
// customers.list over a known dataset of 8 customers (and nothing else).

describe('customers.list: search, filters, sort and pagination over a known dataset', () => {
  let service: TestService;
  let token: string;
  /** Dataset ids by 1-based position in DATA. */
  const id: string[] = [];

  // #  name               email                     country        tx  amount   last activity               status
  const DATA: CustomerBody[] = [
    { name: 'Ada Lovelace', email: 'ada@analytical.io', country: 'France', totalTransactions: 12, totalAmountSpent: 1200.5, lastActivityDate: '2026-11-01', status: 'active' },
    { name: 'bob Builder', email: 'bob@builders.com', country: 'Germany', totalTransactions: 3, totalAmountSpent: 75, lastActivityDate: '2026-10-15', status: 'inactive' },
    { name: 'Charlie Chaplin', email: 'charlie@films.com', country: 'France', totalTransactions: 40, totalAmountSpent: 5000, lastActivityDate: '2026-06-30', status: 'churned' },
    { name: 'dora explorer', email: 'dora@maps.io', country: 'Spain', totalTransactions: 7, totalAmountSpent: 310.25, lastActivityDate: '2026-11-19', status: 'active' },
    { name: 'Eve Online', email: 'eve@games.com', country: 'Germany', totalTransactions: 0, totalAmountSpent: 0, lastActivityDate: '2025-12-31', status: 'churned' },
    { name: 'frank Lloyd', email: 'frank@arch.io', country: 'France', totalTransactions: 25, totalAmountSpent: 999.99, lastActivityDate: '2026-09-01', status: 'active' },
    { name: 'Grace Hopper', email: 'grace@navy.mil', country: 'United States', totalTransactions: 18, totalAmountSpent: 2500, lastActivityDate: '2026-08-20', status: 'inactive' },
    { name: 'heidi Klum', email: 'heidi@lovelymail.com', country: 'France', totalTransactions: 5, totalAmountSpent: 42, lastActivityDate: '2026-11-20T11:00:00Z', status: 'active' },
  ];
  /** The ids of dataset positions (1-based). */
  const of = (...positions: number[]) => positions.map((p) => id[p - 1]!);
  const list = (params: Record<string, string | number> = {}) => service.request('GET', `/v1/customers${Object.keys(params).length ? qs(params) : ''}`, { token });

  before(async () => {
    service = await startService();
    token = await service.tokenFor('lifecycle_marketer');
    for (const customer of DATA) id.push((await create(service, token, { ...customer })).id);
  });
  after(() => service.close());

  test('list defaults: page 1, limit 50, sorted by lastActivityDate descending, total of all customers, exact items', async () => {
    const reply = await list();
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), ['items', 'limit', 'page', 'total']);
    assert.equal(reply.body.page, 1);
    assert.equal(reply.body.limit, 50);
    assert.equal(reply.body.total, 8);
    // lastActivityDate desc: 11-20 (8), 11-19 (4), 11-01 (1), 10-15 (2), 09-01 (6), 08-20 (7), 06-30 (3), 2025-12-31 (5)
    assert.deepEqual(ids(reply), of(8, 4, 1, 2, 6, 7, 3, 5));
    for (const item of reply.body.items) assert.deepEqual(Object.keys(item).sort(), CUSTOMER_KEYS);
    assert.deepEqual(reply.body.items[0], { id: id[7], ...DATA[7], lastActivityDate: '2026-11-20T11:00:00.000Z' });
    assert.deepEqual(reply.body.items[2], { id: id[0], ...DATA[0], lastActivityDate: '2026-11-01T00:00:00.000Z' });
  });

  const sorts: [string, number[]][] = [
    // name without regard to case: Ada, bob, Charlie, dora, Eve, frank, Grace, heidi
    ['name', [1, 2, 3, 4, 5, 6, 7, 8]],
    // amounts 0 (5), 42 (8), 75 (2), 310.25 (4), 999.99 (6), 1200.5 (1), 2500 (7), 5000 (3)
    ['totalAmountSpent', [5, 8, 2, 4, 6, 1, 7, 3]],
    // transactions 0 (5), 3 (2), 5 (8), 7 (4), 12 (1), 18 (7), 25 (6), 40 (3)
    ['totalTransactions', [5, 2, 8, 4, 1, 7, 6, 3]],
    // 2025-12-31 (5), 06-30 (3), 08-20 (7), 09-01 (6), 10-15 (2), 11-01 (1), 11-19 (4), 11-20 (8)
    ['lastActivityDate', [5, 3, 7, 6, 2, 1, 4, 8]],
  ];
  for (const [sort, ascending] of sorts) {
    test(`list sort=${sort} orders by ${sort} ascending and descending`, async () => {
      const asc = await list({ sort, direction: 'asc' });
      assert.equal(asc.status, 200, asc.text);
      assert.deepEqual(ids(asc), of(...ascending));
      const desc = await list({ sort, direction: 'desc' });
      assert.deepEqual(ids(desc), of(...[...ascending].reverse()));
      assert.equal(asc.body.total, 8);
      // direction defaults to desc
      assert.deepEqual(ids(await list({ sort })), ids(desc));
    });
  }

  test('list search of 3+ characters matches name or email substrings without regard to case (trigram)', async () => {
    // 'LOVE': Ada Lovelace (name), heidi@lovelymail.com (email)
    let reply = await list({ search: 'LOVE', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 8));
    assert.equal(reply.body.total, 2);
    // an email domain term: '.io' is in ada@analytical.io, dora@maps.io, frank@arch.io
    reply = await list({ search: '.io', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 4, 6));
    assert.equal(reply.body.total, 3);
    reply = await list({ search: 'NAVY.MIL', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(7));
    // a full email
    reply = await list({ search: 'Charlie@Films.com' });
    assert.deepEqual(ids(reply), of(3));
    // a name substring across a space
    reply = await list({ search: 'e onl' });
    assert.deepEqual(ids(reply), of(5));
    // no match
    reply = await list({ search: 'zzz' });
    assert.deepEqual(reply.body, { items: [], total: 0, page: 1, limit: 50 });
  });

  test('list search of 1 or 2 characters matches name or email substrings without regard to case (fallback)', async () => {
    // 'lo': Ada Lovelace, dora explorer, frank Lloyd, heidi@lovelymail.com
    let reply = await list({ search: 'lo', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 4, 6, 8));
    assert.equal(reply.body.total, 4);
    reply = await list({ search: 'LO', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 4, 6, 8));
    // 'io' only in the .io emails
    reply = await list({ search: 'IO', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 4, 6));
    // one character: 'k' in frank, heidi Klum
    reply = await list({ search: 'K', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(6, 8));
    // '%' and '_' are literal characters, not wildcards
    assert.equal((await list({ search: '%' })).body.total, 0);
    assert.equal((await list({ search: '_' })).body.total, 0);
  });

  test('list search is trimmed', async () => {
    let reply = await list({ search: '   LOVE  ', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 8));
    assert.equal(reply.body.total, 2);
    reply = await list({ search: '  lo ', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 4, 6, 8));
    // only spaces is no search at all
    reply = await list({ search: '   ' });
    assert.equal(reply.body.total, 8);
  });

  test('list status filter returns only customers of that status; all returns everyone', async () => {
    const expected: [string, number[]][] = [
      ['active', [1, 4, 6, 8]],
      ['inactive', [2, 7]],
      ['churned', [3, 5]],
      ['all', [1, 2, 3, 4, 5, 6, 7, 8]],
    ];
    for (const [status, positions] of expected) {
      const reply = await list({ status, sort: 'name', direction: 'asc' });
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual(ids(reply), of(...positions), status);
      assert.equal(reply.body.total, positions.length, status);
    }
  });

  test("list country filter is a case-insensitive exact match ('france' matches France, 'Fra' does not)", async () => {
    for (const country of ['france', 'FRANCE', 'France', '  france ']) {
      const reply = await list({ country, sort: 'name', direction: 'asc' });
      assert.deepEqual(ids(reply), of(1, 3, 6, 8), country);
      assert.equal(reply.body.total, 4, country);
    }
    for (const country of ['Fra', 'rance', 'France2', 'United']) {
      const reply = await list({ country });
      assert.deepEqual(reply.body.items, [], country);
      assert.equal(reply.body.total, 0, country);
    }
    const us = await list({ country: 'united states' });
    assert.deepEqual(ids(us), of(7));
    const germanyChurned = await list({ country: 'germany', status: 'churned' });
    assert.deepEqual(ids(germanyChurned), of(5));
    assert.equal(germanyChurned.body.total, 1);
  });

  test('list search, status and country combine with AND', async () => {
    // 'lo' matches 1, 4, 6, 8; active: 1, 4, 6, 8; France: 1, 3, 6, 8
    let reply = await list({ search: 'lo', status: 'active', country: 'france', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 6, 8));
    assert.equal(reply.body.total, 3);
    // 'love' matches 1, 8
    reply = await list({ search: 'love', status: 'active', country: 'FRANCE', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 8));
    assert.equal(reply.body.total, 2);
    reply = await list({ search: 'love', status: 'active', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 8));
    reply = await list({ search: 'love', country: 'france', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 8));
    reply = await list({ search: 'love', status: 'churned' });
    assert.deepEqual(reply.body.items, []);
    assert.equal(reply.body.total, 0);
    reply = await list({ search: '.io', country: 'spain' });
    assert.deepEqual(ids(reply), of(4));
    assert.equal(reply.body.total, 1);
    reply = await list({ search: 'o', status: 'inactive', country: 'germany' });
    assert.deepEqual(ids(reply), of(2));
    assert.equal(reply.body.total, 1);
  });

  test('list total counts every match, not just the page; a page beyond the end is empty with the right total', async () => {
    const firstPage = await list({ status: 'active', limit: 3, sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(firstPage), of(1, 4, 6));
    assert.equal(firstPage.body.total, 4);
    assert.equal(firstPage.body.limit, 3);
    const secondPage = await list({ status: 'active', limit: 3, page: 2, sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(secondPage), of(8));
    assert.equal(secondPage.body.total, 4);
    assert.equal(secondPage.body.page, 2);

    const searchPage = await list({ search: 'lo', limit: 1, page: 2, sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(searchPage), of(4));
    assert.equal(searchPage.body.total, 4);

    const lastPage = await list({ limit: 2, page: 4, sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(lastPage), of(7, 8));
    const beyond = await list({ limit: 2, page: 5 });
    assert.deepEqual(beyond.body, { items: [], total: 8, page: 5, limit: 2 });
    const farBeyond = await list({ search: 'love', page: 1000 });
    assert.deepEqual(farBeyond.body, { items: [], total: 2, page: 1000, limit: 50 });
  });

  test('list reflects updates and deletes in search results and totals', async () => {
    // Rename Eve (5) so that 'love' matches her too, then put her back.
    const renamed = await service.request('PATCH', `/v1/customers/${id[4]}`, { token, body: { name: 'Eve Lovejoy' } });
    assert.equal(renamed.status, 200, renamed.text);
    let reply = await list({ search: 'love', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 5, 8));
    assert.equal(reply.body.total, 3);
    reply = await list({ search: 'online' });
    assert.equal(reply.body.total, 0);
    const back = await service.request('PATCH', `/v1/customers/${id[4]}`, { token, body: { name: 'Eve Online' } });
    assert.equal(back.status, 200, back.text);
    reply = await list({ search: 'love', sort: 'name', direction: 'asc' });
    assert.deepEqual(ids(reply), of(1, 8));
    assert.deepEqual(ids(await list({ search: 'online' })), of(5));
    // Changing the country moves the customer between country filters.
    await service.request('PATCH', `/v1/customers/${id[3]}`, { token, body: { country: 'FRANCE' } });
    assert.equal((await list({ country: 'france' })).body.total, 5);
    assert.equal((await list({ country: 'spain' })).body.total, 0);
    await service.request('PATCH', `/v1/customers/${id[3]}`, { token, body: { country: 'Spain' } });
    assert.equal((await list({ country: 'france' })).body.total, 4);
    assert.equal((await list({ country: 'spain' })).body.total, 1);
  });
});

// =============================================================================================
// Stable sorting: equal sort values are broken by id, so pages never repeat or skip anyone.

describe('customers.list: ties are broken by id', () => {
  let service: TestService;
  let token: string;
  const all: string[] = [];

  before(async () => {
    service = await startService();
    token = await service.tokenFor('marketing_lead');
    // Seven customers whose every sort value is equal (names differ only in case).
    const names = ['same', 'Same', 'SAME', 'sAme', 'same', 'SaMe', 'samE'];
    const reply = await service.request('POST', '/v1/customers/import', {
      token,
      body: {
        customers: names.map((name, i) => ({
          name,
          email: `tie${i}@ties.test`,
          country: 'Tieland',
          totalTransactions: 5,
          totalAmountSpent: 100,
          lastActivityDate: '2026-10-01T10:00:00Z',
          status: 'active',
        })),
      },
    });
    assert.equal(reply.body.imported, 7, reply.text);
    const listed = await service.request('GET', '/v1/customers?limit=200', { token });
    all.push(...ids(listed));
    assert.equal(all.length, 7);
  });
  after(() => service.close());

  // Unfiltered, and filtered (the query plan then sorts matches instead of walking an index).
  const filters: [string, Record<string, string>][] = [
    ['', {}],
    [' with search, status and country filters', { search: 'ties.test', status: 'active', country: 'tieland' }],
    [' with a 2-character search', { search: 'ti' }],
  ];
  for (const [label, filter] of filters)
  for (const sort of ['name', 'totalAmountSpent', 'totalTransactions', 'lastActivityDate']) {
    for (const direction of ['asc', 'desc']) {
      test(`paging with limit=2 over equal ${sort} values (${direction})${label} visits every customer exactly once, in id order`, async () => {
        const seen: string[] = [];
        for (let page = 1; page <= 5; page++) {
          const reply = await service.request('GET', `/v1/customers${qs({ ...filter, sort, direction, limit: 2, page })}`, { token });
          assert.equal(reply.status, 200, reply.text);
          assert.equal(reply.body.total, 7);
          assert.equal(reply.body.items.length, page <= 3 ? 2 : page === 4 ? 1 : 0);
          seen.push(...ids(reply));
        }
        assert.equal(seen.length, 7);
        assert.equal(new Set(seen).size, 7);
        assert.deepEqual([...seen].sort(), [...all].sort());
        // The tie-break is the id: the visiting order is monotonic in the numeric id.
        const numeric = seen.map(Number);
        const sortedAsc = [...numeric].sort((a, b) => a - b);
        assert.ok(
          JSON.stringify(numeric) === JSON.stringify(sortedAsc) || JSON.stringify(numeric) === JSON.stringify([...sortedAsc].reverse()),
          `not in id order: ${seen.join(',')}`,
        );
        // One page of everything gives the same order as the pages put together.
        const whole = await service.request('GET', `/v1/customers${qs({ ...filter, sort, direction, limit: 200 })}`, { token });
        assert.deepEqual(ids(whole), seen);
      });
    }
  }
});

describe('customers: control characters', () => {
  let service: TestService;
  let token: string;
  before(async () => {
    service = await startService();
    token = await service.tokenFor('lifecycle_marketer');
  });
  after(() => service.close());

  test('a name or country with a control character is 400 naming the field', async () => {
    const body = { email: 'ctl@example.com', totalTransactions: 1, totalAmountSpent: 1, lastActivityDate: '2026-11-01', status: 'active' };
    assertProblem(await service.request('POST', '/v1/customers', { token, body: { ...body, name: 'Ada\nLovelace', country: 'France' } }), 400, 'validation_failed', ['name']);
    assertProblem(await service.request('POST', '/v1/customers', { token, body: { ...body, name: 'Ada', country: 'Fr\u0001ance' } }), 400, 'validation_failed', ['country']);
  });

  test('a search term with a control character matches nothing', async () => {
    const body = { name: 'Ada Lovelace', email: 'ada.ctl@example.com', country: 'France', totalTransactions: 1, totalAmountSpent: 1, lastActivityDate: '2026-11-01', status: 'active' };
    assert.equal((await service.request('POST', '/v1/customers', { token, body })).status, 200);
    for (const search of ['\u0001', 'Ada\nLovelace', 'ada\u007f']) {
      const reply = await service.request('GET', `/v1/customers?search=${encodeURIComponent(search)}`, { token });
      assert.equal(reply.status, 200);
      assert.deepEqual({ total: reply.body.total, items: reply.body.items }, { total: 0, items: [] });
    }
  });
});
