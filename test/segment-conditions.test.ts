// The conditions of product.md section 14 (status eq, neq, in; country neq, in) on every path that takes conditions:
// preview, save, the segment's CSV export, the audience frozen at approval (and its CSV), the audience index kept
// current by customer writes (one by one, by CSV job, past 8,192 countries), validation of each new value shape,
// and the assistant's tools. Expected numbers come from the test's own reading of the conditions over known rows.
// The clock is TestClock's default, 2026-11-20T12:00:00.000Z.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import type { CustomerStatus } from '../src/domain/customers.ts';
import type { Condition } from '../src/domain/segments.ts';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { briefFor, createSegment, generateOk, moveCampaignTo, NO_RATE_LIMIT, withProvider } from './support/campaigns.ts';
import { call, confirmAction, openThread, streamTurn, toolResultsOf, toolsOf } from './support/chat.ts';
import { createCustomer, customerRow, importRows, type CustomerRow } from './support/customers.ts';
import { openDownload } from './support/downloads.ts';

const NOW_MS = Date.parse('2026-11-20T12:00:00.000Z');
const DAY_MS = 86_400_000;
const STATUSES: readonly CustomerStatus[] = ['active', 'inactive', 'churned'];
/** Spelled as a shop's export might: the same country in two cases, with spaces. */
const COUNTRIES = ['Kenya', ' KENYA', 'Nigeria', 'Ghana', 'France'];

const key = (country: string) => country.trim().toLowerCase();
const compare = (n: number, operator: string, value: number) =>
  operator === 'gt' ? n > value : operator === 'gte' ? n >= value : operator === 'lt' ? n < value : n <= value;

/** Whether the row meets the condition, read from product.md's words, independently of the service's code. */
function holds(row: CustomerRow, c: Condition): boolean {
  switch (c.field) {
    case 'country':
      if (c.operator === 'in') return c.value.some((v) => key(v) === key(row.country));
      return (key(row.country) === key(c.value)) === (c.operator === 'eq');
    case 'status':
      if (c.operator === 'in') return c.value.includes(row.status);
      return (row.status === c.value) === (c.operator === 'eq');
    case 'totalTransactions':
      return compare(row.totalTransactions, c.operator, c.value);
    case 'totalAmountSpent':
      return compare(row.totalAmountSpent, c.operator, c.value);
    case 'lastActivityDays':
      // gt N: last activity earlier than now minus N days, so more days back than N.
      return compare((NOW_MS - Date.parse(row.lastActivityDate)) / DAY_MS, c.operator, c.value);
  }
}

/** 60 customers over 5 spellings of 4 countries, 3 statuses, 0-6 purchases, amounts and days back that vary. */
const ROWS: CustomerRow[] = Array.from({ length: 60 }, (_, i) =>
  customerRow({
    country: COUNTRIES[i % 5]!,
    status: STATUSES[Math.floor(i / 5) % 3]!,
    totalTransactions: i % 7,
    totalAmountSpent: ((i * 37) % 600) + 0.5,
    lastActivityDate: new Date(NOW_MS - (i + 0.5) * DAY_MS).toISOString(),
  }),
);

const status = (operator: 'eq' | 'neq', value: CustomerStatus): Condition => ({ field: 'status', operator, value });
const statusIn = (...value: CustomerStatus[]): Condition => ({ field: 'status', operator: 'in', value });
const countryNot = (value: string): Condition => ({ field: 'country', operator: 'neq', value });
const countryIn = (...value: string[]): Condition => ({ field: 'country', operator: 'in', value });

