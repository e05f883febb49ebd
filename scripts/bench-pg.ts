// What `npm run bench -- --engine postgres` needs of PostgreSQL besides the stages it shares with SQLite: the server
// (a throwaway cluster it starts, or one given by URL), the bench's own databases on it, "PostgreSQL alone" (the CSV
// jobs' and the move's yardstick) and the move of the SQLite base with `npm run move-to-postgres`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import postgres from 'postgres';
import { CUSTOMER_FIELDS, customersCopyText, openPgCustomers, type AudienceIndex, type CustomerRepository } from '../src/customers/index.ts';
import type { PostgresEngine } from '../src/db/pg-engine.ts';
import type { CustomerRecord } from '../src/domain/customers.ts';
import type { AloneLoad, MoveLoad } from './bench-report.ts';
import { log, rssMb, startProcess } from './bench-support.ts';
import { startPostgres } from './postgres-cluster.ts';

/**
 * The server settings of a cluster the bench starts: the shared buffers the issue measured PostgreSQL alone with,
 * connections for the service's pool, the floor's and the bench's own, and a larger memory for index builds.
 */
export const BENCH_SETTINGS = { shared_buffers: '256MB', max_connections: 200, maintenance_work_mem: '256MB', max_wal_size: '4GB' } as const;

/** The server the bench runs on, the databases it made there, and how to leave it. */
export interface BenchServer {
  /** The URL of the database named `name` on this server. */
  urlOf(name: string): string;
  /** Creates the database `name` afresh (dropped first when there), empty or as a copy of `template`. */
  create(name: string, template?: string): Promise<string>;
  drop(name: string): Promise<void>;
  /** The server's version and the settings that matter to the figures. */
  facts(): Promise<{ version: string; settings: Record<string, string> }>;
  /** Drops the databases made, and stops the cluster when the bench started it. */
  close(): Promise<void>;
}

/**
 * Starts a throwaway cluster (BENCH_SETTINGS), or uses the server at `url` (its user must be allowed to create
 * databases; the bench makes its own, named bench_*, and drops them at the end).
 */
