// customers.imports.preview (product.md section 14, "Look before importing"): how each header will be read, the first
// 10 records as they would be stored, the problems among them in the words of failures.csv; only the first 64 KB are
// read, a record they cut is left out; nothing is stored; 413, 400 without an email column or with a bad mapping.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
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
async function storedCounts() {
  return [await service.queryValue('SELECT count(*) FROM customers'), await service.queryValue('SELECT count(*) FROM import_jobs')];
}

describe('a CSV preview', () => {
  test('answers how each header is read, the first records as stored and their problems, and stores nothing', async () => {
    const taken = customerRow({ name: 'Already Here' });
    await importRows(service, token, [taken]);
    const before = await storedCounts();
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
    assert.deepEqual(await storedCounts(), before);
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
    const before = await storedCounts();
    const noEmail = await preview('name,country\nAda,France\n');
    assertProblem(noEmail, 400, 'validation_failed', ['body']);
    assert.match(noEmail.body.detail, /no email column \(it names name, country\)/);
    assertProblem(await preview(`email\n${'a'.repeat(MAX_BYTES)}\n`), 413, 'payload_too_large');
    assertProblem(await preview('email\na@b.com\n', '', null), 401, 'unauthenticated');
    const lead = await service.tokenFor('marketing_lead');
    assert.equal((await preview(`email\n${email('lead')}\n`, '', lead)).status, 200);
    assert.deepEqual(await storedCounts(), before);
  });
});

/** Reads HTTP/1.1 answers with a Content-Length off a raw connection, one per `next()`. */
function httpReplies(socket: Socket) {
  let buffered = Buffer.alloc(0);
  let wake: () => void = () => {};
  socket.on('data', (data: Buffer) => {
    buffered = Buffer.concat([buffered, data]);
    wake();
  });
  return {
    async next(): Promise<{ head: string; body: string }> {
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        const head = end < 0 ? '' : buffered.subarray(0, end).toString('latin1');
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? NaN);
        if (end >= 0 && buffered.length >= end + 4 + length) {
          const body = buffered.subarray(end + 4, end + 4 + length).toString('utf8');
          buffered = buffered.subarray(end + 4 + length);
          return { head, body };
        }
        await new Promise<void>((resolve, reject) => {
          wake = resolve;
          socket.once('close', () => reject(new Error('the connection closed before a whole answer')));
        });
      }
    },
  };
}

