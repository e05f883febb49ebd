// The database file (upgrades, version guard), configuration, and the first admin (product.md section 1).
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';
import { AudienceIndex } from '../src/db/audience-index.ts';
import { createCustomerRepository } from '../src/db/customers.ts';
import { openDatabase, SCHEMA_VERSION } from '../src/db/database.ts';
import { compileConditions } from '../src/domain/segments.ts';
import { createUserRepository } from '../src/db/users.ts';
import { verifyPassword } from '../src/domain/passwords.ts';
import { ensureFirstAdmin } from '../src/first-admin.ts';

const ROOT = new URL('..', import.meta.url);
const SCHEMA_V1 = readFileSync(new URL('test/fixtures/schema-v1.sql', ROOT), 'utf8');
const CURRENT_SCHEMA = readFileSync(new URL('schema.sql', ROOT), 'utf8');
const SECRET = 's'.repeat(32);
const NO_ADMIN = { email: undefined, password: undefined, name: undefined };

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'campaigns-db-test-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

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

test('a version-1 database upgrades in place: rows intact, user_version current, every table of schema.sql present', () => {
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
    assert.deepEqual(createUserRepository(db).findUser('user-1'), {
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

// ---------------------------------------------------------------------------------------------
// Configuration

function assertConfigError(env: Record<string, string>, variable: string): void {
  const dir = tempDir();
  assert.throws(
    () => loadConfig({ DATABASE_PATH: join(dir, 'config.db'), TOKEN_SECRET: SECRET, ...env }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
      assert.match(error.message, new RegExp(`^${variable}\\b`), error.message);
      return true;
    },
  );
}

test('config: PORT that is not a number is a ConfigError naming PORT', () => {
  assertConfigError({ PORT: 'abc' }, 'PORT');
  assertConfigError({ PORT: '65536' }, 'PORT');
});

test('config: an unknown LOG_LEVEL is a ConfigError naming LOG_LEVEL', () => {
  assertConfigError({ LOG_LEVEL: 'loud' }, 'LOG_LEVEL');
});

test('config: a TOKEN_SECRET shorter than 32 bytes is a ConfigError naming TOKEN_SECRET', () => {
  assertConfigError({ TOKEN_SECRET: 'x'.repeat(31) }, 'TOKEN_SECRET');
  assert.equal(loadConfig({ DATABASE_PATH: join(tempDir(), 'ok.db'), TOKEN_SECRET: 'x'.repeat(32) }).tokenSecret.length, 32);
});

test('config: ACCESS_TOKEN_TTL of 0 is a ConfigError naming ACCESS_TOKEN_TTL', () => {
  assertConfigError({ ACCESS_TOKEN_TTL: '0' }, 'ACCESS_TOKEN_TTL');
});

test('config: HEADERS_TIMEOUT_MS longer than REQUEST_TIMEOUT_MS, or not a number, is a ConfigError naming it', () => {
  assertConfigError({ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '4000' }, 'HEADERS_TIMEOUT_MS');
  assertConfigError({ HEADERS_TIMEOUT_MS: '2s' }, 'HEADERS_TIMEOUT_MS');
  assertConfigError({ REQUEST_TIMEOUT_MS: '0' }, 'REQUEST_TIMEOUT_MS');
});

test('config: the defaults are those of the product decisions', () => {
  const config = loadConfig({ DATABASE_PATH: join(tempDir(), 'defaults.db'), TOKEN_SECRET: SECRET });
  assert.equal(config.port, 3000);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.accessTokenTtlSeconds, 900);
  assert.equal(config.refreshTokenTtlSeconds, 604_800);
  assert.equal(config.logLevel, 'info');
  assert.deepEqual(config.corsOrigins, []);
  assert.equal(config.llm.provider, 'local');
  assert.equal(config.headersTimeoutMs, 10_000);
  assert.equal(config.requestTimeoutMs, 60_000);
});

test('config: without TOKEN_SECRET a secret is created beside the database with mode 0600 and reused', () => {
  const databasePath = join(tempDir(), 'nested', 'folder', 'campaigns.db');
  const secretFile = `${databasePath}.secret`;
  assert.equal(existsSync(secretFile), false);

  const first = loadConfig({ DATABASE_PATH: databasePath });
  assert.ok(existsSync(secretFile), 'the secret file was not created');
  assert.equal(statSync(secretFile).mode & 0o777, 0o600);
  assert.ok(first.tokenSecret.length >= 32, `secret of ${first.tokenSecret.length} bytes`);

  const second = loadConfig({ DATABASE_PATH: databasePath });
  assert.ok(second.tokenSecret.equals(first.tokenSecret), 'a second start uses another secret');
  assert.equal(statSync(secretFile).mode & 0o777, 0o600);

  const elsewhere = loadConfig({ DATABASE_PATH: join(tempDir(), 'other.db') });
  assert.ok(!elsewhere.tokenSecret.equals(first.tokenSecret), 'two databases share a secret');
});

// ---------------------------------------------------------------------------------------------
// The first admin

function emptyUsers() {
  const db = openDatabase(join(tempDir(), 'first-admin.db'));
  return { db, users: createUserRepository(db) };
}

test('first start without ADMIN_* creates admin@example.com with a generated password announced once', async () => {
  const { db, users } = emptyUsers();
  try {
    const announced: string[] = [];
    const now = new Date('2026-11-20T12:00:00.000Z');
    await ensureFirstAdmin(users, NO_ADMIN, now, (text) => announced.push(text));

    const all = users.listUsers();
    assert.equal(all.length, 1);
    const [admin] = all;
    assert.deepEqual({ ...admin, id: undefined }, {
      id: undefined,
      fullName: 'Administrator',
      email: 'admin@example.com',
      role: 'admin',
      isActive: true,
      createdAt: now.toISOString(),
    });
    assert.equal(announced.length, 1);
    assert.match(announced[0]!, /admin@example\.com/);
    const password = /password (\S+)/.exec(announced[0]!)?.[1];
    assert.ok(password, `no password in: ${announced[0]}`);
    assert.ok(password.length >= 8);
    const stored = users.findCredentials('admin@example.com');
    assert.ok(stored);
    assert.equal(await verifyPassword(password, stored.passwordHash), true, 'the announced password does not match');
  } finally {
    db.close();
  }
});

test('first start with ADMIN_EMAIL / ADMIN_PASSWORD / ADMIN_NAME creates that admin and never prints the password', async () => {
  const { db, users } = emptyUsers();
  try {
    const announced: string[] = [];
    const password = 'chosen admin password';
    await ensureFirstAdmin(users, { email: ' Boss@Example.COM ', password, name: 'The Boss' }, new Date(), (text) => announced.push(text));

    const all = users.listUsers();
    assert.equal(all.length, 1);
    assert.equal(all[0]!.email, 'boss@example.com');
    assert.equal(all[0]!.fullName, 'The Boss');
    assert.equal(all[0]!.role, 'admin');
    assert.equal(all[0]!.isActive, true);
    assert.ok(announced.every((text) => !text.includes(password)), `the password was announced: ${announced.join('')}`);
    const stored = users.findCredentials('boss@example.com');
    assert.ok(stored);
    assert.equal(await verifyPassword(password, stored.passwordHash), true);
  } finally {
    db.close();
  }
});

test('first start does nothing when users exist', async () => {
  const { db, users } = emptyUsers();
  try {
    const existing = users.insertUser({ email: 'someone@example.com', fullName: 'Someone', role: 'lifecycle_marketer', passwordHash: 'x' }, new Date());
    const announced: string[] = [];
    await ensureFirstAdmin(users, NO_ADMIN, new Date(), (text) => announced.push(text));
    await ensureFirstAdmin(users, { email: 'boss@example.com', password: 'chosen admin password', name: 'Boss' }, new Date(), (text) =>
      announced.push(text),
    );
    assert.deepEqual(users.listUsers(), [existing]);
    assert.deepEqual(announced, []);
  } finally {
    db.close();
  }
});

test('first start with a bad ADMIN_EMAIL or ADMIN_PASSWORD is a ConfigError naming it, and creates nobody', async () => {
  const { db, users } = emptyUsers();
  try {
    await assert.rejects(ensureFirstAdmin(users, { ...NO_ADMIN, email: 'not-an-email' }, new Date(), () => {}), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /^ADMIN_EMAIL\b/);
      return true;
    });
    await assert.rejects(ensureFirstAdmin(users, { ...NO_ADMIN, password: 'short' }, new Date(), () => {}), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /^ADMIN_PASSWORD\b/);
      return true;
    });
    assert.equal(users.countUsers(), 0);
  } finally {
    db.close();
  }
});

