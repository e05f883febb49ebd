// customers.imports.preview (product.md section 14, "Look before importing"): how each header will be read, the first
// 10 records as they would be stored, the problems among them in the words of failures.csv; only the first 64 KB are
// read, a record they cut is left out; nothing is stored; 413, 400 without an email column or with a bad mapping.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { customerRow, importRows } from './support/customers.ts';

const MAX_BYTES = 100_000;
let service: TestService;
let token: string;

before(async () => {
  service = await startService({ env: { IMPORT_MAX_BYTES: String(MAX_BYTES), ACCESS_TOKEN_TTL: '86400' } });
  token = await service.tokenFor('lifecycle_marketer');
});
after(() => service.close());

let serial = 0;
const email = (name: string) => `${name}.${++serial}@preview.example.com`;

/** Posts `csv` to the preview with the query. */
function preview(csv: string, query = '', bearer: string | null = token) {
  return service.request('POST', `/v1/customers/imports/preview${query}`, { token: bearer ?? undefined, raw: csv, headers: { 'content-type': 'text/csv' } });
}

/** How many customers and jobs are stored: the preview must change neither. */
function storedCounts() {
  return [service.db.prepare('SELECT count(*) FROM customers').pluck().get(), service.db.prepare('SELECT count(*) FROM import_jobs').pluck().get()];
}

