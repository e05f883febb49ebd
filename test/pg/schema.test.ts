// The PostgreSQL schema (src/db/postgres/schema.sql) and its creation and upgrades (migrate.ts), against the real
// server `npm run test:pg` starts (TEST_DATABASE_URL). Each test gets a database of its own, created empty.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import Database from 'better-sqlite3';
import { PostgresEngine } from '../../src/db/pg-engine.ts';
import { migratePostgres, PG_SCHEMA_VERSION, tokenSecretOf } from '../../src/db/postgres/migrate.ts';
import { createDatabase } from '../support/postgres.ts';

const engines: PostgresEngine[] = [];

after(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

/** Creates an empty database and returns its URL (the whole cluster goes when the tests end). */
const emptyDatabase = () => createDatabase('schema');

/** Returns a new engine on the database at `url` (an instance of the service), closed after the tests. */
function instance(url: string): PostgresEngine {
  const engine = new PostgresEngine(url, { max: 2 });
  engines.push(engine);
  return engine;
}

/** The tables of the database with their columns in order, and its indexes with their definitions. */
async function catalog(engine: PostgresEngine): Promise<{ columns: Map<string, string[]>; indexes: Map<string, string> }> {
  const columns = new Map<string, string[]>();
  const rows = await engine.sql<{ table_name: string; column_name: string }[]>`
    SELECT table_name, column_name FROM information_schema.columns
    WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`;
  for (const { table_name, column_name } of rows) columns.set(table_name, [...(columns.get(table_name) ?? []), column_name]);
  const indexes = new Map<string, string>();
  for (const { indexname, indexdef } of await engine.sql<{ indexname: string; indexdef: string }[]>`
    SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()`) {
    indexes.set(indexname, indexdef);
  }
  return { columns, indexes };
}

const versionRows = (engine: PostgresEngine) =>
  engine.sql<{ version: number; upgraded_at: string; xmin: string }[]>`SELECT version, upgraded_at, xmin::text FROM schema_version`;

test('instances starting at once on an empty database create the schema once and record one version', async () => {
  const url = await emptyDatabase();
  const starting = [instance(url), instance(url), instance(url)];
  await Promise.all(starting.map((engine) => migratePostgres(engine)));
  const rows = await versionRows(starting[0]!);
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.version, PG_SCHEMA_VERSION);
});

test('a database of version 1 (one instance per database) is upgraded to the schema of several instances, as a fresh one', async () => {
  const fresh = instance(await emptyDatabase());
  await migratePostgres(fresh);
  const engine = instance(await emptyDatabase());
  await migratePostgres(engine, { schemaVersion: 1 });
  // What version 2 added, taken away again: the database as version 1 left it, with a job and a proposal in it.
  await engine.sql.unsafe(`
    DROP TABLE service_instances, rate_windows, stream_slots;
    DROP FUNCTION campaigns_instance_alive(text), campaigns_now_ms();
    ALTER TABLE import_jobs DROP COLUMN instance_id;
    ALTER TABLE chat_actions DROP COLUMN running_on;
    INSERT INTO import_jobs (id, status, columns, ignored_columns, created_by, started_at) VALUES ('old-job', 'running', '{}', '[]', 'u', 0);`);
  await migratePostgres(engine);
  assert.deepEqual((await versionRows(engine)).map((r) => r.version), [PG_SCHEMA_VERSION]);
  assert.deepEqual(await catalog(engine), await catalog(fresh));
  const [job] = await engine.sql`SELECT status, instance_id FROM import_jobs WHERE id = 'old-job'`;
  assert.deepEqual({ ...job }, { status: 'running', instance_id: null }, 'a job of version 1 is kept, of no instance (marked interrupted at the next start)');
});

test('migrating a current database again changes nothing', async () => {
  const url = await emptyDatabase();
  const engine = instance(url);
  await migratePostgres(engine);
  const before = { version: await versionRows(engine), catalog: await catalog(engine) };
  await migratePostgres(engine);
  await migratePostgres(instance(url));
  assert.deepEqual({ version: await versionRows(engine), catalog: await catalog(engine) }, before);
});

test('a database of a newer schema version is refused, and left as it was', async () => {
  const url = await emptyDatabase();
  const engine = instance(url);
  await migratePostgres(engine, { schemaVersion: PG_SCHEMA_VERSION + 1 });
  await assert.rejects(
    migratePostgres(instance(url)),
    new Error(`The database has PostgreSQL schema version ${PG_SCHEMA_VERSION + 1}; this release knows up to ${PG_SCHEMA_VERSION}. Upgrade the service.`),
  );
  assert.deepEqual(
    (await versionRows(engine)).map((r) => r.version),
    [PG_SCHEMA_VERSION + 1],
  );
});

