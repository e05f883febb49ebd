// `npm run move-to-postgres -- --from FILE --to URL`: copies a stopped SQLite database of this service, and the token
// secret kept beside it, into an empty PostgreSQL database, in ONE transaction (a failure leaves nothing): the schema
// is created there (migratePostgres), every table's rows stream from one read snapshot of FILE into COPY with the
// same values and ids, the identity sequences continue after the highest id SQLite ever handed out, and the customer
// change log gets one 'reload' row. Large tables' secondary indexes are built once after their rows are in (one sort
// beats a million index updates), and the customers triggers are off meanwhile: the aggregate tables are copied as
// SQLite kept them. Exit status: 0 moved, 1 refused or failed (nothing changed), 2 wrong arguments.
import { BULK_LOAD_KEY, RECOMPUTE_AGGREGATES_SQL, CHANGES_CHANNEL } from '../src/customers/index.ts';
import Database from 'better-sqlite3';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { SCHEMA_VERSION, type Db } from '../src/db/database.ts';
import { PostgresEngine, type PgSql } from '../src/db/pg-engine.ts';
import { lockSchema, migratePostgres } from '../src/db/postgres/migrate.ts';

const USAGE = `Usage: npm run move-to-postgres -- --from FILE --to URL
Copies the SQLite database FILE (stop the service first) and the token secret in FILE.secret into the PostgreSQL
database at URL (postgres:// or postgresql://), which must not hold this service's tables yet. Everything moves in
one transaction: a failure changes nothing. Then start the service with DATABASE_URL=URL (and without DATABASE_PATH).
Exit status: 0 moved, 1 refused or failed (nothing changed), 2 wrong arguments.`;

/** Every table of schema.sql, each after the tables its rows refer to (COPY checks foreign keys as it goes). */
const TABLES = [
  'users',
  'refresh_tokens',
  'segments',
  'campaigns',
  'campaign_events',
  'campaign_versions',
  'idempotency_keys',
  'chat_threads',
  'chat_messages',
  'chat_actions',
  'import_jobs',
  'import_failures',
  'webhooks',
  'webhook_events',
  'webhook_deliveries',
  'customers',
  'customer_totals',
  'customer_days',
  'customer_countries',
  'meta',
] as const;
/** Tables whose few rows are written with an upsert: schema.sql already puts a customers_generation row in meta. */
const UPSERTED = new Set<string>(['meta']);
/** The aggregate tables: copied as SQLite kept them, or recomputed when FILE holds an unfinished bulk load. */
const AGGREGATES = new Set<string>(['customer_totals', 'customer_days', 'customer_countries']);
/** Tables only PostgreSQL has (src/db/postgres/schema.sql): written here, never copied. */
const POSTGRES_ONLY = ['schema_version', 'customer_changes', 'service_secrets', 'service_instances', 'rate_windows', 'stream_slots'];
/**
 * Columns only PostgreSQL has, for several instances: left empty by the move (a moved job of no instance is one of
 * an instance that is gone, marked interrupted at the first start; a moved proposal is confirmed by no instance).
 */
const POSTGRES_ONLY_COLUMNS: Record<string, string[]> = { import_jobs: ['instance_id'], chat_actions: ['running_on'] };
/** SQLite's own tables and the FTS5 search index (on PostgreSQL a trigram index of customers, built from the rows). */
const sqliteOnly = (name: string) => /^sqlite_/.test(name) || name === 'customer_search' || name.startsWith('customer_search_');

const PROGRESS_EVERY = 100_000;
/** Rows per piece written to COPY: large enough to cost little per write, small enough to stream. */
const PIECE_ROWS = 1000;
/** Tables with more rows than this get their secondary indexes built after their rows are in. */
const INDEX_LATER_ABOVE = 50_000;

/** A refusal or failure: exit 1 with its message, nothing changed. */
class Refusal extends Error {}
/** Wrong arguments: exit 2 with the usage. */
class UsageError extends Error {}

