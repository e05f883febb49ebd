// CSV import jobs on PostgreSQL (src/customers/postgres/import-jobs.ts) at the ImportJobs level, against the real
// server `npm run test:pg` starts, in a database of this file's own. Each file is also run by the SQLite jobs (a temp
// file) after the same stored customers: the jobs, their skipped rows with their reasons and the stored customers
// must be the same. Then what only PostgreSQL shows: the counts equal the stored rows, the aggregate tables equal a
// naive GROUP BY, `onFinish` writes in the job's end transaction, a job stopped by `close` (or left running by a
// stopped process) is `interrupted` with exact counts, and other writes wait little while a job runs. Jobs are
// awaited through `onEnd`, never a sleep.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { PgChangeFeed, createPgImportJobs, type PgImportJobs, createPgCustomerRepository, type CustomerRepository, CUSTOMER_FIELDS, type Upload } from '../../src/customers/index.ts';
import { openCustomers, openImportJobs, type Customers, type ImportJob, type ImportJobs, type SkippedRow } from '../../src/customers/index.ts';
import { openSqliteEngine, type SqliteEngine } from '../../src/db/engine.ts';
import type { PostgresEngine } from '../../src/db/pg-engine.ts';
import { DAY_MS, type CustomerRecord } from '../../src/domain/customers.ts';
import { freshInstances } from '../support/postgres.ts';
import { tempDir } from '../support/temp-dir.ts';

const NOW_MS = Date.parse('2026-11-20T12:00:00.000Z');
const clock = () => new Date(NOW_MS);
const STATUSES = ['active', 'inactive', 'churned'] as const;
const COUNTRIES = ['France', 'france ', 'Spain', 'Norway', 'Ghana'];
const HEADER = 'E-mail,Full Name,Country,Orders,Amount,Last Activity,STATUS,Notes';

let engine: PostgresEngine;
let feed: PgChangeFeed;
let pgStore: CustomerRepository;
let pgJobs: PgImportJobs;
let sqlite: SqliteEngine;
let lite: Customers;
let liteJobs: ImportJobs;
const folder = tempDir('campaigns-pg-import-jobs-');

/** Resolves each job's end as `onEnd` hears it. */
function endings() {
  const ended = new Map<string, ImportJob>();
  const waiting = new Map<string, (job: ImportJob) => void>();
  const order: string[] = [];
  return {
    /** The jobs' ids in the order they ended. */
    order,
    onEnd(job: ImportJob) {
      order.push(job.id);
      ended.set(job.id, job);
      waiting.get(job.id)?.(job);
    },
    of(id: string): Promise<ImportJob> {
      const done = ended.get(id);
      return done ? Promise.resolve(done) : new Promise((resolve) => waiting.set(id, resolve));
    },
  };
}
const pgEnds = endings();
const liteEnds = endings();

before(async () => {
  [engine] = (await freshInstances('import_jobs', 1)) as [PostgresEngine];
  feed = new PgChangeFeed(engine, { pruneEvery: 0 });
  await feed.start();
  pgStore = createPgCustomerRepository(engine, feed);
  pgJobs = createPgImportJobs(engine, pgStore, feed, {
    folder: join(folder, 'pg'),
    maxBytes: 1e9,
    clock,
    onEnd: pgEnds.onEnd,
    onFinish: async (job, tx) => {
      await tx`INSERT INTO service_secrets (name, value, created_at) VALUES (${`finished ${job.id}`}, ${`${job.status} ${job.imported}`}, 0)`;
    },
  });
  sqlite = openSqliteEngine(join(folder, 'same.db'));
  lite = openCustomers(sqlite);
  liteJobs = openImportJobs(lite.imports, lite.store, { folder: join(folder, 'lite'), maxBytes: 1e9, clock, onEnd: liteEnds.onEnd });
});
after(async () => {
  await pgJobs.close();
  await feed.close();
  await engine.close();
  await sqlite.close();
});

