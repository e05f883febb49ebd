// CSV exports (product.md section 10): GET /v1/segments/{id}/customers.csv and GET /v1/campaigns/{id}/audience.csv
// stream the matching customers in id order as text/csv attachments, in our columns or listmonk's import format, with
// RFC 4180 quoting and spreadsheet formulas defused; an approved campaign exports the conditions frozen at approval;
// a download read slowly while customers are imported, edited and deleted gives each customer at most once, in order.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import type { Condition } from '../src/domain/segments.ts';
import { csvCell } from '../src/http/csv-download.ts';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { briefFor, createSegment, generateOk, moveCampaignTo, NO_RATE_LIMIT } from './support/campaigns.ts';
import { createCustomer, customerRow, importRows, type CustomerRow } from './support/customers.ts';
import { openDownload } from './support/downloads.ts';

const HEADER = 'email,name,country,status,total_amount_spent,total_transactions,last_activity_date\r\n';

let service: TestService;
let marketer: string;
let lead: string;
let admin: string;

before(async () => {
  service = await startService({ env: NO_RATE_LIMIT });
  marketer = await service.tokenFor('lifecycle_marketer');
  lead = await service.tokenFor('marketing_lead');
  admin = await service.tokenFor('admin');
});
after(() => service.close());

/** Downloads `path` whole: status, headers and the exact bytes. */
async function download(path: string, token = marketer) {
  const file = await openDownload(service.url, path, token);
  return { status: file.status, headers: file.headers, bytes: await file.rest() };
}

/** Asserts a 200 CSV attachment named `fileName` whose bytes are exactly `text` in UTF-8. */
function assertCsv(reply: Awaited<ReturnType<typeof download>>, fileName: string, text: string): void {
  assert.equal(reply.status, 200, reply.bytes.toString());
  assert.equal(reply.headers['content-type'], 'text/csv; charset=utf-8');
  assert.equal(reply.headers['content-disposition'], `attachment; filename="${fileName}"`);
  assert.equal(reply.headers['cache-control'], 'no-store');
  assert.equal(reply.headers['x-api-version'], 'v1');
  assert.ok(reply.headers['x-trace-id']);
  assert.equal(reply.bytes.toString('utf8'), text);
  assert.ok(reply.bytes.equals(Buffer.from(text, 'utf8')));
}

/** GETs an export that is expected to fail, in the shape assertProblem reads. */
const problemAt = (path: string, token = marketer) => service.request('GET', path, { token });

const inCountry = (country: string): Condition[] => [{ field: 'country', operator: 'eq', value: country }];

/** Creates a draft for a segment on `country`, approves it, and returns the segment and the campaign. */
async function approvedFor(country: string) {
  const segment = await createSegment(service, marketer, `Customers in ${country}`, inCountry(country));
  const campaign = await generateOk(service, marketer, briefFor(segment.id));
  await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
  return { segment, campaign };
}

