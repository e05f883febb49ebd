// `npm run move-to-postgres` (product.md section 13, issue 34 point 4): a SQLite database built through the API with
// every kind of object (users and their refresh tokens, segments, campaigns with versions and moves, chat threads with
// messages and actions, a webhook with a pending delivery, an import job finished with failures, customers and their
// aggregates), moved by the script run as a child process, then compared table by table and row by row with
// PostgreSQL; the service started on it answers every GET of the API as the SQLite service did just before it stopped
// (same clock, same access tokens, the token secret moved), and takes the old passwords and refresh tokens; the
// sequences continue; a second move, a file that is not this service's, wrong arguments and a row
// PostgreSQL refuses each exit non-zero having changed nothing; a database with unrelated tables takes the move.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { PostgresEngine } from '../../src/db/pg-engine.ts';
import { PASSWORD, startService, TestClock, type TestService } from '../helpers.ts';
import { createSegment, generateOk, moveCampaignTo, NO_RATE_LIMIT } from '../support/campaigns.ts';
import { confirmAction, openThread, streamTurn } from '../support/chat.ts';
import { createCustomer, customerRow, importRows } from '../support/customers.ts';
import { createDatabase } from '../support/postgres.ts';
import { startWebhookReceiver } from '../support/webhook-receiver.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'move-to-postgres.ts');
/**
 * Every table of the SQLite schema (schema.sql, its full-text index aside): read from the schema itself, not from the
 * script's list, so a table the script forgets fails the comparison.
 */
const TABLES = [...readFileSync(join(ROOT, 'schema.sql'), 'utf8').matchAll(/^CREATE TABLE IF NOT EXISTS (\w+) \(/gm)].map((m) => m[1]!);
/** The tables SQLite's AUTOINCREMENT numbers, with their key: PostgreSQL's identity sequences must continue them. */
const IDENTITIES: Record<string, string> = {
  customers: 'id',
  campaigns: 'seq',
  campaign_events: 'id',
  chat_messages: 'seq',
  chat_actions: 'seq',
  import_jobs: 'seq',
  webhooks: 'seq',
  webhook_events: 'seq',
  webhook_deliveries: 'seq',
};
const NO_WAIT = async () => undefined;
const BOUNDED = { timeout: 60_000 };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the script with `args` as `npm run move-to-postgres` does, and resolves once it has exited. */
function runMove(...args: string[]): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: '', DATABASE_PATH: '' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

type Row = Record<string, unknown>;

/** The rows of `table`, each with its keys sorted, in the order of their JSON (the same on both engines). */
function sorted(rows: Row[]): Row[] {
  const normal = rows.map((row) => Object.fromEntries(Object.keys(row).sort().map((k) => [k, row[k]])));
  return normal.map((row) => [JSON.stringify(row), row] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
}

function sqliteRows(file: string, table: string): Row[] {
  const db = new Database(file, { readonly: true });
  try {
    return sorted(db.prepare(`SELECT * FROM ${table}`).all() as Row[]);
  } finally {
    db.close();
  }
}

async function pgRows(engine: PostgresEngine, table: string): Promise<Row[]> {
  return sorted([...(await engine.sql.unsafe(`SELECT * FROM ${table}`))] as Row[]);
}

/** Every table of this service in the database, as rows: what "nothing changed" compares. */
async function everything(engine: PostgresEngine): Promise<Record<string, Row[]>> {
  const all: Record<string, Row[]> = {};
  for (const table of [...TABLES, 'schema_version', 'customer_changes', 'service_secrets']) all[table] = await pgRows(engine, table);
  for (const [table, column] of Object.entries(IDENTITIES)) {
    const [sequence] = await engine.sql.unsafe(`SELECT last_value, is_called FROM ${(await sequenceOf(engine, table, column))}`);
    all[`${table} sequence`] = [sequence as Row];
  }
  return all;
}

async function sequenceOf(engine: PostgresEngine, table: string, column: string): Promise<string> {
  const [row] = await engine.sql<{ name: string }[]>`SELECT pg_get_serial_sequence(${table}, ${column}) AS name`;
  return row!.name;
}

/** Whether the database holds a table named `name`. */
async function hasTable(url: string, name: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ found: boolean }[]>`SELECT to_regclass(${name}) IS NOT NULL AS found`;
    return row!.found;
  } finally {
    await sql.end();
  }
}

