// The database file: upgrades, the version guard, and the in-memory segments engine's reloads.
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from './support/temp-dir.ts';
import { assertProblem, requestLogLines, startService } from './helpers.ts';
import { bulkInsertCustomers, openCustomers, repairInterruptedBulkLoad } from '../src/customers/index.ts';
import { openDatabase, SCHEMA_VERSION } from '../src/db/database.ts';
import { SqliteEngine } from '../src/db/engine.ts';
import { compileConditions } from '../src/domain/segments.ts';
import { createUserRepository } from '../src/db/users.ts';

const ROOT = new URL('..', import.meta.url);
const SCHEMA_V1 = readFileSync(new URL('test/fixtures/schema-v1.sql', ROOT), 'utf8');
const CURRENT_SCHEMA = readFileSync(new URL('schema.sql', ROOT), 'utf8');


/** Names of the tables and indexes schema.sql declares. */
function declared(sql: string, kind: 'TABLE' | 'INDEX'): string[] {
  return [...sql.matchAll(new RegExp(`CREATE\\s+(?:UNIQUE\\s+)?${kind}\\s+IF\\s+NOT\\s+EXISTS\\s+(\\w+)`, 'gi'))].map((m) => m[1]!);
}

/**
 * The shape of a database for comparing an upgraded one with a new one: every table with its columns
 * (by name: an upgrade's ALTER TABLE appends columns, so order and the stored SQL text may differ) and every index with its columns.
 */
function describe(db: Database.Database): Record<string, unknown> {
  const objects = db.prepare(`SELECT type, name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as {
    type: string;
    name: string;
  }[];
  return Object.fromEntries(
    objects.map(({ type, name }) => {
      const info = db.pragma(type === 'table' ? `table_info(${name})` : `index_info(${name})`) as { name: string; cid?: number; seqno?: number }[];
      const columns = info.map(({ cid: _cid, seqno: _seqno, ...column }) => column);
      if (type === 'table') columns.sort((a, b) => a.name.localeCompare(b.name));
      return [`${type} ${name}`, columns];
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Upgrades

test('a version-1 database upgrades in place: rows intact, user_version current, every table of schema.sql present', async () => {
  const path = join(tempDir(), 'v1.db');
  const old = new Database(path);
  old.exec(SCHEMA_V1);
  old.pragma('user_version = 1');
  const userRow = {
    id: 'user-1',
    email: 'kept@example.com',
    full_name: 'Kept User',
    role: 'marketing_lead',
    is_active: 1,
    password_hash: 'scrypt$32768$8$3$c2FsdA$a2V5',
    created_at: 1_700_000_000_000,
    updated_at: 1_700_000_100_000,
  };
  const tokenRow = {
    token_hash: 'a'.repeat(64),
    family_id: 'family-1',
    user_id: 'user-1',
    created_at: 1_700_000_000_000,
    expires_at: 1_700_604_800_000,
    revoked_at: null,
    revoked_reason: null,
  };
  old.prepare(
    `INSERT INTO users (id, email, full_name, role, is_active, password_hash, created_at, updated_at)
     VALUES (@id, @email, @full_name, @role, @is_active, @password_hash, @created_at, @updated_at)`,
  ).run(userRow);
  old.prepare(
    `INSERT INTO refresh_tokens (token_hash, family_id, user_id, created_at, expires_at, revoked_at, revoked_reason)
     VALUES (@token_hash, @family_id, @user_id, @created_at, @expires_at, @revoked_at, @revoked_reason)`,
  ).run(tokenRow);
  old.close();

  const db = openDatabase(path);
  try {
    assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    const users = db.prepare('SELECT * FROM users').all() as Record<string, unknown>[];
    assert.equal(users.length, 1);
    for (const [column, value] of Object.entries(userRow)) assert.equal(users[0]![column], value, `users.${column}`);
    const tokens = db.prepare('SELECT * FROM refresh_tokens').all() as Record<string, unknown>[];
    assert.equal(tokens.length, 1);
    for (const [column, value] of Object.entries(tokenRow)) assert.equal(tokens[0]![column], value, `refresh_tokens.${column}`);
    // The repository reads the upgraded row.
    assert.deepEqual(await createUserRepository(new SqliteEngine(db)).findUser('user-1'), {
      id: 'user-1',
      fullName: 'Kept User',
      email: 'kept@example.com',
      role: 'marketing_lead',
      isActive: true,
      createdAt: new Date(1_700_000_000_000).toISOString(),
    });

    const tables = declared(CURRENT_SCHEMA, 'TABLE');
    assert.ok(tables.includes('users') && tables.includes('refresh_tokens'), `tables parsed from schema.sql: ${tables.join(', ')}`);
    const present = new Set((db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[]).map((r) => r.name));
    for (const table of tables) assert.ok(present.has(table), `table ${table} is missing after the upgrade`);
    const indexes = new Set((db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index'`).all() as { name: string }[]).map((r) => r.name));
    for (const index of declared(CURRENT_SCHEMA, 'INDEX')) assert.ok(indexes.has(index), `index ${index} is missing after the upgrade`);

    // The upgraded database has the same tables and columns as a new one.
    const fresh = openDatabase(join(tempDir(), 'fresh.db'));
    try {
      assert.deepEqual(describe(db), describe(fresh));
    } finally {
      fresh.close();
    }
  } finally {
    db.close();
  }
});