/** Each new operator alone, with each other, with the numeric ones, and in contradictions (last four, none match). */
const SETS: { name: string; conditions: Condition[] }[] = [
  { name: 'status eq churned', conditions: [status('eq', 'churned')] },
  { name: 'status neq active', conditions: [status('neq', 'active')] },
  { name: 'status in inactive, churned', conditions: [statusIn('inactive', 'churned')] },
  { name: 'status in all three', conditions: [statusIn('churned', 'active', 'inactive'), { field: 'totalTransactions', operator: 'gte', value: 3 }] },
  { name: 'country neq kenya (spaced, capitals)', conditions: [countryNot('  KENYA ')] },
  { name: 'country in Kenya, nigeria, Atlantis', conditions: [countryIn('Kenya', 'nigeria', 'Atlantis')] },
  { name: 'country in minus neq', conditions: [countryIn('Kenya', 'Nigeria', 'Ghana'), countryNot('nigeria')] },
  { name: 'two country lists intersect', conditions: [countryIn('Kenya', 'Ghana'), countryIn('ghana', 'France')] },
  { name: 'status neq with country neq', conditions: [status('neq', 'churned'), countryNot('France')] },
  { name: 'status eq and neq together', conditions: [status('neq', 'inactive'), statusIn('active', 'inactive')] },
  {
    name: 'win-back: churned or inactive in two countries, with numbers',
    conditions: [countryIn('Kenya', 'Ghana'), statusIn('churned', 'inactive'), { field: 'totalTransactions', operator: 'gte', value: 2 }, { field: 'lastActivityDays', operator: 'gt', value: 10 }],
  },
  { name: 'status with amount', conditions: [status('eq', 'active'), { field: 'totalAmountSpent', operator: 'gt', value: 200 }] },
  { name: 'contradiction: two statuses', conditions: [status('eq', 'active'), status('eq', 'churned')] },
  { name: 'contradiction: status in minus neq', conditions: [statusIn('active'), status('neq', 'active')] },
  { name: 'contradiction: country in minus neq', conditions: [countryIn('Kenya'), countryNot('kenya')] },
  { name: 'contradiction: country eq outside the list', conditions: [{ field: 'country', operator: 'eq', value: 'Kenya' }, countryIn('Ghana')] },
];

/** The rows the conditions match, in id (import) order. */
const expected = (conditions: Condition[]) => ROWS.filter((row) => conditions.every((c) => holds(row, c)));

/** The emails of a CSV export (200), in the file's order. */
async function exportedEmails(service: TestService, token: string, path: string): Promise<string[]> {
  const file = await openDownload(service.url, path, token);
  const text = (await file.rest()).toString('utf8');
  assert.equal(file.status, 200, text);
  const records = parse(text, { columns: true }) as { email: string; status: string }[];
  return records.map((r) => r.email);
}

async function preview(service: TestService, token: string, conditions: unknown): Promise<number> {
  const reply = await service.request('POST', '/v1/segments/preview', { token, body: { conditions } });
  assert.equal(reply.status, 200, reply.text);
  return reply.body.matchCount;
}

