// Backups (product.md section 9): a consistent copy while imports write, a service restored from it answering what
// its rows say, the schedule keeping BACKUP_KEEP files, a failed backup that stops nothing, `npm run backup`, and
// the three variables.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { backupDatabase } from '../src/backup/index.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { healthOf } from '../src/domain/customers.ts';
import { startService, type TestService } from './helpers.ts';
import { tempDir } from './support/temp-dir.ts';

const ROOT = new URL('../', import.meta.url);
const STATUSES = ['active', 'inactive', 'churned'] as const;
const COUNTRIES = ['Germany', 'France', 'United Kingdom', 'Portugal'];
const DAY_MS = 86_400_000;
/** The test clock's "now" (helpers.ts), which the restored service shares. */
const NOW = Date.parse('2026-11-20T12:00:00.000Z');

/** Import batch `n`: 1000 valid rows whose emails end in `@b<n>.backup.test`, values a function of `n` and the row. */
function batch(n: number): unknown[] {
  return Array.from({ length: 1000 }, (_, i) => ({
    name: `Backup ${n}-${i}`,
    email: `c${i}@b${n}.backup.test`,
    country: COUNTRIES[(n + i) % COUNTRIES.length],
    totalTransactions: (i * 7 + n) % 40,
    totalAmountSpent: ((i * 7919 + n * 104_729) % 500_000) / 100,
    lastActivityDate: new Date(NOW - ((i * 31 + n * 17) % 720) * DAY_MS).toISOString().slice(0, 10),
    status: STATUSES[(i + n) % 3],
  }));
}

/** Keeps `clients` imports of 1000 rows in flight until `stop` is called; each must be stored whole. */
function importContinuously(service: TestService, token: string, clients = 4) {
  let next = 0;
  let running = true;
  let inFlight = 0;
  const acknowledged = new Set<number>();
  const waiters: (() => void)[] = [];
  const client = async () => {
    while (running) {
      const n = next++;
      inFlight++;
      const reply = await service.request('POST', '/v1/customers/import', { token, body: { customers: batch(n) } });
      inFlight--;
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual({ imported: reply.body.imported, skipped: reply.body.skipped }, { imported: 1000, skipped: 0 });
      acknowledged.add(n);
      for (const wake of waiters.splice(0)) wake();
    }
  };
  const done = Promise.all(Array.from({ length: clients }, client));
  return {
    acknowledged,
    inFlight: () => inFlight,
    /** Resolves once `count` imports have been acknowledged. */
    async until(count: number) {
      // A failed import rejects `done`, and with it this wait.
      while (acknowledged.size < count) await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), done]);
    },
    async stop() {
      running = false;
      await done;
    },
  };
}

/** Asks `GET /health` back to back until `done` settles; returns how many answers came before it did. */
async function healthAnswersDuring(url: string, done: Promise<unknown>): Promise<number> {
  let finished = false;
  void done.finally(() => (finished = true)).catch(() => {});
  let answers = 0;
  while (!finished) {
    const reply = await fetch(`${url}/health`);
    await reply.arrayBuffer();
    assert.equal(reply.status, 200);
    if (!finished) answers++;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return answers;
}

/** What the aggregates endpoints must answer for the rows of the database at `path`. */
function expectedFromRows(path: string) {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    const counts = { active: 0, inactive: 0, churned: 0 };
    let cents = 0;
    for (const row of db.prepare('SELECT status, count(*) AS n, sum(amount_cents) AS c FROM customers GROUP BY status').all() as { status: keyof typeof counts; n: number; c: number }[]) {
      counts[row.status] = row.n;
      cents += row.c;
    }
    const total = counts.active + counts.inactive + counts.churned;
    const staleActives = db.prepare(`SELECT count(*) FROM customers WHERE status = 'active' AND last_activity_at < ?`).pluck().get(NOW - 60 * DAY_MS) as number;
    const perBatch = new Map<number, number>();
    for (const { domain, n } of db.prepare(`SELECT substr(email, instr(email, '@') + 1) AS domain, count(*) AS n FROM customers GROUP BY domain`).all() as { domain: string; n: number }[]) {
      perBatch.set(Number(/^b(\d+)\.backup\.test$/.exec(domain)![1]), n);
    }
    const count = (where: string, ...params: unknown[]) => db.prepare(`SELECT count(*) FROM customers WHERE ${where}`).pluck().get(...params) as number;
    return {
      perBatch,
      kpis: {
        totalCustomers: total,
        activeCustomers: counts.active,
        totalTransactionValue: cents / 100,
        averageCustomerValue: total === 0 ? 0 : Math.round(cents / total) / 100,
        statusCounts: counts,
      },
      health: healthOf(counts, staleActives),
      totals: {
        all: total,
        churned: counts.churned,
        germany: count(`country_key = 'germany'`),
        germanyActive: count(`country_key = 'germany' AND status = 'active'`),
      },
      byAmount: (db.prepare('SELECT id FROM customers ORDER BY amount_cents DESC, id DESC LIMIT 20').pluck().all() as number[]).map(String),
      sample: db.prepare('SELECT id, email, amount_cents, status FROM customers ORDER BY (id * 7919) % 10007 LIMIT 3').all() as { id: number; email: string; amount_cents: number; status: string }[],
    };
  } finally {
    db.close();
  }
}

