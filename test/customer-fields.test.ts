// The customer's fields are declared once (src/customers/store/fields.ts) and every path derives its list from the
// declaration. Each test stores customers whose every field holds a value no other field holds, through one path
// (create, update, the JSON import, a CSV job, its preview, the bulk seed), and reads each field back in its place
// through the API (the list and GET /v1/customers/{id}) or the export in both formats: a path that drops a field, or
// puts one in another's place, fails here. And the declaration covers every column of the customers table.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { bulkInsertCustomers, CUSTOMER_FIELDS, EXPORT_FIELDS, INTERNAL_COLUMNS, seedPostgres, type CustomerField } from '../src/customers/index.ts';
import { openDatabase } from '../src/db/database.ts';
import type { CustomerRecord } from '../src/domain/customers.ts';
import { CSV_FIELDS } from '../src/domain/imports.ts';
import { startService, type TestService } from './helpers.ts';
import { createSegment } from './support/campaigns.ts';
import { keptDatabase } from './support/kept-database.ts';

type Fields = Record<string, string | number>;

/** The API's fields of a customer, in the order a Customer shows them (the documented order). */
const API_ORDER = CUSTOMER_FIELDS.map((f) => f.api);

/**
 * Returns a customer in the API's form whose every field holds a value of its own: texts name their field (with a
 * comma and quotes, so CSV quoting is exercised), numbers and dates differ from field to field. `tag` makes it unique.
 */
function distinctCustomer(tag: string): Fields {
  const customer: Fields = {};
  CUSTOMER_FIELDS.forEach((f, i) => {
    customer[f.api] = valueOf(f, i, tag);
  });
  return customer;
}

/** Returns the value of the field (the i-th declared) in a distinct customer, as the API takes and shows it. */
function valueOf({ api, kind }: CustomerField, i: number, tag: string): string | number {
  switch (kind) {
    case 'text':
      return `${api} ${tag}, "${i}"`;
    case 'email':
      return `${tag}.${api}@fields.example.com`.toLowerCase();
    case 'status':
      return 'inactive';
    case 'count':
      return 1000 + 17 * i;
    case 'cents':
      return Number(`${4321 + i}.09`);
    case 'instant':
      return `2025-0${1 + (i % 9)}-1${i % 10}T0${i % 10}:3${i % 10}:0${i % 10}.${100 + i}Z`;
  }
}

/** Returns the customer in the API's form as stored (cents, epoch ms), for the bulk load. */
function recordOf(customer: Fields): CustomerRecord {
  const record: Fields = {};
  for (const f of CUSTOMER_FIELDS) {
    const value = customer[f.api]!;
    record[f.key] = f.kind === 'cents' ? Math.round((value as number) * 100) : f.kind === 'instant' ? Date.parse(value as string) : value;
  }
  return record as unknown as CustomerRecord;
}

