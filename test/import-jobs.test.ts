// CSV import jobs (product.md section 9) over HTTP: the header row and its aliases, BOM, RFC 4180 quoting, ignored
// columns, the missing email column refused before any row, skipped rows with their lines in failures.csv,
// duplicates in the file and in the base, 413 and 415, jobs run in arrival order, and the aggregates and segment
// counts exact afterwards. Each test waits for the service's "import job ended" log line, never a sleep.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { assertAggregatesExact, searchNames, segmentCount } from './support/aggregates.ts';
import { customerRow, importRows } from './support/customers.ts';

let service: TestService;
let token: string;

before(async () => {
  service = await startService({ env: { IMPORT_MAX_BYTES: '4096', ACCESS_TOKEN_TTL: '86400' } });
  token = await service.tokenFor('lifecycle_marketer');
});
after(() => service.close());

let emailCounter = 0;
/** A fresh email, so tests sharing the service never collide. */
const email = (name: string) => `${name}.${++emailCounter}@jobs.example.com`;

/** Uploads `csv` as a job; returns the 202 answer. */
function upload(csv: string | Uint8Array, query = '', headers: Record<string, string> = { 'content-type': 'text/csv' }) {
  return service.request('POST', `/v1/customers/imports${query}`, { token, raw: csv, headers });
}

/** Uploads `csv`, asserts 202 with a Location, and resolves with the job once it has ended. */
async function runJob(csv: string, query = '') {
  const accepted = await upload(csv, query);
  assert.equal(accepted.status, 202, accepted.text);
  assert.equal(accepted.headers.get('location'), `/v1/customers/imports/${accepted.body.id}`);
  await service.waitForLog((line) => line.msg === 'import job ended' && line.jobId === accepted.body.id);
  const ended = await service.request('GET', accepted.headers.get('location')!, { token });
  assert.equal(ended.status, 200);
  return { accepted: accepted.body, job: ended.body };
}

async function failuresCsv(jobId: string): Promise<string> {
  const reply = await service.request('GET', `/v1/customers/imports/${jobId}/failures.csv`, { token });
  assert.equal(reply.status, 200, reply.text);
  assert.equal(reply.headers.get('content-type'), 'text/csv; charset=utf-8');
  assert.match(reply.headers.get('content-disposition') ?? '', /^attachment; filename="import-.+-failures\.csv"$/);
  return reply.text;
}

async function customerByEmail(address: string) {
  const reply = await service.request('GET', `/v1/customers?search=${encodeURIComponent(address)}`, { token });
  assert.equal(reply.status, 200);
  return reply.body.items.find((c: { email: string }) => c.email === address);
}

