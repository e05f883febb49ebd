// CSV import jobs in one queue across instances (product.md section 13, issue 35): two services in this process on
// one database (short leases: INSTANCE_LEASE_MS 2000, INSTANCE_HEARTBEAT_MS 100), sharing the upload folder as two
// instances on one machine do. Jobs posted to A then B run in arrival order and read the same from both; a job of an
// instance gone is marked `interrupted` with its counts within lease + heartbeat and the queue goes on; a starting
// instance leaves a live instance's jobs (and their uploads) alone; an instance whose job was marked meanwhile writes
// no more of it. Progress is awaited on events: a trigger this test adds tells each commit that changes a job, and
// the services' own QUEUE_CHANNEL tells each end. Every wait is bounded.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PostgresEngine } from '../../src/db/pg-engine.ts';
import { startService, type TestService } from '../helpers.ts';
import { createDatabase, dropDatabase } from '../support/postgres.ts';
import { notifyJobChanges, waitForJobChange } from '../support/job-changes.ts';

/**
 * The services' lease: short, but not so short that a busy machine's event loop (both services, and the parsing of
 * their jobs, share this process) holds a heartbeat past it: at 600 ms, under load, A's running job was taken as gone.
 */
const LEASE_MS = 2_000;
const HEARTBEAT_MS = 100;
const ENV = { INSTANCE_LEASE_MS: String(LEASE_MS), INSTANCE_HEARTBEAT_MS: String(HEARTBEAT_MS), ACCESS_TOKEN_TTL: '86400' };
/** The channel the services tell each job's end on (src/customers/postgres/job-store.ts QUEUE_CHANNEL). */
const QUEUE_CHANNEL = 'import_jobs_ended';
/** A bound on every wait for a job to move: far above what it takes, so a stall fails instead of hanging. */
const WAIT_MS = 60_000;

let url: string;
/** The test's own connection to the shared database: its SQL, and LISTEN. */
let engine: PostgresEngine;
let a: TestService;
let b: TestService;
let token: string;

before(async () => {
  url = await createDatabase('import_queue', { withSchema: true });
  engine = new PostgresEngine(url, { max: 2 });
  await notifyJobChanges(engine);
  a = await startService({ databaseUrl: url, env: ENV });
  b = await startService({ databaseUrl: url, env: ENV });
  // A user made through A signs in on B: one database, one token secret.
  token = await a.tokenFor('lifecycle_marketer');
});

after(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await engine?.close();
  if (url) await dropDatabase(url);
});

interface Job {
  id: string;
  status: string;
  rowsRead: number;
  imported: number;
  skipped: number;
  finishedAt?: string;
}

/** A CSV of `n` rows on `domain`; every 1,000th row (from the 7th) has no name, so failures.csv is not empty. */
function csvOf(domain: string, n: number): string {
  const rows = Array.from({ length: n }, (_, i) => `p${i}@${domain},${i % 1000 === 7 ? '' : `Person ${i}`},Norway,1,5,2026-11-01,active`);
  return `email,name,country,orders,amount,last_activity,status\n${rows.join('\n')}\n`;
}

/** How many rows of csvOf(domain, n) are stored: all but the nameless ones. */
const storedOf = (n: number) => n - Math.floor((n + 992) / 1000);

/** Posts the file as a job to `service`; resolves to its id. */
async function post(service: TestService, csv: string): Promise<string> {
  const reply = await service.request('POST', '/v1/customers/imports', { token, raw: csv, headers: { 'content-type': 'text/csv' } });
  assert.equal(reply.status, 202, reply.text);
  return reply.body.id;
}