test('a version-4 database upgrades to 5: campaigns gain the frozen-audience columns, empty, and keep their rows', () => {
  const path = join(tempDir(), 'v4.db');
  const made = openDatabase(path);
  for (const column of ['audience_conditions', 'audience_description', 'audience_size', 'approved_at']) made.exec(`ALTER TABLE campaigns DROP COLUMN ${column}`);
  made.prepare(
    `INSERT INTO campaigns (id, segment_id, segment_name, objective, channel, tone, title, message, call_to_action, status, model, created_by, created_at, updated_at)
     VALUES ('c1', 's1', 'Segment', 'Objective text', 'sms', 'friendly', 'T', 'M', 'C', 'approved', 'local', 'u1', 1, 2)`,
  ).run();
  made.pragma('user_version = 4');
  made.close();

  const db = openDatabase(path);
  try {
    assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    const row = db.prepare('SELECT id, status, audience_conditions, audience_description, audience_size, approved_at FROM campaigns').get();
    assert.deepEqual(row, { id: 'c1', status: 'approved', audience_conditions: null, audience_description: null, audience_size: null, approved_at: null });
    const fresh = openDatabase(join(tempDir(), 'fresh5.db'));
    try {
      assert.deepEqual(describe(db), describe(fresh));
    } finally {
      fresh.close();
    }
  } finally {
    db.close();
  }
});

test('opening a database twice is harmless: the schema is applied idempotently and data stays', () => {
  const path = join(tempDir(), 'twice.db');
  const first = openDatabase(path);
  first.prepare(`INSERT INTO users (id, email, full_name, role, password_hash, created_at, updated_at) VALUES ('u', 'u@example.com', 'U', 'admin', 'h', 1, 1)`).run();
  first.close();
  const second = openDatabase(path);
  try {
    assert.equal(second.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    assert.equal((second.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n, 1);
  } finally {
    second.close();
  }
});

test("the search index's merge settings are stored with it, in a new database and in one opened again", () => {
  const path = join(tempDir(), 'merge-settings.db');
  openDatabase(path).close();
  const db = openDatabase(path);
  try {
    const settings = Object.fromEntries((db.prepare('SELECT k, v FROM customer_search_config').raw().all() as [string, unknown][]).filter(([k]) => k.endsWith('merge')));
    // 16 segments merged at a time (imports rewrite each row's trigrams less often); a whole level only at 512.
    assert.deepEqual(settings, { automerge: 16, crisismerge: 512 });
  } finally {
    db.close();
  }
});

test('a database with a newer schema version than this release refuses to open', () => {
  const path = join(tempDir(), 'future.db');
  const future = new Database(path);
  future.exec(SCHEMA_V1);
  future.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
  future.close();

  assert.throws(() => openDatabase(path), /schema version/i);

  const check = new Database(path, { readonly: true });
  try {
    assert.equal(check.pragma('user_version', { simple: true }), SCHEMA_VERSION + 1, 'the refused database is left as it was');
  } finally {
    check.close();
  }
});

test('segments engine: after a failed reload the next count reloads again instead of serving frozen numbers', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'campaigns-audience-'));
  mkdirSync(folder, { recursive: true });
  const path = join(folder, 'a.db');
  const db = openDatabase(path);
  try {
    const { audience, store: customers } = openCustomers(new SqliteEngine(db));
    const record = (n: number) => ({
      name: `C${n}`,
      email: `c${n}@example.com`,
      country: 'France',
      totalTransactions: 1,
      amountCents: 100,
      lastActivityAt: Date.parse('2026-11-01T00:00:00Z'),
      status: 'active' as const,
    });
    await customers.insertCustomers([record(1)], new Date());
    assert.equal(await audience.count(compileConditions([], new Date())), 1);

    // Another process writes, and the reload that follows cannot open its connection.
    const other = new Database(path);
    other.exec(`UPDATE meta SET value = value + 1 WHERE key = 'customers_generation'`);
    other.close();
    renameSync(path, `${path}.away`);
    await assert.rejects(audience.count(compileConditions([], new Date())));
    renameSync(`${path}.away`, path);

    await customers.insertCustomers([record(2), record(3)], new Date());
    assert.equal(await audience.count(compileConditions([], new Date())), 3);
  } finally {
    db.close();
    rmSync(folder, { recursive: true, force: true });
  }
});