describe('a CSV job', () => {
  test('maps aliases without case, reads a BOM and RFC 4180 quoting, lists ignored columns, and stores the rows', async () => {
    const [ada, bo, cy] = [email('ada'), email('bo'), email('cy')];
    const csv =
      '\ufeffFull Name,E-mail,Country,Orders,Total_Spent,Last Activity,STATUS,Notes,Loyalty Tier\r\n' +
      `"Lovelace, Ada",${ada},France,3,120.50,2026-11-01,Active,"said ""hi""",gold\r\n` +
      `"Bo ""B"" Jones",${bo.toUpperCase()},Spain,0,0,2026-10-01T08:00:00Z,churned,"two\nlines",\r\n` +
      `Cy,${cy},Italy,7,99.999,2026-09-30T10:00:00+02:00,inactive,,\r\n`;
    const { accepted, job } = await runJob(csv, '?fileName=spring%20export.csv');
    assert.equal(accepted.status, 'running');
    assert.deepEqual(Object.keys(job).sort(), ['bytesRead', 'createdBy', 'fileName', 'finishedAt', 'id', 'ignoredColumns', 'imported', 'onExisting', 'rowsRead', 'skipped', 'startedAt', 'status', 'updated']);
    assert.deepEqual([job.updated, job.onExisting], [0, 'skip']);
    assert.equal(job.status, 'completed');
    assert.equal(job.fileName, 'spring export.csv');
    assert.deepEqual(job.ignoredColumns, ['Notes', 'Loyalty Tier']);
    assert.deepEqual([job.rowsRead, job.imported, job.skipped], [3, 3, 0]);
    assert.equal(job.bytesRead, Buffer.byteLength(csv));
    assert.equal(job.startedAt, '2026-11-20T12:00:00.000Z');
    assert.equal(job.finishedAt, '2026-11-20T12:00:00.000Z');
    const stored = await customerByEmail(ada);
    assert.deepEqual(
      { name: stored.name, country: stored.country, totalTransactions: stored.totalTransactions, totalAmountSpent: stored.totalAmountSpent, status: stored.status, lastActivityDate: stored.lastActivityDate },
      { name: 'Lovelace, Ada', country: 'France', totalTransactions: 3, totalAmountSpent: 120.5, status: 'active', lastActivityDate: '2026-11-01T00:00:00.000Z' },
    );
    assert.equal((await customerByEmail(bo)).name, 'Bo "B" Jones', 'quotes doubled inside quotes; the email lower-cased');
    const cyStored = await customerByEmail(cy);
    assert.equal(cyStored.totalAmountSpent, 100, 'rounded half-up to cents, as customers.import does');
    assert.equal(cyStored.lastActivityDate, '2026-09-30T08:00:00.000Z');
  });

  test('skips rows that break a rule or repeat an email, in the file or in the base, each with its line', async () => {
    const [taken, twice, good, bad, future] = [email('taken'), email('twice'), email('good'), email('bad'), email('future')];
    const seeded = await service.request('POST', '/v1/customers', {
      token,
      body: { name: 'Taken', email: taken, country: 'France', totalTransactions: 1, totalAmountSpent: 1, lastActivityDate: '2026-11-01', status: 'active' },
    });
    assert.equal(seeded.status, 200);
    const csv = [
      'name,email,country,transactions,amount,last_activity_date,status',
      `Twice,${twice},France,1,10,2026-11-01,active`,
      `Taken again,${taken},France,1,10,2026-11-01,active`,
      '',
      `No email,,France,1,10,2026-11-01,active`,
      `Bad number,${bad},France,many,10,2026-11-01,active`,
      `Future,${future},France,1,10,2026-12-25,active`,
      `Twice again,${twice},Spain,2,20,2026-11-02,active`,
      `Good,${good},Spain,2,20,2026-11-02,inactive`,
    ].join('\n');
    const { job } = await runJob(csv);
    assert.equal(job.status, 'completed');
    assert.deepEqual([job.rowsRead, job.imported, job.skipped], [7, 2, 5]);
    assert.equal(
      await failuresCsv(job.id),
      'line,email,reason\r\n' +
        `3,${taken},A customer with the email ${taken} already exists.\r\n` +
        '5,,Email is missing.\r\n' +
        `6,${bad},Number of transactions must be a whole number of 0 or more.\r\n` +
        `7,${future},Last activity date must not be more than one day in the future.\r\n` +
        `8,${twice},A customer with the email ${twice} already exists.\r\n`,
    );
    assert.equal((await customerByEmail(twice)).name, 'Twice', 'the first row with an email is stored, never merged');
    assert.equal((await customerByEmail(good)).status, 'inactive');
  });

  test('a file without an email column is 400 before any row is read, and no job is made', async () => {
    const before = (await service.request('GET', '/v1/customers/imports', { token })).body.total;
    const reply = await upload('name,country,mail_address\nAda,France,a@x.com\n');
    assertProblem(reply, 400, 'validation_failed', ['body']);
    assert.match(reply.body.detail, /no email column \(it names name, country, mail_address\)/);
    assertProblem(await upload(''), 400, 'validation_failed', ['body']);
    assert.equal((await service.request('GET', '/v1/customers/imports', { token })).body.total, before);
  });

  test('a body that is not text/csv is 415; a file over IMPORT_MAX_BYTES is 413, declared or streamed', async () => {
    const before = (await service.request('GET', '/v1/customers/imports', { token })).body.total;
    assertProblem(await upload('email\na@b.com\n', '', { 'content-type': 'application/json' }), 415, 'unsupported_media_type');
    assertProblem(await upload('email\na@b.com\n', '', {}), 415, 'unsupported_media_type');
    const big = `email\n${Array.from({ length: 400 }, (_, i) => `big${i}@jobs.example.com`).join('\n')}\n`;
    assert.ok(Buffer.byteLength(big) > 4096);
    assertProblem(await upload(big), 413, 'payload_too_large');
    // Without a length to read first, the limit is met while the file streams in.
    const chunked = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(big));
        controller.close();
      },
    });
    const streamed = await fetch(`${service.url}/v1/customers/imports`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
      body: chunked,
      duplex: 'half',
    } as RequestInit);
    assert.equal(streamed.status, 413);
    assert.equal(((await streamed.json()) as { code: string }).code, 'payload_too_large');
    assert.equal((await service.request('GET', '/v1/customers/imports', { token })).body.total, before);
    assert.equal(await customerByEmail('big0@jobs.example.com'), undefined);
  });

  test('jobs run one at a time in arrival order, and are listed newest first', async () => {
    const rows = (name: string, n: number) => `email,name,country,orders,amount,last_activity,status\n${Array.from({ length: n }, (_, i) => `${name}${i}.${emailCounter}@order.example.com,${name} ${i},Norway,1,5,2026-11-01,active`).join('\n')}\n`;
    emailCounter++;
    const first = await upload(rows('first', 30));
    const second = await upload(rows('second', 30));
    assert.deepEqual([first.status, second.status], [202, 202]);
    const ended: string[] = [];
    await Promise.all(
      [first.body.id, second.body.id].map((id) => service.waitForLog((line) => line.msg === 'import job ended' && line.jobId === id).then(() => ended.push(id))),
    );
    const ids = async (prefix: string) => {
      const list = await service.request('GET', `/v1/customers?search=${prefix}&limit=200&sort=name`, { token });
      return list.body.items.map((c: { id: string }) => Number(c.id));
    };
    assert.ok(Math.max(...(await ids('first'))) < Math.min(...(await ids('second'))), 'every row of the first job is stored before the second');
    const list = await service.request('GET', '/v1/customers/imports?limit=2', { token });
    assert.deepEqual(list.body.items.map((j: { id: string }) => j.id), [second.body.id, first.body.id]);
    assert.equal(list.body.page, 1);
    assert.equal(list.body.limit, 2);
  });

  test('aggregates and segment counts include the imported rows at once', async () => {
    const country = `Jobland ${++emailCounter}`;
    const kpisBefore = (await service.request('GET', '/v1/customers/kpis', { token })).body;
    const csv = `email,name,country,orders,amount,last_activity,status\n${Array.from({ length: 25 }, (_, i) => `agg${i}.${emailCounter}@jobs.example.com,Agg ${i},${country},2,10.10,2026-11-10,${i % 5 === 0 ? 'churned' : 'active'}`).join('\n')}\n`;
    const { job } = await runJob(csv);
    assert.equal(job.imported, 25);
    const kpis = (await service.request('GET', '/v1/customers/kpis', { token })).body;
    assert.equal(kpis.totalCustomers, kpisBefore.totalCustomers + 25);
    assert.equal(kpis.statusCounts.churned, kpisBefore.statusCounts.churned + 5);
    assert.equal(Math.round((kpis.totalTransactionValue - kpisBefore.totalTransactionValue) * 100), 25 * 1010);
    const preview = await service.request('POST', '/v1/segments/preview', { token, body: { conditions: [{ field: 'country', operator: 'eq', value: country }] } });
    assert.equal(preview.body.matchCount, 25);
  });

  test('an unknown job is 404, and its failures too', async () => {
    assertProblem(await service.request('GET', '/v1/customers/imports/no-such-job', { token }), 404, 'not_found');
    assertProblem(await service.request('GET', '/v1/customers/imports/no-such-job/failures.csv', { token }), 404, 'not_found');
  });

  test('failures.csv defuses cells a spreadsheet would run as formulas', async () => {
    const { job } = await runJob('email,name\n=HYPERLINK("http://evil"),x\n');
    assert.equal(job.skipped, 1);
    assert.equal(
      await failuresCsv(job.id),
      `line,email,reason\r\n2,"'=hyperlink(""http://evil"")","Country, number of transactions, amount spent, last activity date and status are missing. Email must be a valid email address, such as ada@example.com."\r\n`,
    );
  });
});