describe('new conditions on every path, over known rows', () => {
  let service: TestService;
  let marketer: string;
  let lead: string;

  before(async () => {
    service = await startService({ env: NO_RATE_LIMIT });
    marketer = await service.tokenFor('lifecycle_marketer');
    lead = await service.tokenFor('marketing_lead');
    await importRows(service, marketer, ROWS);
  });
  after(() => service.close());

  test('the sets discriminate: each non-contradiction matches some customers but not all; the contradictions none', () => {
    for (const { name, conditions } of SETS) {
      const n = expected(conditions).length;
      if (name.startsWith('contradiction')) assert.equal(n, 0, name);
      else assert.ok(n > 0 && n < ROWS.length, `${name}: ${n}`);
    }
  });

  test('preview counts each set as the rows read by hand', async () => {
    for (const { name, conditions } of SETS) assert.equal(await preview(service, marketer, conditions), expected(conditions).length, name);
  });

  test('save stores that count as matchCount and the conditions as sent (country values trimmed); GET recounts the same', async () => {
    for (const { name, conditions } of SETS) {
      const saved = await createSegment(service, marketer, `Saved ${name}`.slice(0, 80), conditions);
      assert.equal(saved.matchCount, expected(conditions).length, name);
      const trimmed = conditions.map((c) => (c.field === 'country' ? { ...c, value: Array.isArray(c.value) ? c.value.map((v) => v.trim()) : c.value.trim() } : c));
      assert.deepEqual(saved.conditions.map(({ field, operator, value }) => ({ field, operator, value })), trimmed, name);
      const got = await service.request('GET', `/v1/segments/${saved.id}`, { token: marketer });
      assert.equal(got.body.matchCount, saved.matchCount, name);
    }
  });

  test("a segment's CSV export holds exactly the matching customers, in id order, with their statuses", async () => {
    for (const { name, conditions } of SETS) {
      const saved = await createSegment(service, marketer, `Export ${name}`.slice(0, 80), conditions);
      const emails = await exportedEmails(service, marketer, `/v1/segments/${saved.id}/customers.csv`);
      assert.deepEqual(emails, expected(conditions).map((r) => r.email), name);
    }
  });

  test('the audience frozen at approval has the conditions and their count, and its CSV the matching customers', async () => {
    for (const { name, conditions } of SETS) {
      const segment = await createSegment(service, marketer, `Approved ${name}`.slice(0, 80), conditions);
      const campaign = await generateOk(service, marketer, briefFor(segment.id));
      await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
      const audience = await service.request('GET', `/v1/campaigns/${campaign.id}/audience`, { token: marketer });
      assert.equal(audience.status, 200, audience.text);
      const count = expected(conditions).length;
      assert.deepEqual([audience.body.sizeAtApproval, audience.body.sizeNow], [count, count], name);
      assert.deepEqual(audience.body.conditions, segment.conditions, name);
      const emails = await exportedEmails(service, marketer, `/v1/campaigns/${campaign.id}/audience.csv`);
      assert.deepEqual(emails, expected(conditions).map((r) => r.email), name);
    }
  });

  test('the conditions in words name the statuses and countries', async () => {
    const conditions = [countryIn('Kenya', 'Ghana'), statusIn('churned', 'inactive'), countryNot('France'), status('neq', 'active')];
    const segment = await createSegment(service, marketer, 'In words', conditions);
    const campaign = await generateOk(service, marketer, briefFor(segment.id));
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
    const audience = await service.request('GET', `/v1/campaigns/${campaign.id}/audience`, { token: marketer });
    assert.equal(audience.body.description, 'customers in Kenya or Ghana who are churned or inactive, outside France, who are not active');
  });
});

