// kill -9 during a CSV import job on PostgreSQL (issue 34): the real service (`npm start`, test/stress/child-service.ts)
// on a database of this file's own takes a file of 100,000 rows with bad and repeated rows, is killed once part of it
// is committed, and is started again on the same database. Then the job is `interrupted` with the counts of what was
// committed (its `imported` the stored customers, its `skipped` the lines of failures.csv), marked by the new instance
// once the killed one's lease (short here: INSTANCE_LEASE_MS) has ended; every stored row is the file's, the
// aggregates, the top list and an everyone segment equal naive SQL, and importing the same file again stores only the
// rest. Progress is awaited on events: a trigger this test adds to its own database notifies each
// commit that changes a job, and the test reads the job over HTTP then; every wait is bounded.
import assert from 'node:assert/strict';
import { createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { syntheticCustomers } from '../../scripts/synthetic-customers.ts';
import { PostgresEngine } from '../../src/db/pg-engine.ts';
import { countryKey } from '../../src/domain/customers.ts';
import type { TestService } from '../helpers.ts';
import { ADMIN_EMAIL, call, launchService, signInAdmin, type ChildService } from '../stress/child-service.ts';
import { assertAggregatesExact, segmentCount } from '../support/aggregates.ts';
import { createDatabase, dropDatabase } from '../support/postgres.ts';
import { tempDir } from '../support/temp-dir.ts';
import { notifyJobChanges, waitForJobChange } from '../support/job-changes.ts';

const ROWS = 100_000;
/** Killed once this many customers are committed: well into the file, well before its end. */
const KILL_AFTER = 10_000;
/** A row in this many is broken (each of FAULTS in turn), and one in DUPLICATE_EVERY repeats an earlier email. */
const FAULT_EVERY = 331;
const DUPLICATE_EVERY = 409;
const DUPLICATE_BACK = 150;
const FAULTS = ['transactions', 'status', 'date', 'amount', 'email'] as const;
/** How long the first job may take to commit KILL_AFTER customers, and the second to end. */
const PROGRESS_MS = 60_000;
const JOB_MS = 120_000;
const HTTP_MS = 30_000;
/** The instances' lease and heartbeat: the killed instance's job is marked within both, by the spec within 30 s. */
const LEASE_MS = 1_000;
const HEARTBEAT_MS = 200;
/** How long the restarted service may take to mark the killed instance's job: the lease and a heartbeat, and room. */
const SETTLE_MS = LEASE_MS + HEARTBEAT_MS + 5_000;
const DAY_MS = 86_400_000;

/** A stored customer as the file says it must be (the columns read back from `customers`). */
interface StoredRow {
  email: string;
  name: string;
  country: string;
  country_key: string;
  total_transactions: number;
  amount_cents: number;
  last_activity_at: number;
  status: string;
}

/** What importing the file into an empty database must give: the first valid row of each email, and its line. */
interface Expected {
  valid: Map<string, { line: number; row: StoredRow }>;
  /** Lines a full import into an empty database skips: broken rows and repeated emails. */
  failing: Set<number>;
}

interface Job {
  id: string;
  status: string;
  rowsRead: number;
  imported: number;
  updated: number;
  skipped: number;
  finishedAt?: string;
}

const dir = tempDir('campaigns-pg-crash-');
const file = join(dir, 'customers.csv');
let url: string;
let engine: PostgresEngine;
let expected: Expected;

const quote = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

/** Writes ROWS customers to `path` (its header is line 1), some broken or repeating an email; returns what must be stored. */
async function writeFile(path: string): Promise<Expected> {
  const today = Date.now() - (Date.now() % DAY_MS);
  const rows = [...syntheticCustomers(ROWS, { seed: 34, now: new Date(today) })];
  const out = createWriteStream(path);
  out.write('name,email,country,total_transactions,total_amount_spent,last_activity_date,status\n');
  const valid = new Map<string, { line: number; row: StoredRow }>();
  const failing = new Set<number>();
  const kind = new Map<number, 'fault' | 'duplicate'>();
  let chunk = '';
  for (let i = 0; i < ROWS; i++) {
    const c = rows[i]!;
    const line = i + 2;
    const fields = {
      name: c.name,
      email: c.email,
      country: c.country,
      transactions: String(c.totalTransactions),
      amount: (c.amountCents / 100).toFixed(2),
      date: new Date(c.lastActivityAt).toISOString().slice(0, 10),
      status: c.status as string,
    };
    const source = i - DUPLICATE_BACK;
    if (i % FAULT_EVERY === 17) {
      kind.set(i, 'fault');
      const fault = FAULTS[Math.floor(i / FAULT_EVERY) % FAULTS.length]!;
      if (fault === 'transactions') fields.transactions = '-1';
      else if (fault === 'status') fields.status = 'gone';
      else if (fault === 'date') fields.date = '2026-02-30';
      else if (fault === 'amount') fields.amount = 'lots';
      else fields.email = `no-at-sign.${i}.example.com`;
    } else if (i % DUPLICATE_EVERY === 200 && !kind.has(source)) {
      // The email of a valid row written before, in other case, with other facts: a failure, the first row stays.
      kind.set(i, 'duplicate');
      fields.email = rows[source]!.email.toUpperCase();
      fields.name = `Repeat ${c.name}`;
      fields.transactions = String(c.totalTransactions + 1);
    }
    chunk += `${quote(fields.name)},${fields.email},${quote(fields.country)},${fields.transactions},${fields.amount},${fields.date},${fields.status}\n`;
    if (kind.has(i)) failing.add(line);
    else {
      valid.set(c.email, {
        line,
        row: {
          email: c.email,
          name: c.name,
          country: c.country,
          country_key: countryKey(c.country),
          total_transactions: c.totalTransactions,
          amount_cents: c.amountCents,
          last_activity_at: Date.parse(fields.date),
          status: c.status,
        },
      });
    }
    if (i % 5000 === 4999) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
  assert.equal(valid.size + failing.size, ROWS, 'every email of a valid row is new (the generator makes them unique)');
  return { valid, failing };
}

before(async () => {
  url = await createDatabase('crash', { withSchema: true });
  engine = new PostgresEngine(url, { max: 2 });
  await notifyJobChanges(engine);
  expected = await writeFile(file);
});

after(async () => {
  await engine?.close();
  if (url) await dropDatabase(url);
});

/** Starts the service on the test's database; uploads wait in the test's folder, so a killed job's upload is removed with it. */
function start(): Promise<ChildService> {
  return launchService({ DATABASE_URL: url, TMPDIR: dir, ADMIN_EMAIL, INSTANCE_LEASE_MS: String(LEASE_MS), INSTANCE_HEARTBEAT_MS: String(HEARTBEAT_MS) });
}

/** Uploads the file as a CSV import job; returns its id. */
async function upload(service: ChildService, token: string): Promise<string> {
  const response = await fetch(`${service.url}/v1/customers/imports?fileName=customers.csv`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
    body: readFileSync(file),
    signal: AbortSignal.timeout(HTTP_MS),
  });
  const text = await response.text();
  assert.equal(response.status, 202, text);
  return (JSON.parse(text) as { id: string }).id;
}

/** Reads the job over HTTP. */
async function getJob(service: ChildService, token: string, id: string): Promise<Job> {
  const reply = await call<Job>(service.url, 'GET', `/v1/customers/imports/${id}`, { token, timeoutMs: HTTP_MS });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body;
}

/**
 * Resolves with the job once `done` holds of it, read over HTTP when listening starts and after each commit that
 * changes it; rejects naming `what` and the job as last read after `timeoutMs`.
 */
function waitForJob(service: ChildService, token: string, id: string, done: (job: Job) => boolean, what: string, timeoutMs: number): Promise<Job> {
  return waitForJobChange(engine, id, () => getJob(service, token, id), done, what, timeoutMs);
}

/** The line numbers failures.csv of the job lists, checked to be as many as its lines. */
async function failureLines(service: ChildService, token: string, id: string): Promise<number[]> {
  const response = await fetch(`${service.url}/v1/customers/imports/${id}/failures.csv`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(HTTP_MS) });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const records = text.split(/\r?\n/).filter((record) => record !== '');
  assert.equal(records.shift(), 'line,email,reason');
  return records.map((record) => {
    const line = /^(\d+),/.exec(record)?.[1];
    assert.ok(line, `a failures.csv record that does not start with its line: ${record}`);
    return Number(line);
  });
}