test('a backup taken while imports write passes integrity_check, holds whole imports only, and a service on it answers what its rows say', { timeout: 60_000 }, async () => {
  const service = await startService({ env: { LOG_LEVEL: 'warn' } });
  const dir = tempDir('campaigns-backup-');
  const file = join(dir, 'during-imports.db');
  let restored: TestService | undefined;
  try {
    const token = await service.tokenFor('admin');
    const imports = importContinuously(service, token);
    await imports.until(3);
    assert.ok(imports.inFlight() > 0, 'imports are in flight when the backup starts');
    const storedBefore = new Set(imports.acknowledged);
    const backingUp = backupDatabase(service.config.databasePath, file);
    const healthAnswers = await healthAnswersDuring(service.url, backingUp);
    const backup = await backingUp;
    const acknowledgedDuring = imports.acknowledged.size - storedBefore.size;
    await imports.stop();

    assert.ok(acknowledgedDuring > 0, 'imports were acknowledged while the backup ran');
    // How long they waited is the bench's to measure (npm run bench: the backup while imports run), not a test's.
    assert.ok(healthAnswers > 0, 'GET /health was answered while the backup ran');
    assert.equal(backup.file, file);
    assert.equal(backup.bytes, statSync(file).size);
    assert.deepEqual(readdirSync(dir), ['during-imports.db'], 'no partial file is left beside the backup');

    const expected = expectedFromRows(file);
    for (const n of storedBefore) assert.equal(expected.perBatch.get(n), 1000, `batch ${n}, stored before the backup began, is in it whole`);
    for (const [n, rows] of expected.perBatch) assert.equal(rows, 1000, `batch ${n} is in the backup whole, not in part`);
    assert.ok(expected.kpis.totalCustomers < imports.acknowledged.size * 1000, 'the live database went on growing after the copy');

    restored = await startService({ databasePath: file, env: { LOG_LEVEL: 'warn' } });
    // The user, the secret (the same TOKEN_SECRET) and the session's token all carry over to the restored service.
    const get = async (path: string) => {
      const reply = await restored!.request('GET', path, { token });
      assert.equal(reply.status, 200, `${path}: ${reply.text}`);
      return reply.body;
    };
    assert.deepEqual(await get('/v1/customers/kpis'), expected.kpis);
    assert.deepEqual(await get('/v1/customers/health'), expected.health);
    assert.equal((await get('/v1/customers?limit=1')).total, expected.totals.all);
    assert.equal((await get('/v1/customers?status=churned&limit=1')).total, expected.totals.churned);
    assert.equal((await get('/v1/customers?country=germany&limit=1')).total, expected.totals.germany);
    assert.equal((await get('/v1/customers?country=Germany&status=active&limit=1')).total, expected.totals.germanyActive);
    const byAmount = await get('/v1/customers?sort=totalAmountSpent&direction=desc&limit=20');
    assert.deepEqual(byAmount.items.map((c: { id: string }) => c.id), expected.byAmount);
    for (const row of expected.sample) {
      const customer = await get(`/v1/customers/${row.id}`);
      assert.deepEqual(
        { email: customer.email, totalAmountSpent: customer.totalAmountSpent, status: customer.status },
        { email: row.email, totalAmountSpent: row.amount_cents / 100, status: row.status },
      );
    }
  } finally {
    await restored?.close();
    await service.close();
  }
});

test('a backup never replaces an existing file and leaves nothing behind when it fails', { timeout: 60_000 }, async () => {
  const dir = tempDir('campaigns-backup-');
  const service = await startService({ env: { LOG_LEVEL: 'warn' } });
  try {
    const taken = join(dir, 'taken.db');
    writeFileSync(taken, 'not a backup');
    await assert.rejects(backupDatabase(service.config.databasePath, taken), /taken\.db already exists/);
    assert.equal(readFileSync(taken, 'utf8'), 'not a backup');
    await assert.rejects(backupDatabase(join(dir, 'missing.db'), join(dir, 'out.db')), /unable to open database file/);
    assert.deepEqual(readdirSync(dir), ['taken.db']);
  } finally {
    await service.close();
  }
});