describe('validation of the new values', () => {
  let service: TestService;
  let token: string;

  before(async () => {
    service = await startService({ env: NO_RATE_LIMIT });
    token = await service.tokenFor('lifecycle_marketer');
  });
  after(() => service.close());

  const valid: Condition = { field: 'totalTransactions', operator: 'gte', value: 0 };
  const countries = (n: number) => Array.from({ length: n }, (_, i) => `Country ${i + 1}`);
  const cases: [string, unknown, string[]][] = [
    ['a number for a status', { field: 'status', operator: 'eq', value: 1 }, ['conditions.1.value']],
    ['an unknown status', { field: 'status', operator: 'neq', value: 'lapsed' }, ['conditions.1.value']],
    ["'Active' in capitals", { field: 'status', operator: 'eq', value: 'Active' }, ['conditions.1.value']],
    ["'Active' in capitals in a list", { field: 'status', operator: 'in', value: ['active', 'Active'] }, ['conditions.1.value']],
    ['an empty status list', { field: 'status', operator: 'in', value: [] }, ['conditions.1.value']],
    ['4 statuses', { field: 'status', operator: 'in', value: ['active', 'inactive', 'churned', 'active'] }, ['conditions.1.value']],
    ['a repeated status', { field: 'status', operator: 'in', value: ['churned', 'churned'] }, ['conditions.1.value']],
    ['in with a status string', { field: 'status', operator: 'in', value: 'churned' }, ['conditions.1.value']],
    ['eq with a status array', { field: 'status', operator: 'eq', value: ['churned'] }, ['conditions.1.value']],
    ['51 countries', countryIn(...countries(51)), ['conditions.1.value']],
    ['a country repeated ignoring case and spaces', countryIn('Kenya', 'Ghana', ' kenya '), ['conditions.1.value']],
    ['a blank country in a list', countryIn('Kenya', '   '), ['conditions.1.value']],
    ['a number in a country list', { field: 'country', operator: 'in', value: ['Kenya', 5] }, ['conditions.1.value']],
    ['an empty country list', { field: 'country', operator: 'in', value: [] }, ['conditions.1.value']],
    ['in with a country string', { field: 'country', operator: 'in', value: 'Kenya' }, ['conditions.1.value']],
    ['eq with a country array', { field: 'country', operator: 'eq', value: ['Kenya'] }, ['conditions.1.value']],
    ['neq with a blank country', countryNot('  '), ['conditions.1.value']],
    ['neq with a number', { field: 'country', operator: 'neq', value: 5 }, ['conditions.1.value']],
    ['gt on status', { field: 'status', operator: 'gt', value: 'active' }, ['conditions.1.operator']],
    ['lte on country', { field: 'country', operator: 'lte', value: 'Kenya' }, ['conditions.1.operator']],
    ['in on a numeric field', { field: 'totalTransactions', operator: 'in', value: 5 }, ['conditions.1.operator']],
    ['neq on a numeric field', { field: 'totalAmountSpent', operator: 'neq', value: 5 }, ['conditions.1.operator']],
    ['an unknown field', { field: 'tier', operator: 'eq', value: 'gold' }, ['conditions.1.field']],
  ];
  for (const [what, condition, fields] of cases) {
    test(`preview, save and update reject ${what} with 400 naming ${fields.join(', ')}`, async () => {
      const conditions = [valid, condition];
      assertProblem(await service.request('POST', '/v1/segments/preview', { token, body: { conditions } }), 400, 'validation_failed', fields);
      assertProblem(await service.request('POST', '/v1/segments', { token, body: { name: 'Bad one', conditions } }), 400, 'validation_failed', fields);
      const saved = await createSegment(service, token, `Good one ${what}`.slice(0, 80), [valid]);
      assertProblem(await service.request('PATCH', `/v1/segments/${saved.id}`, { token, body: { conditions } }), 400, 'validation_failed', fields);
    });
  }

  test('the problem says what is wrong: the item of a list, the statuses allowed, the operators a field takes', async () => {
    const errorsOf = async (condition: unknown) =>
      (await service.request('POST', '/v1/segments/preview', { token, body: { conditions: [condition] } })).body.errors.map((e: { message: string }) => e.message);
    assert.deepEqual(await errorsOf(countryIn('Kenya', '   ')), ['Item 2: Must not be empty.']);
    assert.deepEqual(await errorsOf(status('eq', 'Active' as CustomerStatus)), ['Must be one of active, inactive, churned, in lower case.']);
    assert.deepEqual(await errorsOf({ field: 'status', operator: 'gt', value: 'active' }), ['status takes one of eq, neq, in.']);
    assert.deepEqual(await errorsOf(countryIn('Kenya', 'KENYA')), ['Must not name a country twice (ignoring case).']);
  });

  test('50 countries and 3 distinct statuses are accepted (the upper limits)', async () => {
    assert.equal(await preview(service, token, [countryIn(...countries(50)), statusIn('active', 'inactive', 'churned')]), 0);
  });
});