/** The file as an upload body, in pieces as a request brings it. */
const body = (csv: string): AsyncIterator<Buffer> => Readable.from(chunksOf(Buffer.from(csv)))[Symbol.asyncIterator]();
function* chunksOf(bytes: Buffer) {
  for (let at = 0; at < bytes.length; at += 64 * 1024) yield bytes.subarray(at, at + 64 * 1024);
}

const upload = (extra: Partial<Upload> = {}): Upload => ({ fileName: 'customers.csv', declaredBytes: undefined, createdBy: 'user-1', ...extra });

/** Runs the file as a job and resolves to the job as it ended and its skipped rows. */
async function runJob(jobs: ImportJobs, ends: ReturnType<typeof endings>, csv: string, extra: Partial<Upload> = {}) {
  const accepted = await jobs.accept(body(csv), upload(extra));
  assert.equal(accepted.status, 'running');
  const job = await ends.of(accepted.id);
  assert.deepEqual(await jobs.getJob(job.id), job, 'the job as stored is the job as it ended');
  return { job, skipped: await skippedOf(jobs, job.id) };
}

async function skippedOf(jobs: ImportJobs, id: string): Promise<SkippedRow[]> {
  const rows: SkippedRow[] = [];
  for await (const page of await jobs.skippedRows(id)) rows.push(...page);
  return rows;
}

/** Runs the file on both engines; asserts the same job (but its id), skipped rows and stored customers; resolves to PostgreSQL's. */
async function runOnBoth(csv: string, extra: Partial<Upload> = {}) {
  const [pg, sl] = await Promise.all([runJob(pgJobs, pgEnds, csv, extra), runJob(liteJobs, liteEnds, csv, extra)]);
  assert.deepEqual({ ...pg.job, id: '' }, { ...sl.job, id: '' }, 'the job');
  assert.deepEqual(pg.skipped, sl.skipped, 'the skipped rows, their reasons and order');
  assert.deepEqual(await pgCustomers(), liteCustomers(), 'the stored customers');
  return pg;
}

const COLUMNS = CUSTOMER_FIELDS.map((f) => f.column).join(', ');
async function pgCustomers() {
  return [...(await engine.sql.unsafe(`SELECT ${COLUMNS}, country_key FROM customers ORDER BY email`))].map((row) => ({ ...row }));
}
function liteCustomers() {
  return sqlite.db.prepare(`SELECT ${COLUMNS}, country_key FROM customers ORDER BY email`).all();
}

/** Stores the records on both engines, as the API would. */
async function storeOnBoth(records: CustomerRecord[]): Promise<void> {
  await pgStore.insertCustomers(records, clock());
  await lite.store.insertCustomers(records, clock());
}

function record(email: string, fields: Partial<CustomerRecord> = {}): CustomerRecord {
  return { name: `Stored ${email}`, email, country: 'Norway', totalTransactions: 4, amountCents: 1234, lastActivityAt: NOW_MS - 3 * DAY_MS, status: 'active', ...fields };
}

/**
 * A file of `n` rows on `domain`: each row's values follow from its number; some rows have no name or a bad number,
 * repeat the row before (in upper case: another run of the parser's sort), repeat a row 5,003 lines up (another
 * window and chunk), hold a stored email, span two lines, or cannot be read as CSV.
 */
function bigCsv(domain: string, n: number, stored: readonly string[]): string {
  const lines = [HEADER];
  for (let i = 0; i < n; i++) {
    let email = `p${i}@${domain}`;
    if (i % 1499 === 3 && i >= 5003) email = `p${i - 5003}@${domain}`;
    else if (i % 211 === 11) email = `P${i - 1}@${domain.toUpperCase()}`;
    else if (i % 401 === 13) email = stored[i % stored.length]!;
    const name = i % 997 === 5 ? '' : `Person ${i}`;
    const orders = i % 1013 === 7 ? 'many' : String(i % 17);
    const spent = i % 3 === 0 ? `"${i % 500},5"` : `${i % 900}.25`;
    const day = new Date(NOW_MS - (i % 700) * DAY_MS).toISOString().slice(0, 10);
    const notes = i % 500 === 9 ? '"two\r\nlines"' : 'n';
    lines.push(i === 4242 ? `"broken"x,${email}` : [email, name, COUNTRIES[i % COUNTRIES.length], orders, spent, day, STATUSES[i % 3], notes].join(','));
  }
  return `${lines.join('\n')}\n`;
}