/** The stored customers, as the file must have them. */
async function storedRows(): Promise<StoredRow[]> {
  return engine.sql<StoredRow[]>`
    SELECT email, name, country, country_key, total_transactions, amount_cents, last_activity_at, status FROM customers`;
}

/** Asserts that each stored customer is the first valid row of its email in the file, field for field. */
function assertRowsFromFile(rows: StoredRow[]): void {
  const wrong = rows.filter((row) => JSON.stringify(row) !== JSON.stringify(expected.valid.get(row.email)?.row)).slice(0, 3);
  assert.deepEqual(
    wrong.map((row) => ({ stored: row, file: expected.valid.get(row.email)?.row })),
    [],
    'stored customers that are not the first valid row of their email in the file',
  );
}

/** The child service as the shared aggregate checks (test/support/aggregates.ts) talk to one: HTTP, SQL and its clock. */
function asTestService(service: ChildService): TestService {
  const query = async (text: string, ...params: unknown[]) => {
    let n = 0;
    return [...(await engine.sql.unsafe(text.replace(/\?/g, () => `$${++n}`), params as never[]))];
  };
  const adapted: Pick<TestService, 'request' | 'query' | 'queryValue'> & { clock: { now(): Date } } = {
    async request(method, path, options = {}) {
      const response = await fetch(service.url + path, {
        method,
        headers: { authorization: `Bearer ${options.token}`, ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(HTTP_MS),
      });
      const text = await response.text();
      return { status: response.status, headers: response.headers, text, body: text ? JSON.parse(text) : undefined };
    },
    query: query as TestService['query'],
    queryValue: (async (text: string, ...params: unknown[]) => {
      const [row] = await query(text, ...params);
      return row === undefined ? undefined : Object.values(row)[0];
    }) as TestService['queryValue'],
    // The service's own clock is the system's: the trend's months and the health's cut-off are taken from it.
    clock: { now: () => new Date() },
  };
  return adapted as unknown as TestService;
}

/** Asserts that the KPIs, health, trend, top list and an everyone segment's count equal naive SQL over `customers`. */
async function assertReadsExact(service: ChildService, token: string, count: number, label: string): Promise<void> {
  const adapted = asTestService(service);
  await assertAggregatesExact(adapted, token, label);
  assert.equal(await segmentCount(adapted, token, [{ field: 'totalTransactions', operator: 'gte', value: 0 }]), count, `${label}: an everyone segment's count`);
}

test('kill -9 during a CSV job on PostgreSQL: interrupted with the committed counts, reads exact, and the same file again stores only the rest', { timeout: 300_000 }, async () => {
  let service = await start();
  let token = await signInAdmin(service.url);
  const first = await upload(service, token);
  const seen = await waitForJob(service, token, first, (job) => job.imported >= KILL_AFTER || job.status !== 'running', `the job has committed ${KILL_AFTER} customers`, PROGRESS_MS);
  const killed = await service.kill();
  assert.equal(killed.signal, 'SIGKILL');
  assert.equal(seen.status, 'running', `the job ended before the kill (${JSON.stringify(seen)}): the file is too small to be cut`);

  service = await start();
  try {
    token = await signInAdmin(service.url);
    // The killed instance's lease ends at most LEASE_MS after the kill; the new one notices within a heartbeat.
    const interrupted = await waitForJob(service, token, first, (job) => job.status !== 'running', "the killed instance's job is marked", SETTLE_MS);
    const rows = await storedRows();
    assert.equal(interrupted.status, 'interrupted', JSON.stringify(interrupted));
    assert.ok(interrupted.finishedAt, 'an interrupted job has its finishedAt');
    assert.ok(rows.length >= seen.imported && rows.length < expected.valid.size, `${rows.length} customers stored, ${seen.imported} seen before the kill`);
    assert.equal(interrupted.imported, rows.length, 'imported: the customers the committed chunks stored');
    assert.equal(interrupted.updated, 0);
    const failed = await failureLines(service, token, first);
    assert.equal(interrupted.skipped, failed.length, 'skipped: the rows failures.csv lists');
    assert.ok(interrupted.skipped > 0, 'the committed part of the file had broken and repeated rows');
    assert.equal(interrupted.rowsRead, interrupted.imported + interrupted.skipped, 'every row read was stored or skipped');
    assert.deepEqual(failed.filter((line) => !expected.failing.has(line)), [], 'lines reported that a full import does not skip');
    assert.equal(new Set(failed).size, failed.length, 'a line is reported once');
    assertRowsFromFile(rows);
    await assertReadsExact(service, token, rows.length, 'after the restart');

    const again = await upload(service, token);
    const done = await waitForJob(service, token, again, (job) => job.status !== 'running', 'the second job has ended', JOB_MS);
    const all = await storedRows();
    const before = new Set(rows.map((row) => row.email));
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.equal(all.length, expected.valid.size, "the file's valid rows, each email once");
    assert.deepEqual(
      [done.rowsRead, done.imported, done.updated, done.skipped],
      [ROWS, expected.valid.size - before.size, 0, ROWS - (expected.valid.size - before.size)],
      'the second job stores only what the first did not',
    );
    // Skipped: every line but those of the customers this job stored (the first valid row of each new email).
    const storedNow = new Set([...expected.valid].filter(([email]) => !before.has(email)).map(([, { line }]) => line));
    const skippedNow = await failureLines(service, token, again);
    assert.equal(skippedNow.length, done.skipped, 'skipped: the rows failures.csv lists');
    assert.equal(new Set(skippedNow).size, skippedNow.length, 'a line is reported once');
    assert.ok(skippedNow.every((line) => line >= 2 && line <= ROWS + 1), 'every line reported is a row of the file');
    assert.deepEqual(
      skippedNow.filter((line) => storedNow.has(line)).slice(0, 5),
      [],
      'lines reported skipped whose row this job stored',
    );
    assertRowsFromFile(all);
    await assertReadsExact(service, token, all.length, 'after the second job');
    assert.equal((await getJob(service, token, first)).status, 'interrupted', 'the first job stays interrupted');
  } finally {
    await service.stop();
  }
});