describe('a CSV job whose file cannot be read', () => {
  test('fails with the reason in failures.csv; the job before it and the service go on', async () => {
    // The file is parsed on the service's event loop: a file that cannot be read must end its job, not the service.
    const other = await startService({ env: { ACCESS_TOKEN_TTL: '86400' } });
    try {
      const lead = await other.tokenFor('lifecycle_marketer');
      // Row i is on line i + 2; the rows at BAD have no name. The parser reads ahead of the rows it hands on (and
      // pauses while the writer is behind), so each skipped row must keep its own line.
      const BAD = new Set([0, 1, 15, 16, 17, 20_000, 39_999, 40_000, 40_001, 59_999]);
      // The rows at REPEATS repeat an earlier row's email in the same window of rows sorted by email, from another
      // run of it (the parser sorts runs of 5,000 rows and merges them): the earlier row is the one stored.
      const REPEATS = new Map([[7_000, 100], [28_000, 12_000]]);
      const csv = (name: string, n: number) =>
        `email,name,country,orders,amount,last_activity,status\n${Array.from({ length: n }, (_, i) => `${name}${REPEATS.get(i) ?? i}@gone.example.com,${BAD.has(i) ? '' : `${name} ${i}`},Norway,1,5,2026-11-01,active`).join('\n')}\n`;
      const post = (text: string) => other.request('POST', '/v1/customers/imports', { token: lead, raw: text, headers: { 'content-type': 'text/csv' } });
      const first = await post(csv('long', 60_000));
      const second = await post(csv('gone', 3));
      assert.deepEqual([first.status, second.status], [202, 202]);
      // Jobs run in arrival order: while the first runs, the second's file goes before its turn comes.
      rmSync(join(other.uploads, `${second.body.id}.csv`));
      assert.equal((await other.request('GET', `/v1/customers/imports/${first.body.id}`, { token: lead })).body.status, 'running', 'the first job ended too soon for this test');
      await other.waitForLog((line) => line.msg === 'import job ended' && line.jobId === second.body.id);
      const gone = (await other.request('GET', `/v1/customers/imports/${second.body.id}`, { token: lead })).body;
      assert.deepEqual([gone.status, gone.imported, gone.skipped], ['failed', 0, 1]);
      const failures = await other.request('GET', `/v1/customers/imports/${second.body.id}/failures.csv`, { token: lead });
      assert.match(failures.text, /^line,email,reason\r\n1,,The file could not be read from here on: ENOENT\r\n$/);
      await other.waitForLog((line) => line.msg === 'import job ended' && line.jobId === first.body.id);
      const done = (await other.request('GET', `/v1/customers/imports/${first.body.id}`, { token: lead })).body;
      const skippedRows = BAD.size + REPEATS.size;
      assert.deepEqual([done.status, done.imported, done.skipped], ['completed', 60_000 - skippedRows, skippedRows]);
      const skipped = await other.request('GET', `/v1/customers/imports/${first.body.id}/failures.csv`, { token: lead });
      const expected = [...BAD, ...REPEATS.keys()]
        .sort((a, b) => a - b)
        .map((i) => {
          const address = `long${REPEATS.get(i) ?? i}@gone.example.com`;
          return `${i + 2},${address},${BAD.has(i) ? 'Name is missing.' : `A customer with the email ${address} already exists.`}\r\n`;
        })
        .join('');
      assert.equal(skipped.text, `line,email,reason\r\n${expected}`);
      const found = await other.request('GET', '/v1/customers?search=gone.example.com&limit=1', { token: lead });
      assert.equal(found.body.total, 60_000 - skippedRows, 'every stored row is in the search index');
      for (const [repeat, first] of REPEATS) {
        const list = await other.request('GET', `/v1/customers?search=${encodeURIComponent(`long${first}@gone.example.com`)}`, { token: lead });
        assert.deepEqual(list.body.items.map((c: { name: string }) => c.name), [`long ${first}`], `line ${repeat + 2} repeats line ${first + 2}`);
      }
      assert.equal((await other.request('GET', '/health')).status, 200);
    } finally {
      await other.close();
    }
  });
});