/** Asserts that the aggregate tables equal a naive GROUP BY over customers. */
async function assertAggregatesExact(label: string): Promise<void> {
  const rows = async (text: string) => [...(await engine.sql.unsafe(text))].map((row) => ({ ...row }));
  assert.deepEqual(
    await rows('SELECT status, customers, amount_cents FROM customer_totals WHERE customers <> 0 OR amount_cents <> 0 ORDER BY status'),
    await rows('SELECT status, count(*) AS customers, sum(amount_cents)::bigint AS amount_cents FROM customers GROUP BY status ORDER BY status'),
    `${label}: customer_totals`,
  );
  assert.deepEqual(
    await rows('SELECT status, day, customers, amount_cents FROM customer_days ORDER BY status, day'),
    await rows(`SELECT status, floor(last_activity_at / ${DAY_MS}::numeric)::integer AS day, count(*) AS customers, sum(amount_cents)::bigint AS amount_cents
                FROM customers GROUP BY 1, 2 ORDER BY 1, 2`),
    `${label}: customer_days`,
  );
  assert.deepEqual(
    await rows('SELECT country_key, status, customers FROM customer_countries ORDER BY country_key, status'),
    await rows('SELECT country_key, status, count(*) AS customers FROM customers GROUP BY country_key, status ORDER BY country_key, status'),
    `${label}: customer_countries`,
  );
}

async function countOn(domain: string): Promise<number> {
  const [row] = await engine.sql<{ n: number }[]>`SELECT count(*) AS n FROM customers WHERE email LIKE ${`%@${domain}`}`;
  return row!.n;
}