interface Child {
  child: ChildProcessWithoutNullStreams;
  url: Promise<string>;
  lines: Record<string, unknown>[];
  /** Resolves with the first log line (already written or still to come) that `matches`; rejects after `timeoutMs`. */
  waitFor(matches: (line: Record<string, unknown>) => boolean, what: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
  stderr: () => string;
}

/** Starts the service as `npm start` does, on a free port with `env`, collecting its JSON log lines. */
function launch(env: Record<string, string>): Child {
  const child = spawn(process.execPath, ['scripts/start.js'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', ADMIN_PASSWORD: 'backup-admin-password', ...env },
  });
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  let pending = '';
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const complete = pending.split('\n');
    pending = complete.pop()!;
    for (const line of complete) lines.push(JSON.parse(line) as Record<string, unknown>);
    for (const wake of waiters) wake();
  });
  const waitFor = (matches: (line: Record<string, unknown>) => boolean, what: string, timeoutMs = 20_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`no log line ${what} within ${timeoutMs} ms; stderr: ${err}`)), timeoutMs);
      const check = () => {
        const found = lines.find(matches);
        if (found) finish(undefined, found);
      };
      const finish = (error?: Error, line?: Record<string, unknown>) => {
        clearTimeout(timer);
        waiters.delete(check);
        if (error) reject(error);
        else resolve(line!);
      };
      waiters.add(check);
      void exited.then((code) => finish(new Error(`the service exited (${code}) before logging ${what}: ${err}`)));
      check();
    });
  const url = waitFor((line) => line.msg === 'listening', '"listening"').then((line) => line.url as string);
  return { child, url, lines, waitFor, exited, stderr: () => err };
}

const isBackup = (line: Record<string, unknown>) => line.msg === 'backup';
const FINISHED_NAME = /^campaigns-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}Z\.db$/;

test('scheduled backups: one at start-up, then every BACKUP_EVERY_HOURS, the newest BACKUP_KEEP kept, partials of a crash removed', { timeout: 60_000 }, async () => {
  const dir = tempDir('campaigns-backup-schedule-');
  const backups = join(dir, 'backups');
  // What a crash in the middle of a backup leaves, and a file that is no backup.
  const crashed = '.campaigns-2026-01-01T00-00-00.000Z.db.partial';
  mkdirSync(backups);
  writeFileSync(join(backups, crashed), 'half a copy');
  writeFileSync(join(backups, `${crashed}-journal`), 'its journal');
  writeFileSync(join(backups, 'notes.txt'), 'not a backup: left alone');
  // 0.0002 hours is 0.72 s.
  const service = launch({ DATABASE_PATH: join(dir, 'live.db'), BACKUP_DIR: backups, BACKUP_EVERY_HOURS: '0.0002', BACKUP_KEEP: '2' });
  try {
    const first = await service.waitFor(isBackup, '"backup"');
    assert.ok(!existsSync(join(backups, crashed)) && !existsSync(join(backups, `${crashed}-journal`)), 'the partial of a crash is removed');
    await service.waitFor(() => service.lines.filter(isBackup).length >= 4, 'of a fourth backup');
    // A line is logged when its backup ends; it began `ms` earlier. Under load one backup can take longer than the next.
    const startedAt = (line: Record<string, unknown>) => Date.parse(String(line.time)) - Number(line.ms);
    const four = service.lines.filter(isBackup).slice(0, 4);
    assert.ok(startedAt(four[3]!) - startedAt(four[1]!) >= 2 * 720 - 100, 'backups come every 0.72 s, not faster');
    for (const line of four) {
      assert.equal(typeof line.ms, 'number');
      assert.equal(typeof line.bytes, 'number');
      assert.match(String(line.file), /campaigns-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}Z\.db$/);
    }
    assert.deepEqual(first.removed, []);
    assert.deepEqual(four[2]!.removed, [String(four[0]!.file).split('/').pop()], 'the third backup removes the first');
    const health = await fetch(`${await service.url}/health`);
    assert.equal(health.status, 200);
  } finally {
    service.child.kill('SIGTERM');
  }
  assert.equal(await service.exited, 0, service.stderr());
  // Stopping abandoned any backup under way: only finished backups, the newest two of those logged, and the stray file.
  const logged = service.lines.filter(isBackup).map((line) => String(line.file).split('/').pop()!);
  const left = readdirSync(backups).sort();
  assert.deepEqual(left, [...logged.slice(-2), 'notes.txt'].sort());
  for (const name of logged.slice(-2)) {
    assert.match(name, FINISHED_NAME);
    const db = new Database(join(backups, name), { readonly: true });
    try {
      assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
      assert.equal(db.prepare(`SELECT count(*) FROM users WHERE role = 'admin'`).pluck().get(), 1, 'the first admin is in every backup');
    } finally {
      db.close();
    }
  }
  assert.ok(logged.slice(-2)[0]! < logged.slice(-2)[1]!, 'names sort by time');
});