describe('the columns', () => {
  test('the header, then one line per matching customer in id order, values as the API shows them', async () => {
    await createCustomer(service, marketer, customerRow({ name: 'Zed Last', email: 'zed@cols.example.com', country: 'Columbia Land', totalTransactions: 41, totalAmountSpent: 1234.56, lastActivityDate: '2025-12-31T23:59:59.999Z', status: 'churned' }));
    await createCustomer(service, marketer, customerRow({ name: 'Ada First', email: 'ADA@Cols.Example.com', country: 'columbia land ', totalTransactions: 3, totalAmountSpent: 12.5, lastActivityDate: '2026-09-30', status: 'active' }));
    await createCustomer(service, marketer, customerRow({ name: 'Not Here', email: 'elsewhere@cols.example.com', country: 'Elsewhere' }));
    await createCustomer(service, marketer, customerRow({ name: 'Bob Zero', email: 'bob@cols.example.com', country: 'COLUMBIA LAND', totalTransactions: 0, totalAmountSpent: 0, lastActivityDate: '2026-10-01T14:30:00+02:00', status: 'inactive' }));
    const segment = await createSegment(service, marketer, 'Columbia Land, everyone!', inCountry('Columbia Land'));

    assertCsv(
      await download(`/v1/segments/${segment.id}/customers.csv`),
      'segment-columbia-land-everyone-customers.csv',
      HEADER +
        'zed@cols.example.com,Zed Last,Columbia Land,churned,1234.56,41,2025-12-31T23:59:59.999Z\r\n' +
        'ada@cols.example.com,Ada First,columbia land,active,12.5,3,2026-09-30T00:00:00.000Z\r\n' +
        'bob@cols.example.com,Bob Zero,COLUMBIA LAND,inactive,0,0,2026-10-01T12:30:00.000Z\r\n',
    );
  });

  test('every kind of condition selects as the count does: amount, transactions and days since the last activity, at the time of the download', async () => {
    const country = 'Boundland';
    await createCustomer(service, marketer, customerRow({ email: 'b1@bounds.example.com', country, totalTransactions: 2, totalAmountSpent: 10.01, lastActivityDate: '2026-09-21T12:00:00Z' }));
    await createCustomer(service, marketer, customerRow({ email: 'b2@bounds.example.com', country, totalTransactions: 5, totalAmountSpent: 10, lastActivityDate: '2026-11-10T12:00:00Z' }));
    await createCustomer(service, marketer, customerRow({ email: 'b3@bounds.example.com', country, totalTransactions: 9, totalAmountSpent: 99.99, lastActivityDate: '2026-11-19T12:00:00Z' }));
    const emails = async (conditions: Condition[]) => {
      const segment = await createSegment(service, marketer, 'Bounds', [...inCountry(country), ...conditions]);
      const reply = await download(`/v1/segments/${segment.id}/customers.csv`);
      assert.equal(reply.status, 200);
      const rows = parse(reply.bytes, { columns: true }) as { email: string }[];
      assert.equal(rows.length, segment.matchCount);
      return rows.map((row) => row.email.slice(0, 2));
    };
    assert.deepEqual(await emails([{ field: 'totalAmountSpent', operator: 'gt', value: 10 }]), ['b1', 'b3']);
    assert.deepEqual(await emails([{ field: 'totalTransactions', operator: 'gte', value: 5 }, { field: 'totalTransactions', operator: 'lt', value: 9 }]), ['b2']);
    // Now is 2026-11-20T12:00Z: b1 was last active 60 days ago exactly.
    const recent = await createSegment(service, marketer, 'Recent', [...inCountry(country), { field: 'lastActivityDays', operator: 'lte', value: 60 }]);
    const lines = async () => (await download(`/v1/segments/${recent.id}/customers.csv`)).bytes.toString().split('\r\n').length - 2;
    assert.equal(await lines(), 3);
    service.clock.advance(1);
    try {
      assert.equal(await lines(), 2); // b1 is now more than 60 days back
    } finally {
      service.clock.advance(-1);
    }
  });

  test('a segment no customer can match (two countries) is the header alone', async () => {
    await createCustomer(service, marketer, customerRow({ email: 'only@nobody.example.com', country: 'Nobodyland' }));
    const segment = await createSegment(service, marketer, 'Nobody', [...inCountry('Nobodyland'), ...inCountry('Somewhere Else')]);
    assert.equal(segment.matchCount, 0);
    assertCsv(await download(`/v1/segments/${segment.id}/customers.csv`), 'segment-nobody-customers.csv', HEADER);
  });

  test('a segment whose name has no letters or digits is named by its id; HEAD answers the headers alone', async () => {
    const segment = await createSegment(service, marketer, '¿¡ !?', inCountry('Headland'));
    assertCsv(await download(`/v1/segments/${segment.id}/customers.csv`), `segment-${segment.id}-customers.csv`, HEADER);
    const head = await service.request('HEAD', `/v1/segments/${segment.id}/customers.csv`, { token: marketer });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-disposition'), `attachment; filename="segment-${segment.id}-customers.csv"`);
    assert.equal(head.text, '');
  });
});