describe('the audience index follows customer writes of status and country', () => {
  let service: TestService;
  let token: string;

  before(async () => {
    service = await startService({ env: { ...NO_RATE_LIMIT, ACCESS_TOKEN_TTL: '86400' } });
    token = await service.tokenFor('marketing_lead');
  });
  after(() => service.close());

  /** The count of each status (eq) among customers in `country`, then `neq active` and `in` with another country. */
  const counts = async (country: string) => ({
    active: await preview(service, token, [countryIn(country, 'Nowhere'), status('eq', 'active')]),
    churned: await preview(service, token, [countryIn(country, 'Nowhere'), status('eq', 'churned')]),
    notActive: await preview(service, token, [{ field: 'country', operator: 'eq', value: country }, status('neq', 'active')]),
    elsewhere: await preview(service, token, [countryNot(country), statusIn('active', 'churned')]),
  });

  test('after a create, a status-only change, a country change and a delete, every count follows', async () => {
    await createCustomer(service, token, customerRow({ country: 'Elsewhere', status: 'churned' }));
    assert.deepEqual(await counts('Zanzibar'), { active: 0, churned: 0, notActive: 0, elsewhere: 1 }, 'loaded');
    const { id } = await createCustomer(service, token, customerRow({ country: 'Zanzibar', status: 'active' }));
    assert.deepEqual(await counts('Zanzibar'), { active: 1, churned: 0, notActive: 0, elsewhere: 1 }, 'after create');

    const patch = async (body: Partial<CustomerRow>) => assert.equal((await service.request('PATCH', `/v1/customers/${id}`, { token, body })).status, 200);
    await patch({ status: 'churned' });
    assert.deepEqual(await counts('Zanzibar'), { active: 0, churned: 1, notActive: 1, elsewhere: 1 }, 'after a status-only change');
    await patch({ status: 'inactive' });
    assert.deepEqual(await counts('Zanzibar'), { active: 0, churned: 0, notActive: 1, elsewhere: 1 }, 'after a second one');

    await patch({ country: 'Pemba', status: 'active' });
    assert.deepEqual(await counts('Zanzibar'), { active: 0, churned: 0, notActive: 0, elsewhere: 2 }, 'the old country');
    assert.deepEqual(await counts('pemba'), { active: 1, churned: 0, notActive: 0, elsewhere: 1 }, 'the new country');

    assert.equal((await service.request('DELETE', `/v1/customers/${id}`, { token })).status, 200);
    assert.deepEqual(await counts('Pemba'), { active: 0, churned: 0, notActive: 0, elsewhere: 1 }, 'after delete');
  });

  test('customers a CSV job stores are counted with their statuses', async () => {
    assert.equal(await preview(service, token, [countryIn('Jobland'), status('eq', 'churned')]), 0);
    const csv = 'email,name,country,status,total_transactions,total_amount_spent,last_activity_date\n' +
      ['active', 'churned', 'churned', 'inactive'].map((s, i) => `job${i}@jobs.example.com,Job ${i},Jobland,${s},1,10,2026-11-01`).join('\n');
    const accepted = await service.request('POST', '/v1/customers/imports', { token, raw: csv, headers: { 'content-type': 'text/csv' } });
    assert.equal(accepted.status, 202, accepted.text);
    await service.waitForLog((line) => line.msg === 'import job ended' && line.jobId === accepted.body.id);
    assert.equal(await preview(service, token, [countryIn('Jobland'), status('eq', 'churned')]), 2);
    assert.equal(await preview(service, token, [countryIn('Jobland'), statusIn('active', 'inactive')]), 2);
    assert.equal(await preview(service, token, [countryIn('jobland'), status('neq', 'inactive')]), 3);
  });

  test('past 8,192 countries (the packed column widens) statuses and countries still count exactly', async () => {
    const rows: CustomerRow[] = Array.from({ length: 8300 }, (_, i) =>
      customerRow({ country: `Land ${i}`, status: STATUSES[i % 3]!, totalTransactions: i % 5 }),
    );
    for (let i = 0; i < rows.length; i += 1000) await importRows(service, token, rows.slice(i, i + 1000));
    const lands = (...n: number[]) => countryIn(...n.map((i) => `land ${i}`));
    for (const conditions of [
      [lands(8299, 8298, 8297, 10), status('neq', 'active')],
      [lands(8200, 8201, 8202), statusIn('churned', 'active')],
      [status('eq', 'churned'), { field: 'totalTransactions', operator: 'gte', value: 3 } as Condition, countryNot('land 8250')],
    ]) {
      const want = rows.filter((row) => conditions.every((c) => holds(row, c))).length;
      assert.equal(await preview(service, token, [countryNot('Zanzibar'), countryNot('Pemba'), countryNot('Jobland'), countryNot('Elsewhere'), ...conditions]), want, JSON.stringify(conditions));
    }
    const id = (await createCustomer(service, token, customerRow({ country: 'Land 8299', status: 'churned' }))).id;
    assert.equal(await preview(service, token, [lands(8299), status('eq', 'churned')]), 1);
    assert.equal((await service.request('PATCH', `/v1/customers/${id}`, { token, body: { status: 'active' } })).status, 200);
    assert.equal(await preview(service, token, [lands(8299), status('eq', 'churned')]), 0);
    assert.equal(await preview(service, token, [lands(8299), status('eq', 'active')]), 1);
  });
});