test('config: a stored secret that is not at least 32 bytes of hex stops start-up naming TOKEN_SECRET', () => {
  const folder = mkdtempSync(join(tmpdir(), 'campaigns-secret-'));
  try {
    for (const stored of ['z'.repeat(64), 'ab'.repeat(31), '']) {
      const databasePath = join(folder, 'x.db');
      writeFileSync(`${databasePath}.secret`, stored);
      assert.throws(() => loadConfig({ DATABASE_PATH: databasePath }), (error: unknown) => {
        return error instanceof ConfigError && error.message.startsWith('TOKEN_SECRET:');
      });
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test('segments engine: after a failed reload the next count reloads again instead of serving frozen numbers', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'campaigns-audience-'));
  mkdirSync(folder, { recursive: true });
  const path = join(folder, 'a.db');
  const db = openDatabase(path);
  try {
    const audience = new AudienceIndex(db);
    const customers = createCustomerRepository(db, (changes, generation) => audience.apply(changes, generation));
    const record = (n: number) => ({
      name: `C${n}`,
      email: `c${n}@example.com`,
      country: 'France',
      totalTransactions: 1,
      amountCents: 100,
      lastActivityAt: Date.parse('2026-11-01T00:00:00Z'),
      status: 'active' as const,
    });
    customers.insertCustomers([record(1)], new Date());
    assert.equal(await audience.count(compileConditions([], new Date())), 1);

    // Another process writes, and the reload that follows cannot open its connection.
    const other = new Database(path);
    other.exec(`UPDATE meta SET value = value + 1 WHERE key = 'customers_generation'`);
    other.close();
    renameSync(path, `${path}.away`);
    await assert.rejects(audience.count(compileConditions([], new Date())));
    renameSync(`${path}.away`, path);

    customers.insertCustomers([record(2), record(3)], new Date());
    assert.equal(await audience.count(compileConditions([], new Date())), 3);
  } finally {
    db.close();
    rmSync(folder, { recursive: true, force: true });
  }
});