describe('quoting and formulas', () => {
  test('commas, quotes and non-ASCII text: RFC 4180 quoting, UTF-8 bytes', async () => {
    const country = 'Korea, Republic of';
    await createCustomer(service, marketer, customerRow({ name: 'Smith, Jane', email: 'jane@quotes.example.com', country }));
    await createCustomer(service, marketer, customerRow({ name: 'The "Boss"', email: 'boss@quotes.example.com', country }));
    await createCustomer(service, marketer, customerRow({ name: 'Zoë 😀 Ünïcödé', email: "o'neil@quotes.example.com", country }));
    const segment = await createSegment(service, marketer, 'Quotes', inCountry(country));
    const reply = await download(`/v1/segments/${segment.id}/customers.csv`);
    const rest = 'active,10,1,2026-11-01T00:00:00.000Z\r\n';
    assertCsv(
      reply,
      'segment-quotes-customers.csv',
      HEADER +
        `jane@quotes.example.com,"Smith, Jane","Korea, Republic of",${rest}` +
        `boss@quotes.example.com,"The ""Boss""","Korea, Republic of",${rest}` +
        `o'neil@quotes.example.com,Zoë 😀 Ünïcödé,"Korea, Republic of",${rest}`,
    );
    assert.ok(reply.bytes.includes(Buffer.from([0xf0, 0x9f, 0x98, 0x80]))); // 😀 as UTF-8
    const rows = parse(reply.bytes, { columns: true }) as { name: string; country: string }[];
    assert.deepEqual(rows.map((r) => r.name), ['Smith, Jane', 'The "Boss"', 'Zoë 😀 Ünïcödé']);
    assert.deepEqual(rows.map((r) => r.country), [country, country, country]);
  });

  test('names and emails starting with = + - @ get a leading quote, quoted too when they hold a comma or a quote', async () => {
    const country = 'Formulaland';
    const names = ['=SUM(A1:A2)', '+1 555 0100', '-10% off', '@home', '=HYPERLINK("http://x.example","y")', 'Safe = fine'];
    const emails = ['+plus@formula.example.com', '-minus@formula.example.com', 'at@formula.example.com', 'a@formula.example.com', 'b@formula.example.com', 'c@formula.example.com'];
    for (const [i, name] of names.entries()) await createCustomer(service, marketer, customerRow({ name, email: emails[i], country }));
    const segment = await createSegment(service, marketer, 'Formulas', inCountry(country));
    const rest = 'Formulaland,active,10,1,2026-11-01T00:00:00.000Z\r\n';
    assertCsv(
      await download(`/v1/segments/${segment.id}/customers.csv`),
      'segment-formulas-customers.csv',
      HEADER +
        `'+plus@formula.example.com,'=SUM(A1:A2),${rest}` +
        `'-minus@formula.example.com,'+1 555 0100,${rest}` +
        `at@formula.example.com,'-10% off,${rest}` +
        `a@formula.example.com,'@home,${rest}` +
        `b@formula.example.com,"'=HYPERLINK(""http://x.example"",""y"")",${rest}` +
        `c@formula.example.com,Safe = fine,${rest}`,
    );
  });

  test('the API refuses names with tab, carriage return or line feed, so the guard for them is shown on names put in the table directly', async () => {
    const country = 'Controlland';
    const refused = await service.request('POST', '/v1/customers', { token: marketer, body: customerRow({ name: 'Tab\tinside', country }) });
    assertProblem(refused, 400, 'validation_failed', ['name']);
    const ids: string[] = [];
    for (const email of ['tab@control.example.com', 'cr@control.example.com', 'lf@control.example.com']) {
      ids.push((await createCustomer(service, marketer, customerRow({ email, country }))).id);
    }
    // As another program sharing the database could have left them.
    for (const [i, name] of ['\tTabbed', '\rCarriage', 'Line\nbreak'].entries()) await service.query('UPDATE customers SET name = ? WHERE id = ?', name, Number(ids[i]));
    const segment = await createSegment(service, marketer, 'Control', inCountry(country));
    const rest = 'Controlland,active,10,1,2026-11-01T00:00:00.000Z\r\n';
    assertCsv(
      await download(`/v1/segments/${segment.id}/customers.csv`),
      'segment-control-customers.csv',
      HEADER + `tab@control.example.com,'\tTabbed,${rest}` + `cr@control.example.com,"'\rCarriage",${rest}` + `lf@control.example.com,"Line\nbreak",${rest}`,
    );
  });

  test('csvCell: every formula start, quoting, and numbers and empty values as they are', () => {
    assert.deepEqual(
      ['=1', '+1', '-1', '@1', '\t1', '\r1', 'a,b', 'a"b', 'a\nb', 'a\rb', 'plain', "'quoted"].map(csvCell),
      ["'=1", "'+1", "'-1", "'@1", "'\t1", `"'\r1"`, '"a,b"', '"a""b"', '"a\nb"', '"a\rb"', 'plain', "'quoted"],
    );
    assert.deepEqual([-1, 0, 12.5, null, undefined].map(csvCell), ['-1', '0', '12.5', '', '']);
  });
});