describe('the same file on both engines', () => {
  test('a small file: aliases, a column mapping, ignored columns, quoting, bad rows and repeats, with their lines and reasons', async () => {
    await storeOnBoth([record('taken@small.example.com')]);
    const csv =
      '\ufeffFull Name,E-mail,Country,Orders,Total_Spent,Last Activity,STATUS,Notes,Loyalty\r\n' +
      '"Lovelace, Ada",ada@small.example.com,France,3,120.50,2026-11-01,Active,"said ""hi""",gold\r\n' +
      'Taken again,TAKEN@small.example.com,France,1,1,2026-11-01,active,,\r\n' +
      '\r\n' +
      'No email,,France,1,10,2026-11-01,active,,\r\n' +
      'Bad number,bad@small.example.com,France,many,10,2026-11-01,active,,\r\n' +
      'Future,future@small.example.com,France,1,10,2026-12-25,active,,\r\n' +
      '"Quoted"x,quoted@small.example.com,France,1,10,2026-11-01,active,,\r\n' +
      '"Ada, again",ada@small.example.com,Spain,2,20,2026-11-02,active,"two\nlines",\r\n' +
      'Cy,cy@small.example.com,Italy,7,"99,99",2026-09-30T10:00:00+02:00,inactive,,\r\n' +
      '"Never closed,never@small.example.com,France,1,10,2026-11-01,active,,\r\n';
    const { job, skipped } = await runOnBoth(csv, { columns: new Map([['Loyalty', null]]) });
    assert.deepEqual([job.status, job.rowsRead, job.imported, job.updated, job.skipped], ['completed', 9, 3, 0, 6]);
    assert.deepEqual(job.ignoredColumns, ['Notes', 'Loyalty']);
    assert.deepEqual(
      skipped.map((s) => s.line),
      [3, 5, 6, 7, 9, 12],
    );
    assert.equal(skipped[4]!.reason, 'A customer with the email ada@small.example.com already exists.');
    assert.equal(skipped[5]!.reason, 'This row opens a quote that is never closed, so it could not be read.');
  });

  test('a file of many chunks, skipping stored emails: the same on both, counts equal to the stored rows, aggregates exact', async () => {
    const stored = Array.from({ length: 7 }, (_, k) => `s${k}@skip.example.com`);
    await storeOnBoth(stored.map((email) => record(email)));
    const before = await countOn('skip.example.com');
    const csv = bigCsv('skip.example.com', 12_000, stored);
    const { job, skipped } = await runOnBoth(csv);
    assert.equal(job.status, 'completed');
    assert.equal(job.bytesRead, Buffer.byteLength(csv));
    assert.equal(job.rowsRead, 12_000);
    assert.ok(job.skipped > 60 && job.imported > 11_000, `${job.imported} imported, ${job.skipped} skipped`);
    assert.equal(job.imported + job.skipped, job.rowsRead);
    assert.equal(await countOn('skip.example.com'), before + job.imported, 'imported is what was stored');
    assert.ok(skipped.some((s) => s.reason.startsWith('A customer with the email s')), 'stored emails are reported');
    await assertAggregatesExact('after a skipping job');
  });

  test('a file of many chunks, updating stored emails: repeats across chunks reported, updates counted, aggregates exact', async () => {
    const stored = Array.from({ length: 9 }, (_, k) => `u${k}@update.example.com`);
    await storeOnBoth(stored.map((email) => record(email, { status: 'churned', amountCents: 99 })));
    const before = await countOn('update.example.com');
    const { job, skipped } = await runOnBoth(bigCsv('update.example.com', 12_000, stored), { onExisting: 'update' });
    assert.deepEqual([job.status, job.onExisting, job.rowsRead], ['completed', 'update', 12_000]);
    assert.equal(job.updated, stored.length, 'each stored customer updated once; its later rows are repeats');
    assert.equal(job.imported + job.updated + job.skipped, job.rowsRead);
    assert.equal(await countOn('update.example.com'), before + job.imported);
    assert.ok(skipped.some((s) => s.reason.includes('is on an earlier row of this file')), 'repeats are reported');
    await assertAggregatesExact('after an updating job');
  });

  test('updating: a row equal to the stored customer is an update, a changed one replaces it, a repeat is reported', async () => {
    const same = record('same@small-update.example.com', { name: 'Same One', country: 'Ghana', totalTransactions: 2, amountCents: 500, lastActivityAt: Date.parse('2026-11-01'), status: 'active' });
    const changed = record('changed@small-update.example.com', { name: 'Old Name', status: 'active' });
    await storeOnBoth([same, changed]);
    const csv = [
      'name,email,country,orders,amount,last_activity,status',
      'Same One,same@small-update.example.com,Ghana,2,5,2026-11-01,active',
      'New Name,CHANGED@small-update.example.com,Spain,9,12.5,2026-10-01,churned',
      'Newcomer,new@small-update.example.com,Ghana,5,1,2026-11-01,active',
      'Again,changed@small-update.example.com,Ghana,1,1,2026-11-01,active',
      'Bad Amount,same@small-update.example.com,Ghana,1,-3,2026-11-01,active',
    ].join('\n');
    const { job, skipped } = await runOnBoth(csv, { onExisting: 'update' });
    assert.deepEqual([job.rowsRead, job.imported, job.updated, job.skipped], [5, 1, 2, 2]);
    assert.deepEqual(skipped, [
      { line: 5, email: 'changed@small-update.example.com', reason: 'The email changed@small-update.example.com is on an earlier row of this file; only that row is imported.' },
      { line: 6, email: 'same@small-update.example.com', reason: 'Amount spent must be a number of 0 or more.' },
    ]);
    await assertAggregatesExact('after a small updating job');
  });

  test('the preview reads the same on both engines, stored emails from the store', async () => {
    const csv = 'name,email,country,orders,amount,last_activity,status\nSame One,same@small-update.example.com,Ghana,2,5,2026-11-01,active\nX,x@preview.example.com,Ghana,2,5,2026-11-01,active\n';
    const [pg, sl] = await Promise.all([pgJobs.preview(body(csv), { declaredBytes: undefined }), liteJobs.preview(body(csv), { declaredBytes: undefined })]);
    assert.deepEqual(pg, sl);
    assert.deepEqual(pg.problems.map((p) => p.line), [2], 'the stored email is taken when skipping');
  });
});