async function getJob(service: TestService, id: string): Promise<Job> {
  const reply = await service.request('GET', `/v1/customers/imports/${id}`, { token });
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

/**
 * Resolves with the job as `service` shows it once `done` holds: read when listening starts and after each commit
 * that changes it; rejects naming `what` and the job as last read after WAIT_MS.
 */
function waitForJob(service: TestService, id: string, done: (job: Job) => boolean, what: string): Promise<Job> {
  return waitForJobChange(engine, id, () => getJob(service, id), done, what, WAIT_MS);
}

const ended = (job: Job) => job.status !== 'running';

/** The seqs of jobs as the services tell their ends on QUEUE_CHANNEL, in commit order; `stop` stops listening. */
async function queueEnds() {
  const seqs: number[] = [];
  let listening!: () => void;
  const started = new Promise<void>((resolve) => (listening = resolve));
  const stop = engine.listen(QUEUE_CHANNEL, (payload) => seqs.push(Number(payload)), listening);
  await started;
  return { seqs, stop };
}

async function seqOf(id: string): Promise<number> {
  const [row] = await engine.sql<{ seq: number }[]>`SELECT seq FROM import_jobs WHERE id = ${id}`;
  return row!.seq;
}

/** The lowest and highest customer id stored on `domain`, and how many. */
async function idsOn(domain: string) {
  const [row] = await engine.sql<{ low: number; high: number; n: number }[]>`
    SELECT min(id) AS low, max(id) AS high, count(*) AS n FROM customers WHERE email LIKE ${`%@${domain}`}`;
  return row!;
}

async function failuresOf(service: TestService, id: string): Promise<string> {
  const reply = await service.request('GET', `/v1/customers/imports/${id}/failures.csv`, { token });
  assert.equal(reply.status, 200, reply.text);
  return reply.text;
}

describe('one queue across instances', () => {
  test('jobs posted to A then B run in arrival order, and each reads the same from both', async () => {
    const first = await post(a, csvOf('first.queue.example.com', 30_000));
    const second = await post(b, csvOf('second.queue.example.com', 2_000));
    const stillFirst = await getJob(b, first);
    assert.equal(stillFirst.status, 'running', 'the first job ended before the second was posted: too small for this test');
    const [doneFirst, doneSecond] = await Promise.all([
      waitForJob(a, first, ended, 'the first job has ended'),
      waitForJob(b, second, ended, 'the second job has ended'),
    ]);
    assert.deepEqual([doneFirst.status, doneFirst.imported, doneFirst.skipped], ['completed', 29_970, 30]);
    assert.deepEqual([doneSecond.status, doneSecond.imported, doneSecond.skipped], ['completed', 1_998, 2]);
    const [firstIds, secondIds] = [await idsOn('first.queue.example.com'), await idsOn('second.queue.example.com')];
    assert.equal(firstIds.n, 29_970);
    assert.ok(firstIds.high < secondIds.low, `B's job wrote between A's chunks: A's ids up to ${firstIds.high}, B's from ${secondIds.low}`);

    for (const id of [first, second]) {
      assert.deepEqual(await getJob(a, id), await getJob(b, id), `job ${id} reads the same from A and B`);
      const failures = await failuresOf(a, id);
      assert.equal(failures.split('\r\n').length - 2, id === first ? 30 : 2, 'failures.csv lists the skipped rows');
      assert.equal(await failuresOf(b, id), failures, `failures.csv of ${id} is the same from A and B`);
    }
    const lists = await Promise.all([a, b].map((service) => service.request('GET', '/v1/customers/imports?limit=2', { token })));
    for (const list of lists) assert.deepEqual(list.body.items.map((job: Job) => job.id), [second, first], 'listed newest first on both');
    assert.deepEqual(lists[0]!.body, lists[1]!.body);
  });

  test('a job of an instance gone is interrupted with its counts, and the next job waits for that', async () => {
    const ends = await queueEnds();
    try {
      // An instance whose lease ends in 1.5 s, holding a job that has committed some rows.
      const gone = `gone-${Date.now()}`;
      await engine.sql`INSERT INTO service_instances (id, started_at, expires_at) VALUES (${gone}, campaigns_now_ms(), campaigns_now_ms() + 1500)`;
      await engine.sql`INSERT INTO import_jobs (id, status, columns, ignored_columns, created_by, started_at, rows_read, imported, skipped, bytes_read, instance_id)
        VALUES (${`job-of-${gone}`}, 'running', '{"email":0}', '[]', 'user-1', 0, 12, 10, 2, 900, ${gone})`;
      // A job without an instance (moved from SQLite, or stored before instances were named) counts as gone at once.
      await engine.sql`INSERT INTO import_jobs (id, status, columns, ignored_columns, created_by, started_at, rows_read, imported, instance_id)
        VALUES (${`job-of-nobody-${gone}`}, 'running', '{"email":0}', '[]', 'user-1', 0, 3, 3, NULL)`;
      const next = await post(b, csvOf('after-gone.queue.example.com', 20));
      const [interrupted, done] = await Promise.all([
        waitForJob(a, `job-of-${gone}`, ended, "the gone instance's job is marked"),
        waitForJob(b, next, ended, 'the next job has ended'),
      ]);
      assert.deepEqual(
        [interrupted.status, interrupted.rowsRead, interrupted.imported, interrupted.skipped],
        ['interrupted', 12, 10, 2],
        'interrupted with the counts it had committed',
      );
      assert.ok(interrupted.finishedAt, 'an interrupted job has its finishedAt');
      assert.equal((await getJob(b, `job-of-nobody-${gone}`)).status, 'interrupted');
      assert.deepEqual([done.status, done.imported], ['completed', storedOf(20)]);
      // The next job waited for the gone one: their ends were told in that order.
      const [goneSeq, nextSeq] = [await seqOf(`job-of-${gone}`), await seqOf(next)];
      assert.ok(ends.seqs.indexOf(goneSeq) >= 0 && ends.seqs.indexOf(goneSeq) < ends.seqs.indexOf(nextSeq), `ends told: ${ends.seqs}; the gone job ${goneSeq}, the next ${nextSeq}`);
    } finally {
      ends.stop();
    }
  });

  test("a job naming a live instance that does not hold it (its insert's answer was lost) is interrupted by that instance, and the queue goes on", async () => {
    // A's own instance id, read from a job it ran.
    const mine = await post(a, csvOf('owner.queue.example.com', 5));
    await waitForJob(a, mine, ended, "A's first job has ended");
    const [row] = await engine.sql<{ instance_id: string }[]>`SELECT instance_id FROM import_jobs WHERE id = ${mine}`;
    const instanceOfA = row!.instance_id;
    const orphan = `orphan-${Date.now()}`;
    await engine.sql`INSERT INTO import_jobs (id, status, columns, ignored_columns, created_by, started_at, instance_id)
      VALUES (${orphan}, 'running', '{"email":0}', '[]', 'user-1', 0, ${instanceOfA})`;
    const next = await post(b, csvOf('after-orphan.queue.example.com', 10));
    const [interrupted, done] = await Promise.all([waitForJob(a, orphan, ended, 'the orphan is marked'), waitForJob(b, next, ended, 'the next job has ended')]);
    assert.equal(interrupted.status, 'interrupted');
    assert.deepEqual([done.status, done.imported], ['completed', storedOf(10)]);
  });

  test('the gone job is marked once the lease has ended, not before, and within lease + heartbeat', async () => {
    const gone = `late-${Date.now()}`;
    let marked!: (at: number) => void;
    const markedAt = new Promise<number>((resolve) => (marked = resolve));
    const seq = { value: -1 };
    let listening!: () => void;
    const started = new Promise<void>((resolve) => (listening = resolve));
    const stop = engine.listen(QUEUE_CHANNEL, (payload) => Number(payload) === seq.value && marked(Date.now()), listening);
    try {
      await started;
      const [lease] = await engine.sql<{ expires: number; now: number }[]>`
        INSERT INTO service_instances (id, started_at, expires_at) VALUES (${gone}, campaigns_now_ms(), campaigns_now_ms() + 800)
        RETURNING expires_at AS expires, campaigns_now_ms() AS now`;
      const startedAt = Date.now();
      const [row] = await engine.sql<{ seq: number }[]>`INSERT INTO import_jobs (id, status, columns, ignored_columns, created_by, started_at, instance_id)
        VALUES (${`job-of-${gone}`}, 'running', '{"email":0}', '[]', 'user-1', 0, ${gone}) RETURNING seq`;
      seq.value = row!.seq;
      const timer = setTimeout(() => marked(Number.NaN), WAIT_MS);
      const at = await markedAt;
      clearTimeout(timer);
      assert.ok(!Number.isNaN(at), 'the job of the gone instance was never marked');
      const leaseLeft = lease!.expires - lease!.now;
      const after = at - startedAt;
      assert.ok(after >= leaseLeft - 50, `marked ${after} ms after its instance's last renewal, while its lease ran ${leaseLeft} ms`);
      // A second and a half of room for a loaded machine: the spec's bound is 30 s.
      assert.ok(after <= leaseLeft + HEARTBEAT_MS + 1_500, `marked ${after} ms after, the lease ran ${leaseLeft} ms, the heartbeat is ${HEARTBEAT_MS} ms`);
    } finally {
      stop();
    }
  });

  test("an instance starting while another runs jobs leaves them and their uploads alone", async () => {
    const running = await post(a, csvOf('live.queue.example.com', 30_000));
    const waiting = await post(a, csvOf('live-next.queue.example.com', 50));
    await waitForJob(a, running, (job) => job.imported > 0 || ended(job), 'the running job has committed rows');
    // Same database, same upload folder: as a third instance started on A's machine.
    const c = await startService({ databaseUrl: url, env: ENV });
    try {
      const seen = await getJob(c, running);
      assert.equal(seen.status, 'running', 'the live instance\'s job is left running by the start');
      const [doneRunning, doneWaiting] = await Promise.all([
        waitForJob(c, running, ended, 'the running job has ended'),
        waitForJob(c, waiting, ended, 'the waiting job has ended'),
      ]);
      assert.deepEqual([doneRunning.status, doneRunning.imported], ['completed', 29_970]);
      assert.deepEqual([doneWaiting.status, doneWaiting.imported], ['completed', storedOf(50)], 'its upload was left in the shared folder');
    } finally {
      await c.close();
    }
  });

  test('a job marked interrupted by another instance while it runs: its instance writes no more of it, and runs the next', async () => {
    const domain = 'cut.queue.example.com';
    const cut = await post(b, csvOf(domain, 60_000));
    const next = await post(b, csvOf('cut-next.queue.example.com', 10));
    await waitForJob(b, cut, (job) => job.imported > 0 || ended(job), 'the job has committed rows');
    // As an instance that saw B's lease end would: B was cut off from the database past its lease.
    // A chunk under way commits first (it holds the job's row), so these are the counts of every chunk committed.
    const [cutAt] = await engine.sql<{ rows_read: number; imported: number }[]>`
      UPDATE import_jobs SET status = 'interrupted', finished_at = 1 WHERE id = ${cut} AND status = 'running' RETURNING rows_read, imported`;
    assert.ok(cutAt, 'the job ended before it could be marked: too small for this test');
    const done = await waitForJob(b, next, ended, 'the next job has ended');
    assert.deepEqual([done.status, done.imported], ['completed', storedOf(10)]);
    // B's run of the cut job has stopped: B runs one job at a time, and the next has run.
    const job = await getJob(a, cut);
    assert.equal(job.status, 'interrupted', 'the job stays interrupted: its instance did not mark it ended');
    assert.deepEqual([job.rowsRead, job.imported], [cutAt.rows_read, cutAt.imported], 'no chunk was counted after the job was marked');
    assert.equal((await idsOn(domain)).n, job.imported, 'no chunk was committed after the job was marked: its counts are what is stored');
  });
});