describe('the other CSV download', () => {
  test('failures.csv of an import job still comes line by line, quoted and defused, through the same writer', async () => {
    const csv =
      'email,name,country,total_amount_spent,total_transactions,last_activity_date,status\r\n' +
      'ok@failures.example.com,Ok,France,1,1,2026-11-01,active\r\n' +
      '=bad,Bad,France,1,1,2026-11-01,active\r\n' +
      'noname@failures.example.com,,France,1,1,2026-11-01,active\r\n';
    const accepted = await service.request('POST', '/v1/customers/imports', { token: marketer, raw: csv, headers: { 'content-type': 'text/csv' } });
    assert.equal(accepted.status, 202, accepted.text);
    await service.waitForLog((line) => line.msg === 'import job ended' && line.jobId === accepted.body.id);
    assertCsv(
      await download(`/v1/customers/imports/${accepted.body.id}/failures.csv`),
      `import-${accepted.body.id}-failures.csv`,
      'line,email,reason\r\n3,\'=bad,"Email must be a valid email address, such as ada@example.com."\r\n4,noname@failures.example.com,Name is missing.\r\n',
    );
  });
});

describe('the listmonk format', () => {
  test("?format=listmonk: email,name,attributes with the other fields as a JSON object, in listmonk's names", async () => {
    const country = 'Listland';
    await createCustomer(service, marketer, customerRow({ name: 'Ada, "the first"', email: 'ada@listmonk.example.com', country, totalTransactions: 3, totalAmountSpent: 12.5, lastActivityDate: '2026-09-30', status: 'active' }));
    await createCustomer(service, marketer, customerRow({ name: '=Bob', email: '-bob@listmonk.example.com', country, totalTransactions: 0, totalAmountSpent: 0, lastActivityDate: '2026-10-01', status: 'churned' }));
    const segment = await createSegment(service, marketer, 'Listmonk import', inCountry(country));
    const reply = await download(`/v1/segments/${segment.id}/customers.csv?format=listmonk`);
    assertCsv(
      reply,
      'segment-listmonk-import-customers-listmonk.csv',
      'email,name,attributes\r\n' +
        'ada@listmonk.example.com,"Ada, ""the first""","{""country"":""Listland"",""status"":""active"",""total_amount_spent"":12.5,""total_transactions"":3,""last_activity_date"":""2026-09-30T00:00:00.000Z""}"\r\n' +
        `'-bob@listmonk.example.com,'=Bob,"{""country"":""Listland"",""status"":""churned"",""total_amount_spent"":0,""total_transactions"":0,""last_activity_date"":""2026-10-01T00:00:00.000Z""}"\r\n`,
    );
    const rows = parse(reply.bytes, { columns: true }) as { email: string; name: string; attributes: string }[];
    assert.deepEqual(JSON.parse(rows[0]!.attributes), {
      country,
      status: 'active',
      total_amount_spent: 12.5,
      total_transactions: 3,
      last_activity_date: '2026-09-30T00:00:00.000Z',
    });
    assert.equal(rows[0]!.name, 'Ada, "the first"');
  });

  test('?format=plain is the default columns', async () => {
    await createCustomer(service, marketer, customerRow({ name: 'Plain', email: 'plain@format.example.com', country: 'Plainland' }));
    const segment = await createSegment(service, marketer, 'Plain', inCountry('Plainland'));
    assertCsv(
      await download(`/v1/segments/${segment.id}/customers.csv?format=plain`),
      'segment-plain-customers.csv',
      `${HEADER}plain@format.example.com,Plain,Plainland,active,10,1,2026-11-01T00:00:00.000Z\r\n`,
    );
  });

  test('an unknown, empty or repeated format is 400 validation_failed on format, for both exports', async () => {
    const segment = await createSegment(service, marketer, 'Formats', inCountry('Formatland'));
    const { campaign } = await approvedFor('Formatland');
    for (const path of [`/v1/segments/${segment.id}/customers.csv`, `/v1/campaigns/${campaign.id}/audience.csv`]) {
      for (const query of ['?format=xlsx', '?format=LISTMONK', '?format=', '?format=plain&format=listmonk']) {
        assertProblem(await problemAt(path + query), 400, 'validation_failed', ['format']);
      }
    }
  });
});