test('every table and index of the SQLite schema exists on PostgreSQL with the same columns in the same order', async () => {
  const sqlite = new Database(':memory:');
  sqlite.exec(readFileSync(new URL('../../schema.sql', import.meta.url), 'utf8'));
  // customer_search (FTS5, with its shadow tables) is SQLite's search index: on PostgreSQL an index of customers.
  const tables = sqlite
    .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'customer_search%'")
    .all()
    .map((t) => t.name);
  const sqliteIndexes = sqlite
    .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
    .all()
    .map((i) => i.name);
  const expected = new Map(tables.map((t) => [t, (sqlite.pragma(`table_info(${t})`) as { name: string }[]).map((c) => c.name)]));
  sqlite.close();
  assert.ok(tables.length >= 20, `the SQLite schema was read (${tables.length} tables)`);

  const engine = instance(await emptyDatabase());
  await migratePostgres(engine);
  const { columns, indexes } = await catalog(engine);
  // Which instance runs a job or a confirm: several instances exist on PostgreSQL only.
  const postgresColumns: Record<string, string[]> = { import_jobs: ['instance_id'], chat_actions: ['running_on'] };
  for (const [table, names] of expected) assert.deepEqual(columns.get(table), [...names, ...(postgresColumns[table] ?? [])], `the columns of ${table}`);
  const onlyPostgres = [...columns.keys()].filter((t) => !expected.has(t)).sort();
  assert.deepEqual(onlyPostgres, ['customer_changes', 'rate_windows', 'schema_version', 'service_instances', 'service_secrets', 'stream_slots']);
  for (const index of sqliteIndexes) assert.ok(indexes.has(index), `the index ${index}`);
  assert.match(indexes.get('customers_search') ?? '', /USING gin .*gin_trgm_ops/s);
});

test('the trigram index serves a case-insensitive substring search of name and email', async () => {
  const engine = instance(await emptyDatabase());
  await migratePostgres(engine);
  await engine.sql`
    INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
    SELECT 'Customer ' || md5(i::text), 'c' || i || '@example.com', 'Norway', 'norway', i, i * 100, i, 'active', 0, 0
    FROM generate_series(1, 5000) AS i`;
  await engine.sql`
    INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
    VALUES ('Zoë Quartermain', 'zq@Harbour.example', 'Norway', 'norway', 1, 100, 1, 'active', 0, 0)`;
  // VACUUM moves the new entries out of the GIN pending list, as autovacuum would: the planner then prices the
  // index as it will be on a table that has lived a while.
  await engine.sql`VACUUM ANALYZE customers`;
  const search = (pattern: string) => engine.sql<{ name: string }[]>`
    SELECT name FROM customers WHERE name || E'\n' || email ILIKE ${pattern}`;
  assert.deepEqual((await search('%QUARTERM%')).map((r) => r.name), ['Zoë Quartermain']);
  assert.deepEqual((await search('%harbour%')).map((r) => r.name), ['Zoë Quartermain']);
  const plan = await engine.sql.unsafe(`EXPLAIN SELECT id FROM customers WHERE name || E'\\n' || email ILIKE '%quarterm%'`);
  const text = plan.map((row) => row['QUERY PLAN'] as string).join('\n');
  assert.match(text, /customers_search/, text);
});

test('instances asking at once for the token secret share one, generated once; a configured one wins', async () => {
  const url = await emptyDatabase();
  const [first, second] = [instance(url), instance(url)];
  await migratePostgres(first);
  const secrets = await Promise.all([tokenSecretOf(first), tokenSecretOf(second), tokenSecretOf(first)]);
  assert.equal(secrets[0]!.length, 32);
  assert.deepEqual(secrets[1], secrets[0]);
  assert.deepEqual(secrets[2], secrets[0]);
  assert.deepEqual(await tokenSecretOf(instance(url)), secrets[0], 'a later instance reads it again');
  const configured = 'x'.repeat(40);
  assert.deepEqual(await tokenSecretOf(first, configured), Buffer.from(configured));
  await assert.rejects(tokenSecretOf(first, 'short'), /TOKEN_SECRET: must be at least 32 bytes long/);
});

test('the checks of the SQLite schema hold: JSON columns parse, segment conditions are an array, flags are 0 or 1', async () => {
  const engine = instance(await emptyDatabase());
  await migratePostgres(engine);
  const segment = (conditions: string) => engine.sql`
    INSERT INTO segments (id, name, conditions, match_count, created_at, updated_at)
    VALUES (${randomUUID()}, 'S', ${conditions}, 0, 0, 0)`;
  await segment('[{"id":"c1"}]');
  await assert.rejects(segment('{"id":"c1"}'), /segments_conditions_check/);
  await assert.rejects(segment('[not json'), /invalid input syntax for type json/);
  const user = (isActive: number) => engine.sql`
    INSERT INTO users (id, email, full_name, role, is_active, password_hash, created_at, updated_at)
    VALUES (${randomUUID()}, ${`${randomUUID()}@example.com`}, 'U', 'admin', ${isActive}, 'x', 0, 0)`;
  await user(1);
  await assert.rejects(user(2), /users_is_active_check/);
});