test('a bulk load that dies before its last transaction is finished by the recovery the next start runs: search index and aggregates match the rows', async () => {
  const { syntheticCustomers } = await import('../scripts/synthetic-customers.ts');
  const path = join(tempDir(), 'interrupted.db');
  const first = openDatabase(path);
  bulkInsertCustomers(first, syntheticCustomers(10, { seed: 1, firstSerial: 1 }), new Date()); // not empty: a live-table load
  const dying = function* () {
    yield* syntheticCustomers(60_000, { seed: 2, firstSerial: 100 }); // the first 50,000 commit as one batch
    throw new Error('killed');
  };
  assert.throws(() => bulkInsertCustomers(first, dying(), new Date()), /killed/);
  first.close();

  const db = openDatabase(path);
  try {
    assert.equal(db.prepare("SELECT count(*) FROM meta WHERE key = 'bulk_load_from'").pluck().get(), 1, 'opening the database repairs nothing');
    assert.equal(repairInterruptedBulkLoad(db), true);
    const rows = db.prepare('SELECT count(*) FROM customers').pluck().get() as number;
    assert.ok(rows >= 50_010, `${rows} rows`);
    const totals = db.prepare('SELECT sum(customers) AS n, sum(amount_cents) AS cents FROM customer_totals').get() as { n: number; cents: number };
    const actual = db.prepare('SELECT count(*) AS n, sum(amount_cents) AS cents FROM customers').get() as { n: number; cents: number };
    assert.deepEqual(totals, actual);
    assert.equal(db.prepare('SELECT sum(customers) FROM customer_days').pluck().get(), rows);
    assert.equal(db.prepare('SELECT sum(customers) FROM customer_countries').pluck().get(), rows);
    const last = db.prepare('SELECT id, email FROM customers ORDER BY id DESC LIMIT 1').get() as { id: number; email: string };
    const found = db.prepare('SELECT rowid FROM customer_search WHERE customer_search MATCH ?').pluck().all(`"${last.email}"`);
    assert.deepEqual(found, [last.id]);
    assert.equal(db.prepare("SELECT count(*) FROM meta WHERE key = 'bulk_load_from'").pluck().get(), 0);
  } finally {
    db.close();
  }
});

// A closed SQLite connection: /health says the instance cannot serve (503 unavailable, as on PostgreSQL when no primary
// answers, product.md section 13); any other request is the service's own failure.
test('a closed database connection is 503 unavailable on /health and 500 internal_error on every request, revealing nothing', async () => {
  const broken = await startService();
  try {
    const user = await broken.createUser('marketing_lead');
    const { accessToken } = await broken.signIn(user.email);
    broken.db.close(); // every query now throws "The database connection is not open"

    const health = await broken.request('GET', '/health');
    assertProblem(health, 503, 'unavailable');
    assert.equal(health.headers.get('retry-after'), '2');
    assert.ok(!/connection is not open/i.test(health.text), health.text);

    const me = await broken.request('GET', '/v1/me', { token: accessToken, headers: { 'x-request-id': 'unexpected-500' } });
    assertProblem(me, 500, 'internal_error');
    assert.ok(!/connection is not open/i.test(me.body.detail), me.body.detail);
    assert.ok(!/connection is not open|\.ts:\d+|at .*\(/i.test(me.text), `the response leaks internals: ${me.text}`);
    const lines = await requestLogLines(broken, 'unexpected-500');
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.status, 500);
    // The cause goes to the log (same trace id), not to the client.
    assert.ok(broken.logLines.some((line) => line.level === 'error' && line.traceId === 'unexpected-500'));
  } finally {
    try {
      await broken.close();
    } catch {
      // the database was closed above already
    }
  }
});