/** Returns the customers as a CSV file whose header names the fields by their export headers, in reverse order. */
function csvOf(customers: readonly Fields[]): string {
  const fields = [...CUSTOMER_FIELDS].reverse();
  const cell = (value: string | number) => `"${String(value).replace(/"/g, '""')}"`;
  const lines = [fields.map((f) => f.exportHeader).join(','), ...customers.map((c) => fields.map((f) => cell(c[f.api]!)).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}

let service: TestService;
let token: string;

before(async () => {
  service = await startService({ env: { ACCESS_TOKEN_TTL: '86400' } });
  token = await service.tokenFor('lifecycle_marketer');
});
after(() => service.close());

/**
 * Asserts that exactly one customer of `at` has the email and that the list and GET /v1/customers/{id} show `expected`,
 * field by field and in order; returns its id.
 */
async function assertStored(at: TestService, expected: Fields, bearer = token): Promise<string> {
  const list = await at.request('GET', `/v1/customers?search=${encodeURIComponent(String(expected.email))}`, { token: bearer });
  assert.equal(list.status, 200, list.text);
  const found = list.body.items.filter((c: Fields) => c.email === expected.email);
  assert.equal(found.length, 1, list.text);
  const { id } = found[0];
  assert.deepEqual(Object.keys(found[0]), ['id', ...API_ORDER]);
  assert.deepEqual(found[0], { id, ...expected });
  const one = await at.request('GET', `/v1/customers/${id}`, { token: bearer });
  assert.equal(one.status, 200, one.text);
  assert.deepEqual(Object.keys(one.body), ['id', ...API_ORDER]);
  assert.deepEqual(one.body, { id, ...expected });
  return id;
}

/** The columns of a table and their declared types, as the engine's catalogue has them. */
function tableColumns(target: TestService, table: string): Promise<{ name: string; type: string }[]> {
  return target.anyEngine.kind === 'sqlite'
    ? target.query('SELECT name, type FROM pragma_table_info(?)', table)
    : target.query("SELECT column_name AS name, upper(data_type) AS type FROM information_schema.columns WHERE table_name = ? AND table_schema = current_schema()", table);
}

/** Runs the CSV as a job and resolves with the job once it has ended. */
async function runJob(csv: string, query = '') {
  const accepted = await service.request('POST', `/v1/customers/imports${query}`, { token, raw: csv, headers: { 'content-type': 'text/csv' } });
  assert.equal(accepted.status, 202, accepted.text);
  await service.waitForLog((line) => line.msg === 'import job ended' && line.jobId === accepted.body.id);
  return (await service.request('GET', `/v1/customers/imports/${accepted.body.id}`, { token })).body;
}

describe('the declaration', () => {
  test('lists the API fields in the documented order, and CSV_FIELDS names the same fields', () => {
    assert.deepEqual(API_ORDER, ['name', 'email', 'country', 'totalTransactions', 'totalAmountSpent', 'lastActivityDate', 'status']);
    assert.deepEqual([...CSV_FIELDS], API_ORDER);
  });

  test('covers every column of the customers table but the internal ones it names, with the type schema.sql gives it', async () => {
    const columns = await tableColumns(service, 'customers');
    const declared = [...CUSTOMER_FIELDS.map((f) => ({ name: f.column, type: f.sqlType })), ...INTERNAL_COLUMNS.map((name) => ({ name, type: undefined }))];
    assert.deepEqual(
      columns.map((c) => c.name).sort(),
      declared.map((c) => c.name).sort(),
    );
    // PostgreSQL's schema stores the INTEGER columns as BIGINT (64 bits, as SQLite's INTEGER is).
    const typeOn = (type: string) => (service.anyEngine.kind === 'postgres' && type === 'INTEGER' ? 'BIGINT' : type);
    for (const field of CUSTOMER_FIELDS) assert.equal(columns.find((c) => c.name === field.column)!.type, typeOn(field.sqlType), field.column);
  });

  test('every value of a distinct customer is its own, so a field in another place shows', () => {
    const values = Object.values(distinctCustomer('check')).filter((v) => v !== 'inactive');
    assert.equal(new Set(values.map(String)).size, values.length);
  });
});

describe('every field arrives in its place', () => {
  test('through customers.create', async () => {
    const customer = distinctCustomer('create');
    const created = await service.request('POST', '/v1/customers', { token, body: customer });
    assert.equal(created.status, 200, created.text);
    assert.deepEqual(Object.keys(created.body), ['id', ...API_ORDER]);
    await assertStored(service, customer);
  });

  test('through customers.update, every field changed at once', async () => {
    const created = await service.request('POST', '/v1/customers', { token, body: distinctCustomer('update-before') });
    assert.equal(created.status, 200, created.text);
    const changed = distinctCustomer('update-after');
    const updated = await service.request('PATCH', `/v1/customers/${created.body.id}`, { token, body: changed });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(await assertStored(service, changed), created.body.id);
  });

  test('through the JSON import, new and (onExisting=update) replacing a stored customer', async () => {
    const fresh = distinctCustomer('json-new');
    const stored = distinctCustomer('json-stored');
    const imported = await service.request('POST', '/v1/customers/import', { token, body: { customers: [fresh, stored] } });
    assert.deepEqual(imported.body, { imported: 2, updated: 0, skipped: 0, failures: [] });
    await assertStored(service, fresh);
    const id = await assertStored(service, stored);

    const replacing = { ...distinctCustomer('json-replacing'), email: stored.email! };
    const updated = await service.request('POST', '/v1/customers/import', { token, body: { onExisting: 'update', customers: [replacing] } });
    assert.deepEqual(updated.body, { imported: 0, updated: 1, skipped: 0, failures: [] });
    assert.equal(await assertStored(service, replacing), id);
  });

  test('through the JSON import with onExisting=update, a row differing from the stored customer in one field only is stored', async () => {
    const stored = distinctCustomer('one-field');
    assert.equal((await service.request('POST', '/v1/customers', { token, body: stored })).status, 200);
    const other: Fields = { ...distinctCustomer('one-field-other'), status: 'churned' };
    let expected = stored;
    for (const field of CUSTOMER_FIELDS.filter((f) => f.kind !== 'email' && other[f.api] !== stored[f.api])) {
      expected = { ...expected, [field.api]: other[field.api]! };
      const updated = await service.request('POST', '/v1/customers/import', { token, body: { onExisting: 'update', customers: [expected] } });
      assert.deepEqual(updated.body, { imported: 0, updated: 1, skipped: 0, failures: [] }, field.api);
      await assertStored(service, expected);
    }
  });

  test('through a CSV job, new and (onExisting=update) replacing a stored customer, its header named as the export names it', async () => {
    const fresh = distinctCustomer('csv-new');
    const stored = distinctCustomer('csv-stored');
    const job = await runJob(csvOf([fresh, stored]));
    assert.equal(job.status, 'completed', JSON.stringify(job));
    assert.deepEqual([job.imported, job.skipped, job.ignoredColumns], [2, 0, []]);
    await assertStored(service, fresh);
    const id = await assertStored(service, stored);

    const replacing = { ...distinctCustomer('csv-replacing'), email: stored.email! };
    const again = await runJob(csvOf([replacing]), '?onExisting=update');
    assert.equal(again.status, 'completed', JSON.stringify(again));
    assert.equal(again.updated, 1);
    assert.equal(await assertStored(service, replacing), id);
  });

  test("through a CSV job's preview", async () => {
    const customer = distinctCustomer('preview');
    const reply = await service.request('POST', '/v1/customers/imports/preview', { token, raw: csvOf([customer]), headers: { 'content-type': 'text/csv' } });
    assert.equal(reply.status, 200, reply.text);
    const [row] = reply.body.rows;
    assert.deepEqual(Object.keys(row), ['line', ...API_ORDER, 'existing']);
    assert.deepEqual(row, { line: 2, ...customer, existing: false });
  });

  test('through the bulk seed, in a statement of many rows and in one of a single row', async () => {
    const database = await keptDatabase('fields-seed');
    try {
      // 150 rows: on SQLite the first 100 go in one statement, the rest one row a statement; PostgreSQL copies them.
      const customers = Array.from({ length: 150 }, (_, i) => distinctCustomer(`bulk-${i}`));
      const now = new Date('2026-11-20T12:00:00.000Z');
      if ('databaseUrl' in database.at) {
        assert.equal((await seedPostgres(database.at.databaseUrl, customers.map(recordOf), 150, { now })).inserted, 150);
      } else {
        const db = openDatabase(database.at.databasePath);
        try {
          assert.equal(bulkInsertCustomers(db, customers.map(recordOf), now), 150);
        } finally {
          db.close();
        }
      }
      const seeded = await startService({ ...database.at, env: { ACCESS_TOKEN_TTL: '86400' } });
      try {
        const bearer = await seeded.tokenFor('lifecycle_marketer');
        await assertStored(seeded, customers[0]!, bearer);
        await assertStored(seeded, customers[149]!, bearer);
      } finally {
        await seeded.close();
      }
    } finally {
      await database.remove();
    }
  });

  test('through the export, in both formats', async () => {
    const customer = distinctCustomer('export');
    assert.equal((await service.request('POST', '/v1/customers', { token, body: customer })).status, 200);
    const segment = await createSegment(service, token, 'The distinct customer', [{ field: 'country', operator: 'eq', value: String(customer.country) }]);
    assert.equal(segment.matchCount, 1);

    const plain = await service.request('GET', `/v1/segments/${segment.id}/customers.csv`, { token });
    assert.equal(plain.status, 200, plain.text);
    const [header, line, ...more] = parse(plain.text) as string[][];
    assert.deepEqual(header, EXPORT_FIELDS.map((f) => f.exportHeader));
    assert.deepEqual(more, []);
    assert.deepEqual(line, EXPORT_FIELDS.map((f) => String(customer[f.api])));

    const listmonk = await service.request('GET', `/v1/segments/${segment.id}/customers.csv?format=listmonk`, { token });
    assert.equal(listmonk.status, 200, listmonk.text);
    const [listmonkHeader, [email, name, attributes] = []] = parse(listmonk.text) as string[][];
    assert.deepEqual(listmonkHeader, ['email', 'name', 'attributes']);
    assert.deepEqual([email, name], [customer.email, customer.name]);
    const others = EXPORT_FIELDS.filter((f) => f.key !== 'email' && f.key !== 'name');
    const parsed = JSON.parse(attributes!) as Fields;
    assert.deepEqual(Object.keys(parsed), others.map((f) => f.exportHeader));
    assert.deepEqual(parsed, Object.fromEntries(others.map((f) => [f.exportHeader, customer[f.api]])));
  });
});