describe('a CSV preview and odd column names', () => {
  test('headers named like built-in JavaScript properties are ordinary headers, and "__proto__" is an ordinary columns key', async () => {
    const reply = await preview(`email,constructor,toString,__proto__,valueOf\n${email('proto')},a,b,c,d\n`);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body.columns, [
      { header: 'email', field: 'email' },
      { header: 'constructor', field: null },
      { header: 'toString', field: null },
      { header: '__proto__', field: null },
      { header: 'valueOf', field: null },
    ]);
    const address = email('proto');
    const csv = `__proto__,Name,country,orders,amount,last_activity,status\n${address},Proto Person,Peru,1,1,2026-11-01,active\n`;
    const mapped = await preview(csv, `?columns=${encodeURIComponent('{"__proto__":"email"}')}`);
    assert.equal(mapped.status, 200, mapped.text);
    assert.deepEqual(mapped.body.columns.slice(0, 2), [
      { header: '__proto__', field: 'email' },
      { header: 'Name', field: 'name' },
    ]);
    assert.deepEqual(mapped.body.rows.map((r: { email: string; name: string }) => [r.email, r.name]), [[address, 'Proto Person']]);
    const missing = await preview(`email\n${email('proto')}\n`, `?columns=${encodeURIComponent('{"__proto__":null}')}`);
    assertProblem(missing, 400, 'validation_failed', ['columns']);
    assert.equal(missing.body.errors[0].message, 'No column of the file is named "__proto__".');
  });

  test('two columns keys that differ only in case or surrounding spaces are 400 naming columns', async () => {
    const csv = `Mail,Name\n${email('twice')},Twice\n`;
    for (const [columns, named] of [
      ['{"Mail":"email","MAIL":null}', '"Mail" and "MAIL"'],
      ['{" Mail":"email","Mail ":"email"}', '"Mail" and "Mail"'],
    ] as const) {
      const reply = await preview(csv, `?columns=${encodeURIComponent(columns)}`);
      assertProblem(reply, 400, 'validation_failed', ['columns']);
      assert.equal(reply.body.errors[0].message, `${named} name the same header: keep one of them.`);
    }
  });

  test('a columns key that names no header is quoted as written (trimmed), an empty one is called an empty name', async () => {
    const csv = `Mail,Name\n${email('quoted')},Quoted\n`;
    for (const [columns, message] of [
      ['{"  No Such Header ":"email"}', 'No column of the file is named "No Such Header".'],
      ['{"":null,"Mail":"email"}', 'No column of the file has an empty name.'],
      ['{"":null,"Nope":"email","Zip":null}', 'No column of the file is named "Nope", "Zip", and none has an empty name.'],
    ] as const) {
      const reply = await preview(csv, `?columns=${encodeURIComponent(columns)}`);
      assertProblem(reply, 400, 'validation_failed', ['columns']);
      assert.equal(reply.body.errors[0].message, message);
    }
  });

  test('the OpenAPI document describes the columns parameter of the job and the preview, with an example', async () => {
    const doc = (await service.request('GET', '/v1/openapi.json')).body;
    for (const path of ['/v1/customers/imports', '/v1/customers/imports/preview']) {
      const columns = doc.paths[path].post.parameters.find((p: { name: string }) => p.name === 'columns');
      assert.equal(columns.in, 'query', path);
      assert.equal(columns.required, false, path);
      assert.equal(columns.schema.type, 'string', path);
      assert.match(columns.schema.description, /^How to read some columns: a JSON object from header names .*such as \{"Mail":"email","Notes":null\}/, path);
      assert.equal(columns.schema.examples[0], '{"Mail":"email","Notes":null}', path);
    }
  });

  test('GET on the preview path is 405 with Allow: POST, as the document says, not a job id', async () => {
    const reply = await service.request('GET', '/v1/customers/imports/preview', { token });
    assertProblem(reply, 405, 'method_not_allowed');
    assert.equal(reply.headers.get('allow'), 'POST');
    const doc = (await service.request('GET', '/v1/openapi.json')).body;
    assert.deepEqual(Object.keys(doc.paths['/v1/customers/imports/preview']), ['post']);
    assert.equal(doc['x-method-not-allowed'].allow['/v1/customers/imports/preview'], 'POST');
  });

  test('answers after the first 64 KB of a body of declared length, discards the rest, and the connection carries the next request', async () => {
    const rows = Array.from({ length: 1000 }, (_, i) => `${email('stream')},Streamed ${i},Peru,1,1,2026-11-01,active\n`).join('');
    const first = Buffer.from(`email,name,country,orders,amount,last_activity,status\n${rows}`);
    const rest = Buffer.from(rows.slice(0, 20_000));
    assert.ok(first.length > 65_536 + 1 && first.length + rest.length < MAX_BYTES, String(first.length));
    const { port } = new URL(service.url);
    const socket = connect(Number(port), '127.0.0.1');
    try {
      const replies = httpReplies(socket);
      socket.write(
        `POST /v1/customers/imports/preview HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${token}\r\n` +
          `Content-Type: text/csv\r\nContent-Length: ${first.length + rest.length}\r\n\r\n`,
      );
      socket.write(first);
      // The body is not ended: the answer comes before the rest is sent.
      const answer = await replies.next();
      assert.match(answer.head, /^HTTP\/1\.1 200 /);
      assert.doesNotMatch(answer.head, /connection: close/i);
      assert.deepEqual(JSON.parse(answer.body).rows.map((r: { line: number }) => r.line), [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      socket.write(rest); // the rest, which the service discards
      socket.write('GET /health HTTP/1.1\r\nHost: test\r\n\r\n');
      const health = await replies.next();
      assert.match(health.head, /^HTTP\/1\.1 200 /);
      assert.deepEqual(JSON.parse(health.body), { status: 'ok' });
    } finally {
      socket.destroy();
    }
    const declared = await service.request('POST', '/v1/customers/imports/preview', {
      token,
      raw: `email\n${'a'.repeat(MAX_BYTES)}\n`,
      headers: { 'content-type': 'text/csv' },
    });
    assertProblem(declared, 413, 'payload_too_large');
  });

  test('a body of undeclared length is read to its end: over IMPORT_MAX_BYTES it is 413, within it the preview', async () => {
    const rows = Array.from({ length: 1000 }, (_, i) => `${email('chunked')},Chunked ${i},Peru,1,1,2026-11-01,active\n`).join('');
    const first = Buffer.from(`email,name,country,orders,amount,last_activity,status\n${rows}`);
    const chunk = (bytes: Buffer) => Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]);
    const send = async (rest: Buffer) => {
      const { port } = new URL(service.url);
      const socket = connect(Number(port), '127.0.0.1');
      try {
        const replies = httpReplies(socket);
        socket.write(
          `POST /v1/customers/imports/preview HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${token}\r\n` +
            'Content-Type: text/csv\r\nTransfer-Encoding: chunked\r\n\r\n',
        );
        socket.write(Buffer.concat([chunk(first), chunk(rest), Buffer.from('0\r\n\r\n')]));
        return await replies.next();
      } finally {
        socket.destroy();
      }
    };
    const within = await send(Buffer.from(rows.slice(0, 20_000)));
    assert.match(within.head, /^HTTP\/1\.1 200 /);
    assert.equal(JSON.parse(within.body).rows.length, 10);
    const over = await send(Buffer.alloc(MAX_BYTES, 'a'));
    assert.match(over.head, /^HTTP\/1\.1 413 /);
    assert.equal(JSON.parse(over.body).code, 'payload_too_large');
  });
});