/** What the fixture holds that the checks need. */
interface Built {
  file: string;
  /** The admin's email and a refresh token of theirs never exchanged. */
  adminEmail: string;
  refreshToken: string;
  /** A refresh token of the admin's already exchanged on SQLite: presenting it again is a reuse. */
  exchangedRefreshToken: string;
  /** The generation SQLite's meta held. */
  generation: number;
  /** The clock the SQLite service ran on; the service on PostgreSQL runs on the same one, not a minute later. */
  clock: TestClock;
  /** Access tokens issued on SQLite, by who holds them. */
  tokens: Tokens;
  /** Every GET of the API asked of the SQLite service just before it stopped, and its answer. */
  answers: Answer[];
}

/** Who asks a GET: the admin, the marketer who wrote the campaigns and the chat threads, or nobody signed in. */
type Asker = 'admin' | 'marketer' | 'nobody';
type Tokens = Record<Exclude<Asker, 'nobody'>, string>;

/** One GET's answer with what only this request has (its trace id) taken out: what the two engines must agree on. */
interface Answer {
  asker: Asker;
  path: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers that differ from one request to the next whatever the engine: the trace id, and the wall-clock `date`. */
const PER_REQUEST_HEADERS = new Set(['x-trace-id', 'date']);
/** The settings both services run with: no rate limit in the way, and no webhook retry within the test (an hour away on the TestClock). */
const SERVICE_ENV = { ...NO_RATE_LIMIT, TOKEN_SECRET: '', WEBHOOK_RETRY_SCHEDULE: '3600000' };

/** Asks `path` as `asker` and returns the answer, its trace id (in the header and a problem's `traceId`) masked. */
async function answerOf(service: TestService, tokens: Tokens, asker: Asker, path: string): Promise<Answer> {
  const reply = await service.request('GET', path, { token: asker === 'nobody' ? undefined : tokens[asker] });
  const trace = reply.headers.get('x-trace-id');
  assert.ok(trace, `${path} has a trace id`);
  const headers = Object.fromEntries([...reply.headers].filter(([name]) => !PER_REQUEST_HEADERS.has(name)));
  return { asker, path, status: reply.status, headers, body: reply.text.replaceAll(trace, '<trace id>') };
}

/** The answer with a JSON body parsed, so that a difference shows as fields rather than as one long line. */
function readable(answer: Answer): Answer & { json?: unknown } {
  return /json/.test(answer.headers['content-type'] ?? '') ? { ...answer, json: JSON.parse(answer.body) } : answer;
}

const itemsOf = (answer: Answer): { id: string; status?: string }[] => {
  assert.equal(answer.status, 200, `${answer.path}: ${answer.body}`);
  const body = JSON.parse(answer.body);
  return Array.isArray(body) ? body : body.items;
};

/**
 * Asks every GET of the API, each as the admin and as the marketer (and the public ones as nobody), finding the ids
 * of the objects from the lists: the customers list with its filters, sorts, search and pages, then each customer,
 * segment, campaign, thread, webhook and import job with everything under it. Asserts the fixture's objects are there.
 */
async function askEveryGet(service: TestService, tokens: Tokens, deletedCustomerId: string): Promise<Answer[]> {
  const answers: Answer[] = [];
  const ask = async (path: string, askers: Asker[] = ['admin', 'marketer']): Promise<Answer> => {
    for (const asker of askers) answers.push(await answerOf(service, tokens, asker, path));
    return answers.at(-1)!;
  };
  for (const path of ['/health', '/v1/openapi.json']) await ask(path, ['nobody', 'admin']);
  await ask('/v1/me', ['nobody', 'admin', 'marketer']);
  await ask('/v1/settings');
  await ask('/v1/users');
  const customerQueries = [
    '', '?limit=200', '?page=2&limit=3', '?page=99', '?status=active', '?status=churned', '?status=inactive',
    '?country=Kenya', '?country=kenya', '?country=Ghana&status=churned',
    '?sort=name&direction=asc', '?sort=name&direction=desc', '?sort=totalAmountSpent&direction=asc', '?sort=totalAmountSpent',
    '?sort=totalTransactions&direction=asc', '?sort=lastActivityDate&direction=asc',
    '?search=csv', '?search=CSV%20ONE', '?search=neil', "?search=o'n", '?search=%5C', '?search=%25', '?search=_', '?search=%C3%A9mile',
    '?search=builder.example', '?search=zzz-nothing', '?search=alice&sort=name&direction=asc',
    '?status=active&country=France&sort=name&direction=asc&search=e&page=1&limit=2', '?status=bogus', '?limit=0',
  ];
  for (const query of customerQueries) await ask(`/v1/customers${query}`);
  const customers = itemsOf(await ask('/v1/customers?limit=200'));
  assert.ok(customers.length >= 15, 'the fixture has customers');
  for (const id of [...customers.map((c) => c.id), deletedCustomerId, 999_999_999, 'not-a-number']) await ask(`/v1/customers/${id}`);
  for (const path of ['kpis', 'trend', 'trend?months=24', 'health', 'top', 'top?limit=25']) await ask(`/v1/customers/${path}`);

  const segments = itemsOf(await ask('/v1/segments'));
  assert.ok(segments.length >= 3, 'the fixture has segments');
  for (const { id } of [...segments, { id: 'no-such-segment' }]) {
    for (const under of ['', '/customers.csv', '/customers.csv?format=listmonk']) await ask(`/v1/segments/${id}${under}`);
  }

  for (const query of ['', '?status=sent', '?status=approved', '?channel=email', `?segmentId=${segments[0]!.id}`, '?page=2&limit=1']) await ask(`/v1/campaigns${query}`);
  const campaigns = itemsOf(await ask('/v1/campaigns?limit=200'));
  assert.ok(campaigns.length >= 3, 'the fixture has campaigns');
  for (const { id } of [...campaigns, { id: 'no-such-campaign' }]) {
    for (const under of ['', '/events', '/versions', '/audience', '/audience.csv', '/audience.csv?format=listmonk']) await ask(`/v1/campaigns/${id}${under}`);
  }

  const threads = itemsOf(await ask('/v1/chat/threads'));
  assert.ok(threads.length >= 2, "the marketer's threads");
  await ask('/v1/chat/threads?page=2&limit=1');
  for (const { id } of threads) for (const under of ['', '/messages']) await ask(`/v1/chat/threads/${id}${under}`);

  const webhooks = itemsOf(await ask('/v1/webhooks', ['marketer', 'admin']));
  assert.equal(webhooks.length, 1, 'the webhook');
  await ask(`/v1/webhooks/${webhooks[0]!.id}`, ['marketer', 'admin']);
  const deliveries = itemsOf(await ask(`/v1/webhooks/${webhooks[0]!.id}/deliveries`, ['marketer', 'admin']));
  assert.deepEqual(deliveries.map((d) => d.status), ['pending'], 'the pending delivery');

  const jobs = itemsOf(await ask('/v1/customers/imports'));
  assert.ok(jobs.length >= 1, 'the import job');
  for (const { id } of [...jobs, { id: 'no-such-job' }]) for (const under of ['', '/failures.csv']) await ask(`/v1/customers/imports/${id}${under}`);
  const failures = answers.find((a) => a.path === `/v1/customers/imports/${jobs[0]!.id}/failures.csv`)!;
  assert.equal(failures.status, 200);
  assert.match(failures.body, /not-an-email/);
  return answers;
}

/**
 * Builds a SQLite database through the service and its API: every kind of object, text with tabs, newlines and
 * backslashes, a deleted last customer (so the sequence is ahead of the highest id), a pending webhook delivery and a
 * job finished with failures; then stops the service and leaves a job `running` as a crash would.
 */
async function buildSqliteDatabase(dir: string): Promise<Built> {
  const file = join(dir, 'service.db');
  const receiver = await startWebhookReceiver({ fallback: 500 });
  let adminEmail = '';
  let refreshToken = '';
  let exchangedRefreshToken = '';
  let tokens: Tokens;
  let answers: Answer[];
  const clock = new TestClock();
  // No TOKEN_SECRET: the service generates service.db.secret, which has to move.
  const service: TestService = await startService({ databasePath: file, clock, env: SERVICE_ENV, sleep: NO_WAIT });
  try {
    const admin = await service.createUser('admin');
    adminEmail = admin.email;
    const lead = await service.createUser('marketing_lead');
    const marketer = await service.createUser('lifecycle_marketer');
    const leaving = await service.createUser('lifecycle_marketer');
    const adminSession = await service.signIn(admin.email);
    refreshToken = (await service.signIn(admin.email)).refreshToken;
    const exchanged = await service.request('POST', '/v1/auth/refresh', { body: { refreshToken: adminSession.refreshToken } });
    assert.equal(exchanged.status, 200, exchanged.text);
    exchangedRefreshToken = adminSession.refreshToken;
    const leadToken = (await service.signIn(lead.email)).accessToken;
    const marketerSession = await service.signIn(marketer.email);
    const token = marketerSession.accessToken;
    await service.signIn(leaving.email);
    const deactivated = await service.request('PATCH', `/v1/users/${leaving.id}`, { token: adminSession.accessToken, body: { isActive: false } });
    assert.equal(deactivated.status, 200, deactivated.text);

    for (const [country, status] of [['Kenya', 'active'], ['Kenya', 'churned'], ['Nigeria', 'inactive'], ['France', 'active']] as const) {
      await createCustomer(service, token, customerRow({ country, status, totalAmountSpent: 12.34, totalTransactions: 2 }));
    }
    // Names that order and match differently under another collation or LIKE dialect: the sorts and searches must not.
    for (const name of ['alice lower-case', 'ALICE UPPER', 'Émile Accent', 'Zoë', '100% sure_thing', 'a_b', 'a%b']) {
      await createCustomer(service, token, customerRow({ name, country: 'France', lastActivityDate: '2026-10-15T00:00:00.000Z' }));
    }
    await importRows(service, token, [customerRow({ country: 'Ghana' }), customerRow({ country: 'Ghana', status: 'churned', lastActivityDate: '2025-03-04T05:06:07.089Z' })]);
    const patched = await createCustomer(service, token, customerRow({ name: 'Back\\slash O\'Neil', country: 'Kenya' }));
    assert.equal((await service.request('PATCH', `/v1/customers/${patched.id}`, { token, body: { totalAmountSpent: 99.99 } })).status, 200);

    const kenya = await createSegment(service, token, 'Kenya "win-back"', [{ field: 'country', operator: 'eq', value: 'Kenya' }]);
    const ghana = await createSegment(service, token, 'Ghana', [{ field: 'country', operator: 'eq', value: 'Ghana' }]);
    assert.equal((await service.request('PATCH', `/v1/segments/${ghana.id}`, { token, body: { name: 'Ghana renamed' } })).status, 200);

    const draft = await generateOk(service, token, { segmentId: kenya.id, objective: 'Win back\twith a tab,\na newline and a \\ backslash', channel: 'email', tone: 'friendly' }, 'key-1');
    assert.equal((await service.request('POST', `/v1/campaigns/${draft.id}/revise`, { token, body: { instruction: 'shorter' } })).status, 200);
    assert.equal((await service.request('POST', `/v1/campaigns/${draft.id}/variants`, { token, body: { count: 2 } })).status, 200);
    assert.equal((await service.request('PATCH', `/v1/campaigns/${draft.id}`, { token, body: { title: 'A new title 🎉' } })).status, 200);
    assert.equal((await service.request('POST', `/v1/campaigns/${draft.id}/versions/1/restore`, { token })).status, 200);
    const approved = await generateOk(service, token, { segmentId: kenya.id, objective: 'Thank our best customers', channel: 'sms', tone: 'professional' });
    await moveCampaignTo(service, { campaign: approved.id, author: token, reviewer: leadToken }, 'approved');
    const sent = await generateOk(service, token, { segmentId: ghana.id, objective: 'Tell them about the sale', channel: 'push', tone: 'urgent' });
    await moveCampaignTo(service, { campaign: sent.id, author: token, reviewer: leadToken }, 'sent');

    const thread = await openThread(service, token);
    const turn = await streamTurn(service, token, thread.id, 'make a segment of customers in Nigeria');
    assert.equal(turn.actions.length, 1, JSON.stringify(turn.frames));
    assert.equal((await confirmAction(service, token, thread.id, turn.actions[0]!.id)).status, 200);
    const proposing = await openThread(service, token);
    assert.equal((await streamTurn(service, token, proposing.id, `draft a campaign for Ghana renamed to win them back`)).actions.length, 1);
    const plain = await service.request('POST', `/v1/chat/threads/${thread.id}/messages`, { token, body: { content: 'How many\tcustomers\nare there? \\o/' } });
    assert.equal(plain.status, 200, plain.text);

    const csv = 'name,email,country,totalTransactions,totalAmountSpent,lastActivityDate,status\n' +
      'Csv One,csv.one@jobs.example.com,Kenya,1,5,2026-10-01T00:00:00.000Z,active\n' +
      'Csv Bad,not-an-email,Kenya,1,5,2026-10-01T00:00:00.000Z,active\n' +
      'Csv Two,csv.two@jobs.example.com,Nigeria,2,7.5,2026-09-01T00:00:00.000Z,inactive\n' +
      'Csv Again,csv.one@jobs.example.com,Kenya,1,5,2026-10-01T00:00:00.000Z,active\n';
    const job = await service.request('POST', '/v1/customers/imports', { token, raw: csv, headers: { 'content-type': 'text/csv' } });
    assert.equal(job.status, 202, job.text);
    await service.waitForLog((line) => line.msg === 'import job ended' && line.jobId === job.body.id);
    assert.equal((await service.request('GET', `/v1/customers/imports/${job.body.id}`, { token })).body.skipped, 2);

    // The newest customer deleted: the sequence is ahead of the highest id, and must stay so.
    const last = await createCustomer(service, token, customerRow({ country: 'Kenya' }));
    assert.equal((await service.request('DELETE', `/v1/customers/${last.id}`, { token: leadToken })).status, 200);

    // Last, so that exactly one event is delivered: its first attempt fails (500) and it stays pending for an hour.
    const hook = await service.request('POST', '/v1/webhooks', { token: adminSession.accessToken, body: { url: receiver.url, events: ['campaign.status_changed'] } });
    assert.equal(hook.status, 200, hook.text);
    assert.equal((await service.request('PATCH', `/v1/campaigns/${draft.id}/status`, { token, body: { status: 'in_review' } })).status, 200);
    await service.waitForLog((line) => String(line.msg).startsWith('webhook delivery') && line.attempt === 1);

    tokens = { admin: adminSession.accessToken, marketer: token };
    // Twice: a GET of one segment stores its recount (`matchCount` is the last known audience size), so the lists
    // answer differently after the first round; the second round's answers are those of the file that moves.
    await askEveryGet(service, tokens, last.id);
    answers = await askEveryGet(service, tokens, last.id);
  } finally {
    await service.close();
    await receiver.close();
  }
  const db = new Database(file);
  try {
    // A job the service was running when it died: the move marks it interrupted, as the next start would.
    db.prepare(
      `INSERT INTO import_jobs (id, status, file_name, columns, ignored_columns, bytes_read, rows_read, imported, created_by, started_at)
       VALUES ('crashed-job', 'running', 'big.csv', '{"email":0}', '[]', 100, 2, 1, 'someone', 1700000000000)`,
    ).run();
    const generation = db.prepare("SELECT value FROM meta WHERE key = 'customers_generation'").pluck().get() as number;
    const deleted = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'customers'").pluck().get() as number;
    assert.ok(deleted > (db.prepare('SELECT max(id) FROM customers').pluck().get() as number), 'the last customer was deleted');
    const pending = db.prepare("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending' AND attempt = 1").pluck().get();
    assert.equal(pending, 1);
    return { file, adminEmail, refreshToken, exchangedRefreshToken, generation, clock, tokens, answers };
  } finally {
    db.close();
  }
}

/**
 * The import jobs list on PostgreSQL and on SQLite, made comparable: the job the fixture left `running` after the
 * SQLite service stopped (a crash) was not in SQLite's answer; on PostgreSQL it is, `interrupted` by the move as the
 * README says. Asserts that, then returns both answers without it (and without content-length, which it changes).
 */
function withoutCrashedJob(actual: Answer, expected: Answer): [Answer, Answer] {
  if (actual.status !== 200) return [actual, expected];
  const body = JSON.parse(actual.body) as { items: { id: string; status: string }[]; total: number };
  const crashed = body.items.filter((job) => job.id === 'crashed-job');
  assert.deepEqual(crashed.map((job) => job.status), ['interrupted'], actual.asker);
  const rest = { ...body, items: body.items.filter((job) => job.id !== 'crashed-job'), total: body.total - 1 };
  const strip = (answer: Answer, text: string): Answer => {
    const { 'content-length': _, ...headers } = answer.headers;
    return { ...answer, headers, body: text };
  };
  return [strip(actual, JSON.stringify(rest)), strip(expected, JSON.stringify(JSON.parse(expected.body)))];
}

describe('move-to-postgres', () => {
  let dir: string;
  let built: Built;
  let url: string;
  let engine: PostgresEngine;
  let moved: Run;
  let startedAt: number;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'campaigns-move-'));
    built = await buildSqliteDatabase(dir);
    url = await createDatabase('move');
    startedAt = Date.now();
    moved = await runMove('--from', built.file, '--to', url);
    engine = new PostgresEngine(url, { max: 2 });
  });
  after(async () => {
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('exits 0, reports progress per table on stderr and a summary on stdout', () => {
    assert.equal(moved.code, 0, moved.stderr);
    for (const table of TABLES) assert.match(moved.stderr, new RegExp(`^${table} (\\d+) / \\1$`, 'm'), `a progress line for ${table}`);
    assert.match(moved.stdout, /^Moved \d+ rows of 20 tables from .+ in [\d.]+ s/m);
    assert.match(moved.stdout, /Import jobs still running .* are now interrupted .*crashed-job/);
    assert.match(moved.stdout, /token secret .* moved into the database/);
  });

  test('every table holds the same rows as in SQLite, byte for byte', async () => {
    for (const table of TABLES) {
      const expected = sqliteRows(built.file, table).map((row) => {
        // The columns only PostgreSQL has (which instance runs a job, or a confirm) are empty: no instance ran them.
        if (table === 'import_jobs') row = { ...row, instance_id: null };
        if (table === 'chat_actions') row = { ...row, running_on: null };
        if (table === 'import_jobs' && row.status === 'running') return { ...row, status: 'interrupted', finished_at: 'set' };
        if (table === 'meta' && row.key === 'customers_generation') return { ...row, value: built.generation + 1 };
        return row;
      });
      const actual = (await pgRows(engine, table)).map((row) => {
        if (table !== 'import_jobs' || row.id !== 'crashed-job') return row;
        assert.ok((row.finished_at as number) >= startedAt && (row.finished_at as number) <= Date.now(), 'finished when moved');
        return { ...row, finished_at: 'set' };
      });
      assert.deepEqual(actual, sorted(expected), `table ${table}`);
      if (table !== 'meta') assert.ok(actual.length > 0, `the fixture has rows in ${table}`);
    }
  });

  test('password hashes and refresh token rows survive unchanged', async () => {
    const sqlite = new Database(built.file, { readonly: true });
    try {
      for (const { id, password_hash } of sqlite.prepare('SELECT id, password_hash FROM users').all() as { id: string; password_hash: string }[]) {
        const [row] = await engine.sql<{ hash: string }[]>`SELECT password_hash AS hash FROM users WHERE id = ${id}`;
        assert.equal(Buffer.compare(Buffer.from(row!.hash), Buffer.from(password_hash)), 0);
      }
      const tokens = sqlite.prepare('SELECT token_hash, family_id, revoked_reason FROM refresh_tokens ORDER BY token_hash').all();
      const moved = await engine.sql`SELECT token_hash, family_id, revoked_reason FROM refresh_tokens ORDER BY token_hash COLLATE "C"`;
      assert.deepEqual([...moved], tokens);
      assert.deepEqual(new Set(tokens.map((t: any) => t.revoked_reason)), new Set([null, 'exchanged', 'deactivated']));
    } finally {
      sqlite.close();
    }
  });

  test('the token secret moved into service_secrets', async () => {
    const [row] = await engine.sql<{ value: string }[]>`SELECT value FROM service_secrets WHERE name = 'token_secret'`;
    assert.equal(row?.value, readFileSync(`${built.file}.secret`, 'utf8').trim());
  });

  test('the aggregates are those of the moved customers, and the change log says reload once', async () => {
    const day = 'CASE WHEN last_activity_at >= 0 THEN last_activity_at / 86400000 ELSE -((-last_activity_at - 1) / 86400000) - 1 END';
    const recount = async (stored: string, computed: string) => assert.deepEqual(sorted([...(await engine.sql.unsafe(stored))]), sorted([...(await engine.sql.unsafe(computed))]), stored);
    await recount('SELECT status, customers, amount_cents FROM customer_totals WHERE customers > 0', 'SELECT status, count(*) AS customers, sum(amount_cents)::bigint AS amount_cents FROM customers GROUP BY status');
    await recount('SELECT status, day, customers, amount_cents FROM customer_days', `SELECT status, ${day} AS day, count(*) AS customers, sum(amount_cents)::bigint AS amount_cents FROM customers GROUP BY 1, 2`);
    await recount('SELECT country_key, status, customers FROM customer_countries', 'SELECT country_key, status, count(*) AS customers FROM customers GROUP BY 1, 2');
    const changes = await engine.sql`SELECT generation, op, customer_id FROM customer_changes`;
    assert.deepEqual([...changes], [{ generation: built.generation + 1, op: 'reload', customer_id: null }]);
    const [version] = await engine.sql`SELECT version FROM schema_version`;
    assert.ok((version!.version as number) >= 1);
  });

  test('a second move onto the same database exits 1 and changes nothing', BOUNDED, async () => {
    const before = await everything(engine);
    const again = await runMove('--from', built.file, '--to', url);
    assert.equal(again.code, 1, again.stderr);
    assert.match(again.stderr, /already has this service's tables \(.*customers.*schema_version.*\)/);
    assert.match(again.stderr, /Nothing was changed/);
    assert.deepEqual(await everything(engine), before);
  });

  // Before the next test, which inserts a customer behind the service's back.
  test('the service started on the moved database answers every GET as SQLite did, to tokens SQLite issued; passwords and refresh tokens work', BOUNDED, async () => {
    assert.equal(moved.code, 0, moved.stderr);
    // TOKEN_SECRET unset, as on SQLite: the service signs with the secret that moved into the database.
    const service = await startService({ databaseUrl: url, clock: built.clock, env: SERVICE_ENV, sleep: NO_WAIT });
    try {
      const me = await service.request('GET', '/v1/me', { token: built.tokens.admin });
      assert.equal(me.status, 200, `the access token issued on SQLite is accepted: ${me.text}`);
      for (const expected of built.answers) {
        const actual = await answerOf(service, built.tokens, expected.asker, expected.path);
        const [got, want] = expected.path === '/v1/customers/imports' ? withoutCrashedJob(actual, expected) : [actual, expected];
        assert.deepEqual(readable(got), readable(want), `${expected.asker} GET ${expected.path}`);
      }

      const signedIn = await service.request('POST', '/v1/auth/sign-in', { body: { email: built.adminEmail, password: PASSWORD } });
      assert.equal(signedIn.status, 200, signedIn.text);
      assert.deepEqual(signedIn.body.user, me.body);
      const wrong = await service.request('POST', '/v1/auth/sign-in', { body: { email: built.adminEmail, password: `${PASSWORD}!` } });
      assert.equal(wrong.status, 401, wrong.text);

      const refreshed = await service.request('POST', '/v1/auth/refresh', { body: { refreshToken: built.refreshToken } });
      assert.equal(refreshed.status, 200, refreshed.text);
      assert.notEqual(refreshed.body.refreshToken, built.refreshToken);
      assert.equal((await service.request('GET', '/v1/me', { token: refreshed.body.accessToken })).status, 200);
      // The token exchanged on SQLite stays spent: its revocation moved too.
      const reused = await service.request('POST', '/v1/auth/refresh', { body: { refreshToken: built.exchangedRefreshToken } });
      assert.equal(reused.status, 401, reused.text);
      assert.equal(reused.body.code, 'session_expired');
      // The pending delivery waited, as its next attempt is an hour away on the shared clock: the answers compared one state.
      assert.deepEqual(service.logLines.filter((line) => String(line.msg).startsWith('webhook delivery')), []);
    } finally {
      await service.close();
    }
  });

  test('every identity sequence continues after the highest id SQLite handed out, deleted rows included', async () => {
    const sqlite = new Database(built.file, { readonly: true });
    try {
      for (const [table, column] of Object.entries(IDENTITIES)) {
        const handedOut = (sqlite.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().get(table) as number | undefined) ?? 0;
        const highest = (sqlite.prepare(`SELECT coalesce(max(${column}), 0) FROM ${table}`).pluck().get() as number);
        const [next] = await engine.sql<{ n: number }[]>`SELECT nextval(${await sequenceOf(engine, table, column)}) AS n`;
        assert.equal(next!.n, Math.max(handedOut, highest) + 1, `${table}.${column}`);
      }
    } finally {
      sqlite.close();
    }
    // A customer inserted now gets a new id, with the triggers back on: counted and logged.
    const [row] = await engine.sql<{ id: number }[]>`
      INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
      VALUES ('New', 'new.after.move@example.com', 'Kenya', 'kenya', 1, 100, 1790000000000, 'active', 1, 1) RETURNING id`;
    const [logged] = await engine.sql`SELECT op, customer_id FROM customer_changes WHERE op = 'upsert'`;
    assert.deepEqual(logged, { op: 'upsert', customer_id: row!.id });
  });
});

describe('move-to-postgres refuses', () => {
  let file: string;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'campaigns-move-refused-'));
    const service = await startService({ databasePath: join(dir, 'small.db'), sleep: NO_WAIT });
    try {
      const token = await service.tokenFor('lifecycle_marketer');
      await createCustomer(service, token, customerRow());
    } finally {
      await service.close();
    }
    file = join(dir, 'small.db');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('wrong arguments with exit 2 and the usage', BOUNDED, async () => {
    for (const args of [[], ['--from', file], ['--from', file, '--to', 'mysql://somewhere/db'], ['--from', file, '--to', 'postgres://x/y', '--what']]) {
      const run = await runMove(...args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, /Usage: npm run move-to-postgres -- --from FILE --to URL/);
    }
  });

  test('a missing file, a file that is no SQLite database, and another program\'s database, with exit 1', BOUNDED, async () => {
    const url = await createDatabase('move_refused');
    const notes = join(dir, 'notes.db');
    const other = new Database(notes);
    other.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)');
    other.close();
    const text = join(dir, 'text.db');
    writeFileSync(text, 'this is not a database, just text that is long enough to have a header of sorts '.repeat(10));
    const cases: [string, RegExp][] = [
      [join(dir, 'missing.db'), /There is no database file at/],
      [text, /is not a SQLite database/],
      [notes, /is not a database of this service/],
    ];
    for (const [from, message] of cases) {
      const run = await runMove('--from', from, '--to', url);
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, message);
    }
    assert.equal(await hasTable(url, 'users'), false);
  });

  test('a row PostgreSQL refuses at the end of a copy fails the move with exit 1 and leaves nothing', BOUNDED, async () => {
    const broken = join(dir, 'broken.db');
    const source = new Database(file, { readonly: true });
    source.exec(`VACUUM INTO '${broken}'`);
    source.close();
    const db = new Database(broken);
    // A message of a thread that is not there: SQLite let it in with its foreign keys off; PostgreSQL checks them
    // when the copy of the table ends, after the last row was sent.
    db.pragma('foreign_keys = OFF');
    db.prepare("INSERT INTO chat_messages (id, thread_id, role, content, created_at) VALUES ('orphan', 'no-such-thread', 'user', 'hi', 1)").run();
    db.close();
    const url = await createDatabase('move_broken');
    const run = await runMove('--from', broken, '--to', url);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /Copying chat_messages failed/);
    assert.match(run.stderr, /nothing changed/);
    assert.equal(await hasTable(url, 'users'), false);
    assert.equal(await hasTable(url, 'schema_version'), false);
  });

  test('(not) a file with a seed killed part-way: its rows move and the aggregates count them, as a restart would', BOUNDED, async () => {
    const killed = join(dir, 'killed.db');
    const source = new Database(file, { readonly: true });
    source.exec(`VACUUM INTO '${killed}'`);
    source.close();
    const db = new Database(killed);
    // What bulk-load.ts leaves when killed after a batch: rows in, the marker set, the aggregates not counting them.
    db.exec(`
      INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
      VALUES ('Seeded', 'seeded@example.com', 'Peru', 'peru', 3, 4500, 1790000000000, 'inactive', 1, 1);
      INSERT INTO meta (key, value) VALUES ('bulk_load_from', (SELECT max(id) FROM customers));`);
    db.close();
    const url = await createDatabase('move_killed');
    const run = await runMove('--from', killed, '--to', url);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /An interrupted seed had left customers the aggregates did not count: they were counted on PostgreSQL/);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      assert.deepEqual([...(await sql`SELECT key FROM meta ORDER BY key`)], [{ key: 'customers_generation' }]);
      const totals = await sql`SELECT status, customers::int, amount_cents::int FROM customer_totals WHERE customers > 0 ORDER BY status`;
      const counted = await sql`SELECT status, count(*)::int AS customers, sum(amount_cents)::int AS amount_cents FROM customers GROUP BY status ORDER BY status`;
      assert.deepEqual([...totals], [...counted]);
      assert.deepEqual([...(await sql`SELECT country_key, customers::int FROM customer_countries WHERE country_key = 'peru'`)], [{ country_key: 'peru', customers: 1 }]);
    } finally {
      await sql.end();
    }
  });

  test('(not) a database holding only unrelated tables: the move goes in beside them', BOUNDED, async () => {
    const url = await createDatabase('move_beside');
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await sql`CREATE TABLE notes (id int PRIMARY KEY, text text)`;
      await sql`INSERT INTO notes VALUES (1, 'kept')`;
      const run = await runMove('--from', file, '--to', url);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /other tables, left as they were: notes/);
      assert.deepEqual([...(await sql`SELECT * FROM notes`)], [{ id: 1, text: 'kept' }]);
      const [count] = await sql`SELECT count(*)::int AS n FROM customers`;
      assert.equal(count!.n, 1);
    } finally {
      await sql.end();
    }
  });
});