describe('a campaign audience', () => {
  test('an approved campaign exports the customers matching the conditions frozen at approval, even after the segment is edited or deleted', async () => {
    await createCustomer(service, marketer, customerRow({ name: 'Frozen One', email: 'one@frozen.example.com', country: 'Frostland' }));
    await createCustomer(service, marketer, customerRow({ name: 'Other Place', email: 'other@frozen.example.com', country: 'Thawland' }));
    await createCustomer(service, marketer, customerRow({ name: 'Frozen Two', email: 'two@frozen.example.com', country: 'Frostland' }));
    const { segment, campaign } = await approvedFor('Frostland');
    const path = `/v1/campaigns/${campaign.id}/audience.csv`;
    const fileName = `campaign-${campaign.id}-audience.csv`;
    const rest = 'active,10,1,2026-11-01T00:00:00.000Z\r\n';
    const frozen = `${HEADER}one@frozen.example.com,Frozen One,Frostland,${rest}two@frozen.example.com,Frozen Two,Frostland,${rest}`;
    assertCsv(await download(path), fileName, frozen);

    const edited = await service.request('PATCH', `/v1/segments/${segment.id}`, { token: marketer, body: { conditions: inCountry('Thawland') } });
    assert.equal(edited.status, 200, edited.text);
    assertCsv(await download(`/v1/segments/${segment.id}/customers.csv`), 'segment-customers-in-frostland-customers.csv', `${HEADER}other@frozen.example.com,Other Place,Thawland,${rest}`);
    assertCsv(await download(path), fileName, frozen);

    assert.equal((await service.request('DELETE', `/v1/segments/${segment.id}`, { token: marketer })).status, 200);
    assertCsv(await download(path), fileName, frozen);
    const attributes = '"{""country"":""Frostland"",""status"":""active"",""total_amount_spent"":10,""total_transactions"":1,""last_activity_date"":""2026-11-01T00:00:00.000Z""}"';
    assertCsv(
      await download(`${path}?format=listmonk`),
      `campaign-${campaign.id}-audience-listmonk.csv`,
      `email,name,attributes\r\none@frozen.example.com,Frozen One,${attributes}\r\ntwo@frozen.example.com,Frozen Two,${attributes}\r\n`,
    );
  });

  test('the frozen conditions are matched at the time of the download: a customer who matches them later is in, one deleted is out', async () => {
    const first = await createCustomer(service, marketer, customerRow({ name: 'Early', email: 'first@later.example.com', country: 'Laterland' }));
    const { campaign } = await approvedFor('Laterland');
    await createCustomer(service, marketer, customerRow({ name: 'Late', email: 'second@later.example.com', country: 'Laterland' }));
    assert.equal((await service.request('DELETE', `/v1/customers/${first.id}`, { token: lead })).status, 200);
    assertCsv(
      await download(`/v1/campaigns/${campaign.id}/audience.csv`),
      `campaign-${campaign.id}-audience.csv`,
      `${HEADER}second@later.example.com,Late,Laterland,active,10,1,2026-11-01T00:00:00.000Z\r\n`,
    );
  });

  test('a sent campaign still exports its audience', async () => {
    await createCustomer(service, marketer, customerRow({ name: 'Sent To', email: 'to@sent.example.com', country: 'Sentland' }));
    const { campaign } = await approvedFor('Sentland');
    const sent = await service.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: lead, body: { status: 'sent' } });
    assert.equal(sent.status, 200, sent.text);
    assertCsv(
      await download(`/v1/campaigns/${campaign.id}/audience.csv`),
      `campaign-${campaign.id}-audience.csv`,
      `${HEADER}to@sent.example.com,Sent To,Sentland,active,10,1,2026-11-01T00:00:00.000Z\r\n`,
    );
  });

  test('a draft and a campaign in review are 409 conflict naming the status; reopened to draft, 409 again', async () => {
    const segment = await createSegment(service, marketer, 'Reviewland', inCountry('Reviewland'));
    const campaign = await generateOk(service, marketer, briefFor(segment.id));
    const path = `/v1/campaigns/${campaign.id}/audience.csv`;
    const draft = await problemAt(path);
    assertProblem(draft, 409, 'conflict');
    assert.equal(draft.body.detail, 'The campaign is draft: its audience is frozen when it is approved, so only an approved or sent campaign has one to export.');
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'in_review');
    const review = await problemAt(path);
    assertProblem(review, 409, 'conflict');
    assert.match(review.body.detail, /^The campaign is in_review: its audience is frozen when it is approved/);
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
    assert.equal((await download(path)).status, 200);
    assert.equal((await service.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: lead, body: { status: 'draft' } })).status, 200);
    assertProblem(await problemAt(path), 409, 'conflict');
  });
});