describe('a CSV preview', () => {
  test('answers how each header is read, the first records as stored and their problems, and stores nothing', async () => {
    const taken = customerRow({ name: 'Already Here' });
    await importRows(service, token, [taken]);
    const before = storedCounts();
    const [ada, bo] = [email('ada'), email('bo')];
    const csv =
      '\ufeffFull Name,E-mail,Country,Orders,Total_Spent,Last Activity,STATUS,Notes\r\n' +
      `  Ada Lovelace  ,${ada.toUpperCase()},France,3,120.505,2026-11-01,Active,"a\r\nnote"\r\n` + // lines 2-3
      `Bo,${bo},Spain,x,1,2026-10-01T08:00:00+02:00,churned,\r\n` + // line 4: a problem
      `Taken,${taken.email},Spain,1,1,2026-10-01,active,\r\n` + // line 5: stored already
      `Ada Twice,${ada},France,1,1,2026-11-01,active,\r\n`; // line 6: repeats line 2
    const reply = await preview(csv);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, {
      columns: [
        { header: 'Full Name', field: 'name' },
        { header: 'E-mail', field: 'email' },
        { header: 'Country', field: 'country' },
        { header: 'Orders', field: 'totalTransactions' },
        { header: 'Total_Spent', field: 'totalAmountSpent' },
        { header: 'Last Activity', field: 'lastActivityDate' },
        { header: 'STATUS', field: 'status' },
        { header: 'Notes', field: null },
      ],
      rows: [
        {
          line: 2,
          name: 'Ada Lovelace',
          email: ada,
          country: 'France',
          totalTransactions: 3,
          totalAmountSpent: 120.51,
          lastActivityDate: '2026-11-01T00:00:00.000Z',
          status: 'active',
          existing: false,
        },
      ],
      problems: [
        { line: 4, email: bo, reason: 'Number of transactions must be a whole number of 0 or more.' },
        { line: 5, email: taken.email, reason: `A customer with the email ${taken.email} already exists.` },
        { line: 6, email: ada, reason: `A customer with the email ${ada} already exists.` },
      ],
    });
    assert.deepEqual(storedCounts(), before);
  });

  test('with onExisting=update a stored email is a row marked existing, and a repeat is the problem a job reports', async () => {
    const taken = customerRow({ name: 'Stored Person' });
    await importRows(service, token, [taken]);
    const csv = `email,name,country,orders,amount,last_activity,status\n${taken.email},New Name,Kenya,2,3,2026-11-01,inactive\n${taken.email},Again,Kenya,2,3,2026-11-01,inactive\n`;
    const reply = await preview(csv, '?onExisting=update');
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body.rows.map((r: { line: number; name: string; existing: boolean }) => [r.line, r.name, r.existing]), [[2, 'New Name', true]]);
    assert.deepEqual(reply.body.problems, [{ line: 3, email: taken.email, reason: `The email ${taken.email} is on an earlier row of this file; only that row is imported.` }]);
    assertProblem(await preview(csv, '?onExisting=always'), 400, 'validation_failed', ['onExisting']);
  });

  test('shows the first 10 records only', async () => {
    const lines = Array.from({ length: 14 }, (_, i) => `${email('ten')},Person ${i},Peru,1,1,2026-11-01,active`);
    const reply = await preview(`email,name,country,orders,amount,last_activity,status\n${lines.join('\n')}\n`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body.rows.map((r: { line: number }) => r.line), [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    assert.deepEqual(reply.body.problems, []);
  });

  test('reads only the first 64 KB: the record they cut is left out, the ones before it shown', async () => {
    // Each record is about 20,000 bytes (a long note): the fourth starts before byte 65,536 and ends after it.
    const note = 'n'.repeat(20_000);
    const records = Array.from({ length: 4 }, (_, i) => `${email('cut')},Cut ${i},Chile,1,1,2026-11-01,active,${note}`);
    const csv = `email,name,country,orders,amount,last_activity,status,notes\n${records.join('\n')}\n`;
    const fourthStarts = Buffer.byteLength(csv.slice(0, csv.indexOf(records[3]!)));
    assert.ok(fourthStarts < 65_536 && Buffer.byteLength(csv) > 65_536 && Buffer.byteLength(csv) < MAX_BYTES);
    const reply = await preview(csv);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body.rows.map((r: { name: string }) => r.name), ['Cut 0', 'Cut 1', 'Cut 2']);
    assert.deepEqual(reply.body.problems, []);
    // A record whose line break falls exactly on the cut is whole.
    const exact = `email,name,notes\n${email('exact')},Exact,${'x'.repeat(65_536)}`;
    const head = exact.slice(0, exact.indexOf('\n') + 1);
    const first = `${email('exact')},Exact,`;
    const whole = `${head}${first}${'x'.repeat(65_536 - Buffer.byteLength(head) - Buffer.byteLength(first) - 1)}\n${email('exact')},Cut,xx\n`;
    assert.equal(whole.indexOf('\n', head.length), 65_535);
    const onCut = await preview(whole);
    assert.equal(onCut.status, 200, onCut.text);
    assert.deepEqual([...onCut.body.rows, ...onCut.body.problems].map((r: { line: number }) => r.line), [2]);
  });

  test('a columns mapping is applied as for a job; a mapping that does not fit the file is 400 naming columns', async () => {
    const csv = `Mail,Client,email\n${email('map')},Mapped,${email('alias')}\n`;
    const reply = await preview(csv, `?columns=${encodeURIComponent('{"mail":"email","Client":"name"}')}`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body.columns, [
      { header: 'Mail', field: 'email' },
      { header: 'Client', field: 'name' },
      { header: 'email', field: null },
    ]);
    for (const columns of ['{"Nope":"email"}', '{"Mail":"email","Client":"email"}', '{"Mail":"mail"}', '[]']) {
      assertProblem(await preview(csv, `?columns=${encodeURIComponent(columns)}`), 400, 'validation_failed', ['columns']);
    }
  });

  test('a file without an email column is 400 naming body; a body over IMPORT_MAX_BYTES is 413; anyone signed in may look', async () => {
    const before = storedCounts();
    const noEmail = await preview('name,country\nAda,France\n');
    assertProblem(noEmail, 400, 'validation_failed', ['body']);
    assert.match(noEmail.body.detail, /no email column \(it names name, country\)/);
    assertProblem(await preview(`email\n${'a'.repeat(MAX_BYTES)}\n`), 413, 'payload_too_large');
    assertProblem(await preview('email\na@b.com\n', '', null), 401, 'unauthenticated');
    const lead = await service.tokenFor('marketing_lead');
    assert.equal((await preview(`email\n${email('lead')}\n`, '', lead)).status, 200);
    assert.deepEqual(storedCounts(), before);
  });
});