describe('the assistant counts and proposes with the new conditions', () => {
  test('count_audience runs with status and country lists, and save_segment confirmed saves them with their count', { timeout: 20_000 }, async (t) => {
    const { service, fake, token } = await withProvider(t, 'openai');
    for (const [country, s] of [['Kenya', 'churned'], ['Nigeria', 'inactive'], ['Nigeria', 'churned'], ['Ghana', 'churned'], ['Kenya', 'active']] as const) {
      await createCustomer(service, token, customerRow({ country, status: s }));
    }
    const conditions = [countryIn('Kenya', 'Nigeria'), statusIn('churned', 'inactive')];
    const save = { name: 'Win-back Kenya and Nigeria', conditions };
    fake.enqueue({ toolCalls: [call('call_count', 'count_audience', { conditions }), call('call_save', 'save_segment', save)] }, { text: 'Confirm to save it.' });
    const thread = await openThread(service, token);
    const turn = await streamTurn(service, token, thread.id, 'How many churned or inactive customers in Kenya or Nigeria? Save them.');
    assert.equal(turn.last.type, 'done', JSON.stringify(turn.frames));

    const schema = toolsOf('openai', fake.requests[0]!).find((tool) => tool.name === 'count_audience')!.schema;
    const shapes = JSON.stringify(schema.properties.conditions.items);
    for (const word of ['"status"', '"in"', '"neq"', '"churned"']) assert.ok(shapes.includes(word), `count_audience's schema names ${word}`);

    const [counted] = toolResultsOf('openai', fake.requests[1]!);
    assert.deepEqual(JSON.parse(counted!.content), { matchCount: 3, audience: 'customers in Kenya or Nigeria who are churned or inactive' });
    assert.equal(turn.actions.length, 1);
    assert.equal(turn.actions[0]!.summary, 'Save segment “Win-back Kenya and Nigeria” — 3 customers (customers in Kenya or Nigeria who are churned or inactive)');
    const confirmed = await confirmAction(service, token, thread.id, turn.actions[0]!.id);
    assert.equal(confirmed.status, 200, confirmed.text);
    assert.equal(confirmed.body.result.matchCount, 3);
    assert.deepEqual(confirmed.body.result.conditions.map(({ field, operator, value }: Condition) => ({ field, operator, value })), conditions);
  });

  test('an invalid status from the model goes back to it as invalid input naming conditions.0.value', { timeout: 20_000 }, async (t) => {
    const { service, fake, token } = await withProvider(t, 'openai');
    fake.enqueue({ toolCalls: [call('call_bad', 'count_audience', { conditions: [{ field: 'status', operator: 'eq', value: 'Lapsed' }] })] }, { text: 'Sorry.' });
    const thread = await openThread(service, token);
    await streamTurn(service, token, thread.id, 'How many lapsed customers?');
    const [result] = toolResultsOf('openai', fake.requests[1]!);
    assert.match(JSON.parse(result!.content).error, /^Invalid input: conditions\.0\.value: Must be one of active, inactive, churned, in lower case\./);
  });
});