describe('access', () => {
  test('an unknown segment or campaign is 404 not_found', async () => {
    assertProblem(await problemAt('/v1/segments/no-such-segment/customers.csv'), 404, 'not_found');
    assertProblem(await problemAt('/v1/campaigns/no-such-campaign/audience.csv'), 404, 'not_found');
    assertProblem(await problemAt('/v1/campaigns/no-such-campaign/audience.csv?format=listmonk'), 404, 'not_found');
  });

  test('without a token, 401 unauthenticated before anything else', async () => {
    assertProblem(await service.request('GET', '/v1/segments/no-such-segment/customers.csv'), 401, 'unauthenticated');
    assertProblem(await service.request('GET', '/v1/campaigns/no-such-campaign/audience.csv?format=xlsx'), 401, 'unauthenticated');
  });

  test('every role may export both', async () => {
    await createCustomer(service, marketer, customerRow({ name: 'Role Model', email: 'model@roles.example.com', country: 'Roleland' }));
    const { segment, campaign } = await approvedFor('Roleland');
    const text = `${HEADER}model@roles.example.com,Role Model,Roleland,active,10,1,2026-11-01T00:00:00.000Z\r\n`;
    for (const token of [marketer, lead, admin]) {
      assertCsv(await download(`/v1/segments/${segment.id}/customers.csv`, token), 'segment-customers-in-roleland-customers.csv', text);
      assertCsv(await download(`/v1/campaigns/${campaign.id}/audience.csv`, token), `campaign-${campaign.id}-audience.csv`, text);
    }
  });
});

describe('a download read slowly while customers change', () => {
  test('each customer at most once and in id order: changes before its turn show, deletions before it leave it out, additions are not included', async () => {
    // Lines of about 850 bytes: 20,000 of them are about 17 MB, several times what the socket buffers and one piece
    // of the file hold, so while the client does not read, the server waits with most customers still to read.
    const country = `Slowland ${'é'.repeat(70)}`;
    const count = 20_000;
    const row = (i: number, tag = 'slow'): CustomerRow =>
      customerRow({ name: `${'😀'.repeat(95)} ${i}`, email: `${tag}${String(i).padStart(5, '0')}.${'a'.repeat(180)}@slow.example.com`, country });
    const rows = Array.from({ length: count }, (_, i) => row(i));
    for (let i = 0; i < count; i += 1000) await importRows(service, marketer, rows.slice(i, i + 1000));
    // The ids, to check the order by: read from the table, since an import answers counts, not ids.
    const stored = await service.query<{ email: string; id: number }>('SELECT email, id FROM customers WHERE country_key = ?', country.toLowerCase());
    const idOf = new Map(stored.map((r) => [r.email, r.id]));
    assert.equal(idOf.size, count);
    const segment = await createSegment(service, marketer, 'Slow readers', inCountry(country));

    const file = await openDownload(service.url, `/v1/segments/${segment.id}/customers.csv`, marketer);
    assert.equal(file.status, 200);
    const received: Buffer[] = [];
    // Read until the first customer's line has come whole, then stop reading.
    while (Buffer.concat(received).toString().split('\r\n').length < 3) received.push((await file.next())!);

    // Meanwhile: the first customer (already sent) and the last 50 (not yet read) are deleted, a late one is renamed,
    // and 1000 new customers are imported.
    const idText = (i: number) => String(idOf.get(rows[i]!.email));
    const remove = async (i: number) => assert.equal((await service.request('DELETE', `/v1/customers/${idText(i)}`, { token: lead })).status, 200);
    await remove(0);
    for (let i = count - 50; i < count; i++) await remove(i);
    const renamed = await service.request('PATCH', `/v1/customers/${idText(count - 100)}`, { token: marketer, body: { name: 'Renamed meanwhile' } });
    assert.equal(renamed.status, 200, renamed.text);
    await importRows(service, marketer, Array.from({ length: 1000 }, (_, i) => row(i, 'new')));

    received.push(await file.rest());
    const lines = parse(Buffer.concat(received), { columns: true }) as { email: string; name: string }[];
    const ids = lines.map((line) => idOf.get(line.email));
    assert.ok(ids.every((id) => id !== undefined), 'only customers that existed at the start');
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i]! > ids[i - 1]!, `id ${ids[i]} after ${ids[i - 1]}: not once each in ascending order`);
    assert.deepEqual(
      lines.map((line) => line.email),
      rows.slice(0, count - 50).map((r) => r.email),
    );
    assert.equal(lines[count - 100]!.name, 'Renamed meanwhile');
    assert.equal(lines[0]!.name, rows[0]!.name);
  });
});