describe('PostgreSQL only', () => {
  test('onFinish writes in the transaction that ends the job, seeing the job as it ended', async () => {
    const { job } = await runJob(pgJobs, pgEnds, `${HEADER}\nf1@finish.example.com,F,France,1,1,2026-11-01,active,\n`);
    const [row] = await engine.sql<{ value: string }[]>`SELECT value FROM service_secrets WHERE name = ${`finished ${job.id}`}`;
    assert.equal(row?.value, 'completed 1');
  });

  test('jobs run one at a time in arrival order and are listed newest first', async () => {
    const files = [1, 2, 3].map((k) => `${HEADER}\n${Array.from({ length: 50 * k }, (_, i) => `o${k}-${i}@order.example.com,O,France,1,1,2026-11-01,active,`).join('\n')}\n`);
    const accepted: ImportJob[] = [];
    for (const csv of files) accepted.push(await pgJobs.accept(body(csv), upload()));
    const ids = accepted.map((a) => a.id);
    await Promise.all(ids.map((id) => pgEnds.of(id)));
    assert.deepEqual(
      pgEnds.order.filter((id) => ids.includes(id)),
      ids,
      'ended in arrival order',
    );
    const { items, total } = await pgJobs.listJobs(1, 3);
    assert.deepEqual(
      items.map((j) => j.id),
      [...ids].reverse(),
    );
    assert.deepEqual(
      items.map((j) => j.imported).reverse(),
      [50, 100, 150],
    );
    assert.ok(total >= 3);
  });

  test('other customer writes wait little while a job runs, and every one is stored', async () => {
    const [target] = await pgStore.insertCustomers([record('edited@waits.example.com')], clock());
    const rows = 40_000;
    const accepted = await pgJobs.accept(body(bigCsv('waits.example.com', rows, ['edited@waits.example.com'])), upload());
    let ended: ImportJob | undefined;
    void pgEnds.of(accepted.id).then((job) => (ended = job));
    const waits: number[] = [];
    while (!ended) {
      const started = performance.now();
      await pgStore.updateCustomer(target!, { totalTransactions: waits.length + 1 }, clock());
      waits.push(performance.now() - started);
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(ended.status, 'completed');
    const sorted = [...waits].sort((a, b) => a - b);
    const p99 = sorted[Math.floor(sorted.length * 0.99)]!;
    process.stderr.write(`# ${waits.length} edits during the job: p50 ${sorted[sorted.length >> 1]!.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms\n`);
    assert.ok(waits.length >= 5, `${waits.length} edits during the job`);
    assert.ok(sorted.at(-1)! < 1000, `an edit waited ${Math.round(sorted.at(-1)!)} ms`);
    assert.equal((await pgStore.findCustomer(target!))!.totalTransactions, waits.length, 'every edit is stored');
    assert.equal(await countOn('waits.example.com'), 1 + ended.imported);
    await assertAggregatesExact('after a job with edits');
  });

  test('close stops a running job after a chunk: interrupted, its counts equal to the stored rows, aggregates exact', async () => {
    const stopping = endings();
    const jobs = createPgImportJobs(engine, pgStore, feed, { folder: join(folder, 'stop'), maxBytes: 1e9, clock, onEnd: stopping.onEnd });
    const rows = 30_000;
    let closed: Promise<void> | undefined;
    const stopOnFirstChunk = feed.subscribe((changes) => {
      if (changes.length > 0) closed ??= jobs.close();
    });
    const accepted = await jobs.accept(body(bigCsv('stop.example.com', rows, ['nobody@stop.example.com'])), upload());
    while (!closed) await feed.nextChange();
    await closed;
    stopOnFirstChunk();
    const job = await pgJobs.getJob(accepted.id);
    assert.equal(job.status, 'interrupted');
    assert.equal(job.finishedAt, clock().toISOString());
    assert.ok(job.imported > 0 && job.rowsRead < rows, `${job.rowsRead} rows read`);
    assert.equal(await countOn('stop.example.com'), job.imported, 'the counts say exactly what was stored');
    assert.equal((await skippedOf(pgJobs, job.id)).length, job.skipped);
    await assert.rejects(jobs.accept(body(`${HEADER}\n`), upload()), /stopping/);
    await assertAggregatesExact('after a stopped job');
  });

  test('a job whose connections are all cut (a failover) ends failed with its committed counts; the process and the pool go on', { timeout: 60_000 }, async () => {
    const cut = endings();
    const jobs = createPgImportJobs(engine, pgStore, feed, { folder: join(folder, 'cut'), maxBytes: 1e9, clock, onEnd: cut.onEnd });
    try {
      const rows = 30_000;
      // Every session of this database but the one asking, as a primary going away ends them: the job's own (between
      // two chunks, or under a statement), the feed's listening one, the idle ones of the pool.
      let cutting: Promise<unknown> | undefined;
      const cutOnFirstChunk = feed.subscribe((changes) => {
        if (changes.length > 0) cutting ??= engine.write((tx) => tx`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
      });
      const accepted = await jobs.accept(body(bigCsv('cut.example.com', rows, ['nobody@cut.example.com'])), upload());
      while (!cutting) await feed.nextChange();
      await cutting;
      cutOnFirstChunk();
      const job = await cut.of(accepted.id);
      assert.equal(job.status, 'failed');
      assert.ok(job.imported > 0 && job.rowsRead < rows, `${job.rowsRead} rows read`);
      assert.equal(await countOn('cut.example.com'), job.imported, 'the counts say exactly what was stored');
      assert.equal((await skippedOf(pgJobs, job.id)).length, job.skipped);
      await assertAggregatesExact('after a cut job');
      // The process is alive (postgres.js 3.4 would have thrown, uncaught, on a statement sent on the lost connection),
      // and the next job runs on the pool.
      const next = await jobs.accept(body(`${HEADER}\nafter@cut.example.com,A,France,1,1,2026-11-01,active,\n`), upload());
      assert.deepEqual([(await cut.of(next.id)).status, (await cut.of(next.id)).imported], ['completed', 1]);
    } finally {
      await jobs.close();
    }
  });

  test('at start, the jobs a stopped process left running are interrupted; a new job then runs', async () => {
    await engine.sql`INSERT INTO import_jobs (id, status, columns, ignored_columns, created_by, started_at, rows_read, imported)
      VALUES ('left-running', 'running', '{"email":0}', '[]', 'user-1', ${NOW_MS - 1000}, 10, 10)`;
    const restarted = endings();
    const jobs = createPgImportJobs(engine, pgStore, feed, { folder: join(folder, 'restart'), maxBytes: 1e9, clock, onEnd: restarted.onEnd });
    try {
      const accepted = await jobs.accept(body(`${HEADER}\nr1@restart.example.com,R,France,1,1,2026-11-01,active,\n`), upload());
      const left = await jobs.getJob('left-running');
      assert.deepEqual([left.status, left.finishedAt, left.imported], ['interrupted', clock().toISOString(), 10]);
      const done = await restarted.of(accepted.id);
      assert.deepEqual([done.status, done.imported], ['completed', 1]);
    } finally {
      await jobs.close();
    }
    await assert.rejects(pgJobs.getJob('no-such-job'), (error: Error & { code?: string }) => error.code === 'not_found');
  });
});