describe('a CSV job with onExisting and columns', () => {
  const header = 'name,email,country,orders,amount,last_activity,status';

  test('onExisting=update replaces stored customers: updated counted, aggregates, a segment count and search exact afterwards', async () => {
    const [ana, ben] = [
      customerRow({ name: 'Ana Oldjob', country: 'Ghana', totalTransactions: 8, totalAmountSpent: 300, status: 'active' }),
      customerRow({ name: 'Ben Keep', country: 'Ghana', totalTransactions: 1, totalAmountSpent: 5, status: 'inactive' }),
    ];
    await importRows(service, token, [ana, ben]);
    const GHANA_BIG = [{ field: 'country', operator: 'eq', value: 'Ghana' }, { field: 'totalTransactions', operator: 'gte', value: 5 }];
    const countBefore = await segmentCount(service, token, GHANA_BIG);
    const newcomer = email('newcomer');
    const csv = [
      header,
      `Ana Newjob,${ana.email.toUpperCase()},Ghana,20,12.5,2026-10-01,churned`,
      `Ben Keep,${ben.email},Ghana,9,5,2026-11-01,inactive`,
      `Newcomer,${newcomer},Ghana,5,1,2026-11-01,active`,
      `Ana Again,${ana.email},Ghana,1,1,2026-11-01,active`,
      `Bad Amount,${ben.email},Ghana,1,-3,2026-11-01,active`,
    ].join('\n');
    const { job } = await runJob(csv, '?onExisting=update');
    assert.equal(job.status, 'completed');
    assert.deepEqual([job.onExisting, job.rowsRead, job.imported, job.updated, job.skipped], ['update', 5, 1, 2, 2]);
    assert.equal(
      await failuresCsv(job.id),
      'line,email,reason\r\n' +
        `5,${ana.email},The email ${ana.email} is on an earlier row of this file; only that row is imported.\r\n` +
        `6,${ben.email},Amount spent must be a number of 0 or more.\r\n`,
    );
    const updatedAna = await customerByEmail(ana.email);
    assert.deepEqual([updatedAna.name, updatedAna.totalTransactions, updatedAna.totalAmountSpent, updatedAna.status], ['Ana Newjob', 20, 12.5, 'churned']);
    // Ana stays in the segment; Ben (9 orders now) and the newcomer join it.
    assert.equal(await segmentCount(service, token, GHANA_BIG), countBefore + 2);
    await assertAggregatesExact(service, token, 'after an update job');
    assert.deepEqual(await searchNames(service, token, 'Newjob'), ['Ana Newjob']);
    assert.deepEqual(await searchNames(service, token, 'Oldjob'), []);
  });

  test('without onExisting a job skips stored emails, reports them and changes nothing', async () => {
    const kept = customerRow({ name: 'Kept Byjob', totalAmountSpent: 77 });
    await importRows(service, token, [kept]);
    const before = await customerByEmail(kept.email);
    const { job } = await runJob(`${header}\nChanged Byjob,${kept.email},Spain,3,1,2026-11-01,churned\n`);
    assert.deepEqual([job.onExisting, job.imported, job.updated, job.skipped], ['skip', 0, 0, 1]);
    assert.equal(await failuresCsv(job.id), `line,email,reason\r\n2,${kept.email},A customer with the email ${kept.email} already exists.\r\n`);
    assert.deepEqual(await customerByEmail(kept.email), before);
  });

  test('an onExisting other than skip or update is 400 naming onExisting, and no job is made', async () => {
    const total = (await service.request('GET', '/v1/customers/imports', { token })).body.total;
    assertProblem(await upload(`email\n${email('x')}\n`, '?onExisting=merge'), 400, 'validation_failed', ['onExisting']);
    assert.equal((await service.request('GET', '/v1/customers/imports', { token })).body.total, total);
  });

  test('a columns mapping is applied before the built-in names: mapped headers read, null ignored, the alias left over ignored', async () => {
    const [mapped, other] = [email('mapped'), email('other')];
    const csv = `Contact, Client ,Pays,Notes,email,Spent (EUR)\n${mapped},Mapped Person,Italy,12,${other},19.90\n`;
    const columns = encodeURIComponent(JSON.stringify({ contact: 'email', CLIENT: 'name', Pays: 'country', notes: null, 'Spent (EUR)': 'totalAmountSpent' }));
    const csvWithRest = csv.replace('\n', ',orders,last_activity,status\n').replace('19.90\n', '19.90,4,2026-11-01,active\n');
    const { job } = await runJob(csvWithRest, `?columns=${columns}`);
    assert.deepEqual([job.imported, job.skipped], [1, 0]);
    assert.deepEqual(job.ignoredColumns, ['Notes', 'email']);
    const stored = await customerByEmail(mapped);
    assert.deepEqual([stored.name, stored.country, stored.totalAmountSpent, stored.totalTransactions], ['Mapped Person', 'Italy', 19.9, 4]);
    assert.equal(await customerByEmail(other), undefined);
  });

  test('headers named like built-in JavaScript properties are ignored columns, and a "__proto__" key maps its header', async () => {
    const plain = email('builtin');
    const { job } = await runJob(`email,constructor,toString,__proto__,valueOf\n${plain},a,b,c,d\n`);
    assert.deepEqual(job.ignoredColumns, ['constructor', 'toString', '__proto__', 'valueOf']);
    assert.deepEqual([job.imported, job.skipped], [0, 1]); // the row lacks the other fields: skipped, not stored
    const mapped = email('proto');
    const csv = `__proto__,name,country,orders,amount,last_activity,status\n${mapped},Proto Person,Peru,1,1,2026-11-01,active\n`;
    const proto = await runJob(csv, `?columns=${encodeURIComponent('{"__proto__":"email"}')}`);
    assert.deepEqual([proto.job.imported, proto.job.skipped, proto.job.ignoredColumns], [1, 0, []]);
    assert.equal((await customerByEmail(mapped)).name, 'Proto Person');
  });

  test('each invalid columns value is 400 validation_failed naming columns, and no job is made', async () => {
    const total = (await service.request('GET', '/v1/customers/imports', { token })).body.total;
    const csv = `Mail,E-mail,Name\n${email('cols')},${email('cols')},Someone\n`;
    for (const columns of [
      'not json',
      '["email"]',
      '"email"',
      'null',
      '{"Mail":"e-mail"}',
      '{"Mail":7}',
      '{"Nowhere":"email"}',
      '{"Mail":"email","E-mail":"email"}',
      '{"Mail":"email","MAIL":null}',
      '{"E-mail":null," e-mail ":"email"}',
    ]) {
      const reply = await upload(csv, `?columns=${encodeURIComponent(columns)}`);
      assertProblem(reply, 400, 'validation_failed', ['columns']);
    }
    assert.equal((await service.request('GET', '/v1/customers/imports', { token })).body.total, total);
  });

  test('the reasons of a CSV job are those of the JSON import for the same bad values', async () => {
    const bad = [
      { name: '', country: 'France', totalTransactions: '1', totalAmountSpent: '-5', lastActivityDate: '2026-11-01', status: 'active' },
      { name: 'N', country: 'F', totalTransactions: '1.5', totalAmountSpent: 'lots', lastActivityDate: '2026-02-30', status: 'vip' },
      { name: 'N', country: 'France', totalTransactions: 'many', totalAmountSpent: '1', lastActivityDate: '2027-01-01', status: 'active' },
    ].map((row) => ({ ...row, email: email('reason') }));
    const numeric = (cell: string) => (/^-?\d+(\.\d+)?$/.test(cell) ? Number(cell) : cell);
    const json = await service.request('POST', '/v1/customers/import', {
      token,
      body: { customers: bad.map((r) => ({ ...r, name: r.name || undefined, totalTransactions: numeric(r.totalTransactions), totalAmountSpent: numeric(r.totalAmountSpent) })) },
    });
    assert.equal(json.status, 200, json.text);
    const csv = `name,email,country,orders,amount,last_activity,status\n${bad.map((r) => [r.name, r.email, r.country, r.totalTransactions, r.totalAmountSpent, r.lastActivityDate, r.status].join(',')).join('\n')}\n`;
    const { job } = await runJob(csv);
    const lines = (await failuresCsv(job.id)).trim().split('\r\n').slice(1);
    const jsonReasons = json.body.failures.map((f: { reason: string }) => f.reason);
    assert.deepEqual(jsonReasons, [
      'Name is missing. Amount spent must be a number of 0 or more.',
      'Country must be 2 to 80 characters, without control characters. Number of transactions must be a whole number of 0 or more. ' +
        'Amount spent must be a number of 0 or more. Last activity date must be a real date, such as 2026-09-30 or 2026-09-30T14:00:00Z. ' +
        'Status must be active, inactive or churned.',
      'Number of transactions must be a whole number of 0 or more. Last activity date must not be more than one day in the future.',
    ]);
    assert.deepEqual(lines.map((line) => line.slice(line.indexOf(',', line.indexOf(',') + 1) + 1).replace(/^"|"$/g, '')), jsonReasons);
    for (const reason of jsonReasons) assert.doesNotMatch(reason, /totalAmountSpent|totalTransactions|lastActivityDate|Invalid /);
  });

  test('failures.csv reports a record spanning several lines at its first line, after quoted line breaks in CRLF and LF', async () => {
    const [a, b, c, d] = [email('multi'), email('multi'), email('multi'), email('multi')];
    const csv =
      'name,email,country,orders,amount,last_activity,status,notes\r\n' + // line 1
      `Two,${a},France,1,1,2026-11-01,active,"two\r\nlines"\r\n` + // lines 2-3, stored
      '\r\n' + // line 4, empty
      `Three,${b},France,1,-1,2026-11-01,active,"three\r\nline\nnote"\r\n` + // lines 5-7, skipped at 5
      `Plain,${c},France,x,1,2026-11-01,active,\r\n` + // line 8, skipped
      `Ok,${d},France,1,1,2026-11-01,"act\r\nive",\r\n`; // lines 9-10, skipped at 9
    const { job } = await runJob(csv);
    assert.deepEqual([job.imported, job.skipped], [1, 3]);
    assert.equal(
      await failuresCsv(job.id),
      'line,email,reason\r\n' +
        `5,${b},Amount spent must be a number of 0 or more.\r\n` +
        `8,${c},Number of transactions must be a whole number of 0 or more.\r\n` +
        `9,${d},"Status must be active, inactive or churned."\r\n`,
    );
  });
});