export async function benchServer(url?: string): Promise<BenchServer> {
  const cluster = url ? undefined : await startPostgres(BENCH_SETTINGS);
  const serverUrl = url ?? cluster!.url;
  if (cluster) log(`PostgreSQL: a cluster of its own on port ${cluster.port} (${Object.entries(BENCH_SETTINGS).map(([k, v]) => `${k}=${v}`).join(', ')})`);
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  const made = new Set<string>();
  const urlOf = (name: string) => {
    const at = new URL(serverUrl);
    at.pathname = `/${name}`;
    return at.href;
  };
  const drop = async (name: string) => {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    made.delete(name);
  };
  return {
    urlOf,
    drop,
    async create(name, template) {
      await drop(name);
      await admin.unsafe(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
      made.add(name);
      return urlOf(name);
    },
    async facts() {
      const [{ version }] = (await admin`SELECT current_setting('server_version') AS version`) as unknown as [{ version: string }];
      const names = ['shared_buffers', 'max_connections', 'fsync', 'synchronous_commit', 'work_mem', 'maintenance_work_mem'];
      const rows = await admin<{ name: string; setting: string }[]>`SELECT name, current_setting(name) AS setting FROM pg_settings WHERE name = ANY(${names})`;
      return { version, settings: Object.fromEntries(rows.map((r) => [r.name, r.setting])) };
    },
    async close() {
      try {
        for (const name of [...made]) await drop(name);
        await admin.end({ timeout: 5 });
      } finally {
        await cluster?.stop();
      }
    },
  };
}

/**
 * The customer subsystem on PostgreSQL in this process, as the service opens it (its import jobs on a folder of their
 * own, removed on closing), once its audience index has loaded: `loadMs` is how long that took from opening.
 */
export async function openPgLocalCustomers(engine: PostgresEngine): Promise<{ store: CustomerRepository; audience: AudienceIndex; loadMs: number; close(): Promise<void> }> {
  const folder = mkdtempSync(join(tmpdir(), 'bench-local-imports-'));
  const opened = performance.now();
  const customers = openPgCustomers(engine, { folder, maxBytes: 1, clock: () => new Date() }, (error) => log(`customers on PostgreSQL: ${String(error)}`));
  await customers.audience.count(null);
  return {
    store: customers.store,
    audience: customers.audience,
    loadMs: performance.now() - opened,
    async close() {
      await customers.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** Rows per transaction of PostgreSQL alone's inserts, as SQLite alone's. */
const TRANSACTION_ROWS = 50_000;
/** The staged columns and their types: those of `customersCopyText`, every column of customers but the id. */
const COLUMNS = [...CUSTOMER_FIELDS.map((f) => f.column), 'country_key', 'created_at', 'updated_at'];
const STAGING_TYPES = [...CUSTOMER_FIELDS.map((f) => (f.sqlType === 'TEXT' ? 'text' : 'bigint')), 'text', 'bigint', 'bigint'];

/**
 * What PostgreSQL itself allows, the yardstick of the CSV jobs and the move: the records copied (COPY) into an
 * unlogged staging table, then inserted into customers with its indexes (`INSERT ... SELECT ... ON CONFLICT DO
 * NOTHING`, in file order) in 50,000-row transactions; the triggers of customers off (no aggregates, no change log:
 * the table and its indexes alone, as the issue measured it with psql). On the database at `url`, which it changes:
 * give it a copy. No service runs meanwhile.
 */
export async function postgresAlone(url: string, records: Iterable<CustomerRecord>, rows: number): Promise<AloneLoad> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`ALTER TABLE customers DISABLE TRIGGER USER`;
    await sql`DROP TABLE IF EXISTS bench_staging`;
    await sql.unsafe(`CREATE UNLOGGED TABLE bench_staging (ord bigint GENERATED ALWAYS AS IDENTITY, ${COLUMNS.map((c, i) => `${c} ${STAGING_TYPES[i]}`).join(', ')})`);
    const started = performance.now();
    await pipeline(Readable.from(customersCopyText(records, Date.now())), await sql.unsafe(`COPY bench_staging (${COLUMNS.join(', ')}) FROM STDIN`).writable());
    const copied = performance.now();
    for (let from = 0; from < rows; from += TRANSACTION_ROWS) {
      await sql.unsafe(
        `INSERT INTO customers (${COLUMNS.join(', ')}) SELECT ${COLUMNS.join(', ')} FROM bench_staging
         WHERE ord > $1 AND ord <= $2 ORDER BY ord ON CONFLICT (email) DO NOTHING`,
        [from, from + TRANSACTION_ROWS],
      );
    }
    const ended = performance.now();
    return { rows, rowsPerSecond: rows / ((ended - started) / 1000), copyRowsPerSecond: rows / ((copied - started) / 1000) };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * Moves the SQLite database at `from` onto the empty PostgreSQL database at `to` with `npm run move-to-postgres` (its
 * script, in a process of its own, as a person runs it), sampling its memory; `customers` is how many it moves.
 */
export async function moveToPostgres(from: string, to: string, customers: number): Promise<MoveLoad> {
  const started = performance.now();
  const move = startProcess(['--import', 'tsx', 'scripts/move-to-postgres.ts', '--from', from, '--to', to], {}, 'data/bench-move.log');
  let peakRssMb = 0;
  const sampler = setInterval(() => {
    try {
      peakRssMb = Math.max(peakRssMb, rssMb(move.pid!, 'VmHWM'));
    } catch {
      // it has exited
    }
  }, 100);
  const code = await new Promise<number | null>((resolve) => move.once('exit', (exitCode) => resolve(exitCode)));
  clearInterval(sampler);
  if (code !== 0) throw new Error(`npm run move-to-postgres exited with ${code}; see data/bench-move.log`);
  const seconds = (performance.now() - started) / 1000;
  return { customers, seconds, rowsPerSecond: customers / seconds, peakRssMb };
}