test('a failed backup logs an error, the service goes on serving and tries again on schedule', { timeout: 60_000 }, async () => {
  const dir = tempDir('campaigns-backup-fail-');
  writeFileSync(join(dir, 'a-file'), '');
  const service = launch({ DATABASE_PATH: join(dir, 'live.db'), BACKUP_DIR: join(dir, 'a-file', 'backups'), BACKUP_EVERY_HOURS: '0.0001' });
  try {
    const failed = await service.waitFor((line) => line.msg === 'backup failed', '"backup failed"');
    assert.equal(failed.level, 'error');
    assert.match(String(failed.error), /ENOTDIR/);
    assert.match(String(failed.file), /a-file\/backups\/campaigns-.*\.db$/);
    const url = await service.url;
    const signIn = await fetch(`${url}/v1/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@example.com', password: 'backup-admin-password' }),
    });
    assert.equal(signIn.status, 200);
    await service.waitFor((line) => line.msg === 'backup failed' && line !== failed, 'of a second failed backup');
    assert.equal((await fetch(`${url}/health`)).status, 200);
  } finally {
    service.child.kill('SIGTERM');
  }
  assert.equal(await service.exited, 0);
});

/** Runs `npm run backup -- ARGS` with `env`; resolves with its exit code and output. */
function npmBackup(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('npm', ['run', '--silent', 'backup', '--', ...args], { cwd: ROOT, env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

test('npm run backup -- --out FILE copies a live database; an existing FILE or no --out is refused with a clear message', { timeout: 60_000 }, async () => {
  const service = await startService({ env: { LOG_LEVEL: 'warn' } });
  const dir = tempDir('campaigns-backup-cli-');
  try {
    const token = await service.tokenFor('admin');
    const imports = importContinuously(service, token, 2);
    await imports.until(2);
    const out = join(dir, 'nested', 'cli.db');
    const env = { DATABASE_PATH: service.config.databasePath };
    const run = await npmBackup(['--out', out], env);
    const storedBefore = imports.acknowledged.size;
    await imports.stop();
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^Backed up .+ to .+cli\.db: [\d,]+ bytes in [\d,]+ ms, integrity_check ok\.\n$/);
    const expected = expectedFromRows(out);
    assert.ok(expected.kpis.totalCustomers >= 2000 && expected.kpis.totalCustomers <= imports.acknowledged.size * 1000);
    for (const [n, rows] of expected.perBatch) assert.equal(rows, 1000, `batch ${n} whole`);
    assert.ok(storedBefore >= 2);
    assert.deepEqual(readdirSync(join(dir, 'nested')), ['cli.db']);

    const before = statSync(out);
    const again = await npmBackup(['--out', out], env);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /cli\.db already exists; choose a new file name \(a backup never replaces a file\)/);
    assert.equal(statSync(out).mtimeMs, before.mtimeMs, 'the existing file is untouched');

    const missing = await npmBackup([], env);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /--out FILE is required/);
  } finally {
    await service.close();
  }
});

test('BACKUP_DIR, BACKUP_EVERY_HOURS and BACKUP_KEEP: defaults, decimals, and a ConfigError naming each bad one', () => {
  const base = { DATABASE_PATH: join(tempDir(), 'config.db'), TOKEN_SECRET: 's'.repeat(32) };
  assert.deepEqual(loadConfig(base).backup, { dir: undefined, everyHours: 24, keep: 7 });
  assert.deepEqual(loadConfig({ ...base, BACKUP_DIR: '/var/backups/campaigns', BACKUP_EVERY_HOURS: '0.5', BACKUP_KEEP: '30' }).backup, {
    dir: '/var/backups/campaigns',
    everyHours: 0.5,
    keep: 30,
  });
  assert.equal(loadConfig({ ...base, BACKUP_EVERY_HOURS: '0.0002' }).backup.everyHours, 0.0002);
  const bad: [Record<string, string>, string][] = [
    [{ BACKUP_EVERY_HOURS: 'daily' }, 'BACKUP_EVERY_HOURS'],
    [{ BACKUP_EVERY_HOURS: '0' }, 'BACKUP_EVERY_HOURS'],
    [{ BACKUP_EVERY_HOURS: '-1' }, 'BACKUP_EVERY_HOURS'],
    [{ BACKUP_EVERY_HOURS: '1e3' }, 'BACKUP_EVERY_HOURS'],
    [{ BACKUP_KEEP: '0' }, 'BACKUP_KEEP'],
    [{ BACKUP_KEEP: '2.5' }, 'BACKUP_KEEP'],
    [{ BACKUP_DIR: './backups', DATABASE_PATH: ':memory:' }, 'BACKUP_DIR'],
  ];
  for (const [env, variable] of bad) {
    assert.throws(
      () => loadConfig({ ...base, ...env }),
      (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${variable}: `),
      JSON.stringify(env),
    );
  }
});