/** FILE opened read-only, in one read transaction: what the move copies. */
interface Source {
  db: Db;
  /** The columns of each table, in SQLite's order. */
  columns: Map<string, string[]>;
  /** Each table's rows as lines of COPY text, in the order of `columns`. */
  lines: Map<string, Database.Statement>;
  /** The highest id each AUTOINCREMENT table ever handed out (sqlite_sequence), deleted rows included. */
  sequences: Map<string, number>;
  /** A seed killed part-way left rows the aggregates do not count yet (recovery.ts repairs that at the next start). */
  unfinishedBulkLoad: boolean;
  /** The generated token secret (hex) of FILE.secret, when there is one. */
  secret?: string;
}

/** What a move did, for the summary. */
export interface MoveSummary {
  rows: number;
  tables: number;
  customers: number;
  customersSeconds: number;
  seconds: number;
  interruptedJobs: string[];
  secretMoved: boolean;
  unrelatedTables: string[];
  aggregatesRecomputed: boolean;
}

/** Returns FILE opened read-only and checked to be this release's database; throws Refusal otherwise. */
function openSource(file: string): Source {
  if (file === ':memory:' || !existsSync(file)) throw new Refusal(`There is no database file at ${file}.`);
  let db: Db;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new Refusal(`Could not open ${file}: ${(error as Error).message}.`);
  }
  try {
    let version: number;
    try {
      version = db.pragma('user_version', { simple: true }) as number;
    } catch (error) {
      throw new Refusal(`${file} is not a SQLite database (${(error as Error).message}).`);
    }
    const tables = (db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[]).filter((t) => !sqliteOnly(t));
    const missing = TABLES.filter((t) => !tables.includes(t));
    if (version === 0 || missing.length === TABLES.length) throw new Refusal(`${file} is not a database of this service (it has none of its tables).`);
    if (version < SCHEMA_VERSION) {
      throw new Refusal(`${file} has schema version ${version}, of an older release: start this release's service on it once (it upgrades the file), stop it, and move again.`);
    }
    if (version > SCHEMA_VERSION) throw new Refusal(`${file} has schema version ${version}; this release knows up to ${SCHEMA_VERSION}. Move it with the newer release.`);
    if (missing.length > 0) throw new Refusal(`${file} is not a whole database of this service: it has no table ${missing.join(', ')}.`);
    const unknown = tables.filter((t) => !(TABLES as readonly string[]).includes(t));
    if (unknown.length > 0) throw new Refusal(`${file} has tables this release does not know (${unknown.join(', ')}); nothing was moved.`);
    // One snapshot for every read below, even if a process wrote meanwhile (the service must be stopped all the same).
    db.exec('BEGIN');
    const declared = new Map(TABLES.map((t) => [t, db.pragma(`table_info(${t})`) as { name: string; type: string }[]]));
    const columns = new Map([...declared].map(([t, cs]) => [t, cs.map((c) => c.name)]));
    const lines = new Map([...declared].map(([t, cs]) => [t, db.prepare(`SELECT ${copyLineSql(file, t, cs)} FROM ${t}`).pluck()]));
    const sequences = new Map((db.prepare('SELECT name, seq FROM sqlite_sequence').raw().all() as [string, number][]).map(([n, s]) => [n, s]));
    const unfinishedBulkLoad = db.prepare('SELECT 1 FROM meta WHERE key = ?').get(BULK_LOAD_KEY) !== undefined;
    return { db, columns, lines, sequences, unfinishedBulkLoad, secret: readSecret(`${file}.secret`) };
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Returns the hex secret of `path` (as config.ts checks it), undefined when there is no such file. */
function readSecret(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const secret = readFileSync(path, 'utf8').trim();
  if (!/^(?:[0-9a-f]{2}){32,}$/i.test(secret)) throw new Refusal(`The token secret in ${path} is not at least 32 bytes of hex, so the service would not start on it either.`);
  return secret;
}

/**
 * Returns the SQLite expression of a row of `table` as a line of COPY's text format, so that SQLite's C code, not
 * JavaScript, formats each value (twice as fast at a million rows): integers in decimal (exact, whatever their size),
 * text with backslash, tab, newline and carriage return escaped, NULL as \N. STRICT tables hold nothing else.
 */
function copyLineSql(file: string, table: string, columns: { name: string; type: string }[]): string {
  const escaped = (c: string) => `replace(replace(replace(replace(${c}, '\\', '\\\\'), char(9), '\\t'), char(10), '\\n'), char(13), '\\r')`;
  const value = ({ name, type }: { name: string; type: string }) => {
    if (type !== 'TEXT' && type !== 'INTEGER') throw new Refusal(`${file}: column ${table}.${name} has the type ${type}, which this release never writes.`);
    return `coalesce(${type === 'TEXT' ? escaped(quoted(name)) : quoted(name)}, '\\N')`;
  };
  return `${columns.map(value).join(' || char(9) || ')} || char(10)`;
}

/**
 * Writes `pieces` to COPY `statement` on `tx` and resolves once PostgreSQL took them all; rejects with its error.
 * postgres.js (3.4.9, porsager/postgres#1173) never settles the stream when the server refuses the data after the
 * stream ended (a foreign key checked at the end, the last rows' errors): a query sent right behind the copy then
 * fails instead ("current transaction is aborted"), which ends the wait and rolls the move back.
 */
async function copyIn(tx: PgSql, statement: string, pieces: Iterable<string>): Promise<void> {
  const stream = await tx.unsafe(statement).writable();
  const failed = new Promise<never>((_, reject) => stream.once('error', reject));
  failed.catch(() => {});
  let written: Promise<unknown> = Promise.resolve();
  for (const piece of pieces) {
    written = new Promise((resolve) => stream.write(piece, resolve));
    if (stream.writableNeedDrain) await Promise.race([once(stream, 'drain'), failed]);
  }
  await Promise.race([written, failed]);
  // Nothing is left to write, so end() sends CopyDone at once and the probe below goes out after it.
  const finished = new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
  await Promise.race([Promise.all([finished, tx`SELECT 1`]), failed]);
}

/** COPY lines joined PIECE_ROWS a piece, telling `onRows` the running count. */
function* copyPieces(lines: IterableIterator<string>, onRows: (copied: number) => void): Generator<string> {
  let piece = '';
  let copied = 0;
  for (const line of lines) {
    piece += line;
    if (++copied % PIECE_ROWS === 0) {
      yield piece;
      piece = '';
    }
    if (copied % PROGRESS_EVERY === 0) onRows(copied);
  }
  if (piece) yield piece;
}

/** Returns `url` with its password hidden, for messages. */
export function redact(url: string): string {
  return url.replace(/^(postgres(?:ql)?:\/\/[^:/@]*):[^@]*@/, '$1:***@');
}

const count = (n: number) => n.toLocaleString('en-US');
const quoted = (name: string) => `"${name}"`;

/** The secondary indexes of `table` (neither its primary key nor a constraint's), with their definitions. */
async function secondaryIndexes(tx: PgSql, table: string): Promise<{ name: string; definition: string }[]> {
  return tx<{ name: string; definition: string }[]>`
    SELECT i.relname AS name, pg_get_indexdef(x.indexrelid) AS definition
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
    WHERE x.indrelid = ${table}::regclass AND NOT x.indisprimary
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)
    ORDER BY i.relname`;
}

/** The tables of the current schema. */
async function tablesOf(tx: PgSql): Promise<string[]> {
  const rows = await tx<{ name: string }[]>`SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()`;
  return rows.map((r) => r.name).sort();
}

/** Refuses a database holding any table of this service; returns the other tables it holds. */
async function checkTarget(tx: PgSql, url: string): Promise<string[]> {
  const ours = [...TABLES, ...POSTGRES_ONLY];
  const present = await tx<{ name: string }[]>`SELECT name FROM unnest(${ours}::text[]) AS name WHERE to_regclass(name) IS NOT NULL ORDER BY name`;
  if (present.length > 0) {
    throw new Refusal(
      `${redact(url)} already has this service's tables (${present.map((r) => r.name).join(', ')}): the move copies into a database without them only. Nothing was changed.`,
    );
  }
  return tablesOf(tx);
}

/** Throws when schema.sql on PostgreSQL and FILE disagree on the tables or their columns (a release out of step). */
async function checkSchemas(tx: PgSql, source: Source, unrelated: string[]): Promise<void> {
  const created = (await tablesOf(tx)).filter((t) => !unrelated.includes(t)).sort();
  const expected = [...TABLES, ...POSTGRES_ONLY].sort();
  if (created.join() !== expected.join()) throw new Error(`The PostgreSQL schema has the tables ${created.join(', ')}; the move knows ${expected.join(', ')}.`);
  const rows = await tx<{ table: string; column: string }[]>`
    SELECT table_name AS table, column_name AS column FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ANY(${[...TABLES]}::text[])`;
  for (const table of TABLES) {
    const there = rows.filter((r) => r.table === table && !POSTGRES_ONLY_COLUMNS[table]?.includes(r.column)).map((r) => r.column).sort();
    const here = [...source.columns.get(table)!].sort();
    if (there.join() !== here.join()) throw new Error(`Table ${table} has the columns ${here.join(', ')} in SQLite but ${there.join(', ')} on PostgreSQL.`);
  }
}

/** Copies one table's rows; their indexes are built after the rows when there are many. Resolves to the row count. */
async function copyTable(tx: PgSql, source: Source, table: string, report: (line: string) => void): Promise<number> {
  const total = source.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  const columns = source.columns.get(table)!;
  const later = total > INDEX_LATER_ABOVE ? await secondaryIndexes(tx, table) : [];
  for (const index of later) await tx.unsafe(`DROP INDEX ${quoted(index.name)}`);
  // FREEZE: the table was created in this transaction, so its rows can be written already frozen and all-visible
  // (no VACUUM pass over them later, and index-only scans from the start).
  const statement = `COPY ${table} (${columns.map(quoted).join(', ')}) FROM STDIN WITH (FREEZE)`;
  const pieces = copyPieces(source.lines.get(table)!.iterate() as IterableIterator<string>, (n) => report(`${table} ${count(n)} / ${count(total)}`));
  await copyIn(tx, statement, pieces).catch((error: { message: string; code?: string }) => {
    // The aborted transaction's error stands for one postgres.js could not hand over (see copyIn).
    const why = error.code === '25P02' ? 'a row was refused (the PostgreSQL server log names it and why)' : error.message;
    throw new Error(`Copying ${table} failed: ${why}.`);
  });
  if (total % PROGRESS_EVERY !== 0 || total === 0) report(`${table} ${count(total)} / ${count(total)}`);
  if (later.length > 0) {
    const started = performance.now();
    // A sort in memory (the trigram index's above all) is several times faster than one spilled to disk.
    await tx`SELECT set_config('maintenance_work_mem', '512MB', true)`;
    for (const index of later) await tx.unsafe(index.definition);
    report(`${table} indexes built (${later.map((i) => i.name).join(', ')}) in ${seconds(started)} s`);
  }
  return total;
}

/** Copies meta's counters over the ones schema.sql wrote, all but the marker of an unfinished bulk load. */
async function copyMeta(tx: PgSql, source: Source, report: (line: string) => void): Promise<number> {
  const rows = source.db.prepare('SELECT key, value FROM meta WHERE key <> ?').raw().safeIntegers().all(BULK_LOAD_KEY) as [string, bigint][];
  const [keys, values] = [rows.map((r) => r[0]), rows.map((r) => String(r[1]))];
  await tx`
    INSERT INTO meta AS m (key, value) SELECT * FROM unnest(${keys}::text[], ${values}::bigint[])
    ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
  report(`meta ${count(rows.length)} / ${count(rows.length)}`);
  return rows.length;
}

const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1);

/** Sets each identity sequence after the highest id SQLite handed out, so new rows continue where FILE stopped. */
async function continueSequences(tx: PgSql, source: Source): Promise<void> {
  const identities = await tx<{ table: string; column: string }[]>`
    SELECT table_name AS table, column_name AS column FROM information_schema.columns
    WHERE table_schema = current_schema() AND is_identity = 'YES' AND table_name = ANY(${[...TABLES]}::text[])`;
  for (const { table, column } of identities) {
    const [row] = await tx.unsafe<{ max: number | null }[]>(`SELECT max(${quoted(column)}) AS max FROM ${table}`);
    const last = Math.max(source.sequences.get(table) ?? 0, row?.max ?? 0);
    await tx`SELECT setval(pg_get_serial_sequence(${table}, ${column}), ${Math.max(last, 1)}, ${last > 0})`;
  }
}

/** Takes the next customers generation and logs one 'reload' for it: instances load every customer afresh. */
async function logReload(engine: PostgresEngine, tx: PgSql): Promise<void> {
  const [row] = await tx<{ generation: number }[]>`
    INSERT INTO meta AS m (key, value) VALUES ('customers_generation', 1)
    ON CONFLICT (key) DO UPDATE SET value = m.value + 1 RETURNING value AS generation`;
  await tx`INSERT INTO customer_changes (generation, op) VALUES (${row!.generation}, 'reload')`;
  engine.notify(CHANGES_CHANNEL, String(row!.generation));
}

/**
 * Moves the SQLite database `file` into the PostgreSQL database at `url` in one transaction (see the top of this
 * file); `report` hears the progress lines. Resolves to what it did; rejects with Refusal when FILE or the target
 * does not qualify, or with what failed (nothing changed either way).
 */
export async function moveToPostgres(file: string, url: string, report: (line: string) => void = () => {}): Promise<MoveSummary> {
  const started = performance.now();
  const source = openSource(file);
  const engine = new PostgresEngine(url, { max: 2 });
  try {
    await engine.ping().catch((error: Error) => {
      throw new Refusal(`Could not connect to ${redact(url)}: ${error.message}`);
    });
    return await engine.write(async (tx) => {
      // A long load is no idle or stuck session: the server's defaults for those (a provider's often) do not apply.
      await tx`SELECT set_config('statement_timeout', '0', true), set_config('idle_in_transaction_session_timeout', '0', true)`;
      // Service instances starting on this database meanwhile wait here, then find the moved database.
      await lockSchema(tx);
      const unrelated = await checkTarget(tx, url);
      await migratePostgres(engine);
      await checkSchemas(tx, source, unrelated);
      // Their aggregates and change log are written below, in bulk: the triggers would count and log row by row.
      await tx`ALTER TABLE customers DISABLE TRIGGER USER`;
      let rows = 0;
      let customers = 0;
      let customersSeconds = 0;
      for (const table of TABLES) {
        if (source.unfinishedBulkLoad && AGGREGATES.has(table)) continue;
        const since = performance.now();
        const copied = UPSERTED.has(table) ? await copyMeta(tx, source, report) : await copyTable(tx, source, table, report);
        rows += copied;
        if (table === 'customers') [customers, customersSeconds] = [copied, (performance.now() - since) / 1000];
      }
      // What a seed killed part-way left: the rows it committed stay, and the aggregates count them, as the SQLite
      // service's start-up repair (recovery.ts) would have done. Its marker in meta did not move.
      if (source.unfinishedBulkLoad) await tx.unsafe(RECOMPUTE_AGGREGATES_SQL);
      await logReload(engine, tx);
      await tx`ALTER TABLE customers ENABLE TRIGGER USER`;
      await continueSequences(tx, source);
      // The process that ran them is gone, as after a restart on SQLite; their uploads stay behind with FILE.
      const interrupted = await tx<{ id: string }[]>`
        UPDATE import_jobs SET status = 'interrupted', finished_at = ${Date.now()} WHERE status = 'running' RETURNING id`;
      if (source.secret !== undefined) {
        await tx`INSERT INTO service_secrets (name, value, created_at) VALUES ('token_secret', ${source.secret}, ${Date.now()})`;
      }
      await tx.unsafe(`ANALYZE ${[...TABLES].join(', ')}`);
      return {
        rows,
        tables: TABLES.length,
        customers,
        customersSeconds,
        seconds: (performance.now() - started) / 1000,
        interruptedJobs: interrupted.map((j) => j.id),
        secretMoved: source.secret !== undefined,
        unrelatedTables: unrelated,
        aggregatesRecomputed: source.unfinishedBulkLoad,
      };
    });
  } finally {
    source.db.close();
    await engine.close();
  }
}

/** The closing lines: what moved, how fast, and what to know before starting the service on PostgreSQL. */
function summaryLines(summary: MoveSummary, file: string, url: string): string[] {
  const lines = [
    `Moved ${count(summary.rows)} rows of ${summary.tables} tables from ${file} to ${redact(url)} in ${summary.seconds.toFixed(1)} s` +
      ` (customers: ${count(summary.customers)} in ${summary.customersSeconds.toFixed(1)} s, indexes included).`,
  ];
  if (summary.aggregatesRecomputed) lines.push('An interrupted seed had left customers the aggregates did not count: they were counted on PostgreSQL.');
  if (summary.interruptedJobs.length > 0) {
    lines.push(`Import jobs still running in ${file} are now interrupted (their committed rows and counts stay; their uploads do not move): ${summary.interruptedJobs.join(', ')}.`);
  }
  lines.push(
    summary.secretMoved
      ? `The token secret of ${file}.secret moved into the database: sessions and tokens stay valid unless TOKEN_SECRET is set.`
      : `There is no ${file}.secret: the service signed tokens with TOKEN_SECRET. Set the same TOKEN_SECRET with DATABASE_URL, or everyone signs in again.`,
  );
  if (summary.unrelatedTables.length > 0) lines.push(`The database also holds other tables, left as they were: ${summary.unrelatedTables.join(', ')}.`);
  lines.push(`Start the service with DATABASE_URL=${redact(url)} (and without DATABASE_PATH).`);
  return lines;
}

/** Returns --from and --to; throws UsageError when they are missing or wrong. */
function parse(argv: string[]): { from: string; to: string } | 'help' {
  let values: { from?: string; to?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ args: argv, options: { from: { type: 'string' }, to: { type: 'string' }, help: { type: 'boolean' } } }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return 'help';
  const from = values.from?.trim();
  const to = values.to?.trim();
  if (!from) throw new UsageError('--from FILE is required: the SQLite database to move.');
  if (!to) throw new UsageError('--to URL is required: the PostgreSQL database to move into.');
  if (!/^postgres(?:ql)?:\/\//.test(to)) throw new UsageError(`--to must be a postgres:// or postgresql:// URL, got "${redact(to)}".`);
  return { from, to };
}

async function main(): Promise<void> {
  const args = parse(process.argv.slice(2));
  if (args === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const summary = await moveToPostgres(args.from, args.to, (line) => process.stderr.write(`${line}\n`));
  process.stdout.write(`${summaryLines(summary, args.from, args.to).join('\n')}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n\n${USAGE}\n`);
      process.exitCode = 2;
    } else {
      const message = error instanceof Error ? error.message : String(error);
      process.stderr.write(`error: ${message}${error instanceof Refusal ? '' : '\nThe move was rolled back: nothing changed.'}\n`);
      process.exitCode = 1;
    }
  });
}
