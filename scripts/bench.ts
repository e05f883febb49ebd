// `npm run bench [-- --customers N] [--duration S] [--out FILE] [--engine sqlite|postgres] [--database-url URL]`:
// measures the service on a large base and prints a table; figures are also written as JSON. See README "Benchmark"
// for what each row means. Besides the read endpoints it measures a fresh seed, imports from several concurrent
// clients while a poller watches how long other requests wait, and segment previews both repeated and never seen before.
// The run is a table of stages (STAGES, at the end), run in order; each adds its figures (bench-report.ts). With
// `--engine postgres` the same stages run on PostgreSQL (a cluster the bench starts, or the server of --database-url,
// where it makes and drops databases of its own named bench_*), with the customer lists also measured on SQLite in the
// same sitting, PostgreSQL alone as the yardstick of the CSV jobs and of the move, the move itself (bench-pg.ts), and
// last one and two instances of the service on the same server (bench-instances.ts).
import type { ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { openCustomers, type AudienceIndex, type CustomerRepository } from '../src/customers/index.ts';
import { openSqliteEngine } from '../src/db/engine.ts';
import { PostgresEngine } from '../src/db/pg-engine.ts';
import { DAY_MS, STALE_AFTER_DAYS } from '../src/domain/customers.ts';
import { compileConditions, type Condition } from '../src/domain/segments.ts';
import { benchCampaigns } from './bench-campaigns.ts';
import { benchChat } from './bench-chat.ts';
import { exportLoad } from './bench-exports.ts';
import { backupDuringImports, csvJobLoad, customerToEdit, importLoad, sqliteAlone } from './bench-imports.ts';
import { postgresQueries, sqliteQueries, type EngineQueries } from './bench-naive.ts';
import { benchInstances } from './bench-instances.ts';
import { benchServer, moveToPostgres, openPgLocalCustomers, postgresAlone, type BenchServer } from './bench-pg.ts';
import { completeFigures, formatReport, toReport, type EngineName, type Figures, type InProcessRow, type SearchTerm } from './bench-report.ts';
import {
  ensureUser,
  ensureUserAt,
  freshCopy,
  importBodies,
  load as loadFor,
  type Load,
  type LoadOptions,
  log,
  removeDatabase,
  rssMb,
  SERVICE,
  signIn,
  sleep,
  startProcess,
  waitFor,
} from './bench-support.ts';
import { webhookLoad } from './bench-webhooks.ts';
import { writeCustomersCsv } from './csv-file.ts';
import { seedDatabase, seedPostgresDatabase } from './seed.ts';
import { syntheticCustomers } from './synthetic-customers.ts';

const { values } = parseArgs({
  options: {
    customers: { type: 'string', default: '1000000' },
    duration: { type: 'string', default: '5' },
    out: { type: 'string' },
    engine: { type: 'string', default: 'sqlite' },
    'database-url': { type: 'string' },
  },
});
if (values.engine !== 'sqlite' && values.engine !== 'postgres') throw new Error(`--engine is sqlite or postgres, not ${values.engine}`);
const ENGINE: EngineName = values.engine;
const CUSTOMERS = Number(values.customers);
const DURATION = Number(values.duration);
const SOURCE = `data/bench-${CUSTOMERS}.db`;
const RUN = 'data/bench-run.db';
const OUT = values.out ?? 'data/bench.json';
const SEED_RUN = 'data/bench-seed.db';
const EMPTY = 'data/bench-empty.db';
const PORT = 3917;
const FLOOR_PORT = 3918;
/** On PostgreSQL, the SQLite service and its floor measured in the same sitting. */
const SQLITE_PORT = 3919;
const SQLITE_FLOOR_PORT = 3920;
/** The bench's databases on PostgreSQL: the run's base, the empty base, PostgreSQL alone's scratch copy, the move's target. */
const PG = { run: 'bench_run', empty: 'bench_empty', alone: 'bench_alone', move: 'bench_move' } as const;
const MOVE_FROM = 'data/bench-move.db';
const ACCOUNT = { email: 'bench@example.com', fullName: 'Bench', role: 'admin', password: 'bench-password-1' } as const;
const COMMON_ENV = { PORT: String(PORT), LOG_LEVEL: 'info', ADMIN_PASSWORD: 'unused-admin-password' };

/** The environment of a service on the SQLite file at `path`, or the PostgreSQL database at `url` (never both set). */
const sqliteEnv = (path: string) => ({ ...COMMON_ENV, DATABASE_PATH: path, DATABASE_URL: '' });
const postgresEnv = (url: string) => ({ ...COMMON_ENV, DATABASE_URL: url, DATABASE_PATH: '' });
/** The JSON imports: 1000-row requests (the API's cap) from this many clients, then as many during the backup. */
const IMPORT_CLIENTS = 4;
const IMPORT_REQUESTS = 60;
/**
 * The CSV files of the import jobs, written before the service starts (and kept for later runs, as bench:imports
 * keeps them): 170 MB written just before a job left the machine flushing them during it.
 */
const CSV = {
  intoFull: `data/bench-imports-full-${CUSTOMERS}.csv`,
  intoEmpty: `data/bench-imports-empty-${CUSTOMERS}.csv`,
  updateFull: `data/bench-imports-update-${CUSTOMERS}.csv`, // the customers of intoFull a week later
};
/** Terms searched for; those whose share of the base is nearest 0.05%, 1% and 15% are measured. */
const SEARCH_CANDIDATES = ['smith', 'zofia', 'o\'brien', 'aoife.k', 'lars.b', 'example.org', 'mail.example', 'müller', 'anna', 'kenji.n', 'ia.s', 'laurent', 'dvořák'];

/** The condition sets previewed, in process against a full scan and over HTTP. */
const CONDITION_SETS: { name: string; conditions: Condition[] }[] = [
  { name: '1 condition (amount > 500)', conditions: [{ field: 'totalAmountSpent', operator: 'gt', value: 500 }] },
  {
    name: '4 conditions (country, 3 ranges)',
    conditions: [
      { field: 'country', operator: 'eq', value: 'Germany' },
      { field: 'totalTransactions', operator: 'gte', value: 3 },
      { field: 'totalAmountSpent', operator: 'lt', value: 2000 },
      { field: 'lastActivityDays', operator: 'lte', value: 90 },
    ],
  },
  // The same as the two above with a status condition: a status costs no second pass.
  {
    name: '2 conditions (amount > 500, status = churned)',
    conditions: [
      { field: 'totalAmountSpent', operator: 'gt', value: 500 },
      { field: 'status', operator: 'eq', value: 'churned' },
    ],
  },
  {
    name: '5 conditions (4 above, status in churned, inactive)',
    conditions: [
      { field: 'country', operator: 'eq', value: 'Germany' },
      { field: 'totalTransactions', operator: 'gte', value: 3 },
      { field: 'totalAmountSpent', operator: 'lt', value: 2000 },
      { field: 'lastActivityDays', operator: 'lte', value: 90 },
      { field: 'status', operator: 'in', value: ['churned', 'inactive'] },
    ],
  },
  {
    name: 'win-back (status, 3 countries in, amount)',
    conditions: [
      { field: 'status', operator: 'in', value: ['churned', 'inactive'] },
      { field: 'country', operator: 'in', value: ['Spain', 'Italy', 'Netherlands'] },
      { field: 'totalAmountSpent', operator: 'gte', value: 100 },
    ],
  },
  {
    name: '2 conditions (country not Germany, status not active)',
    conditions: [
      { field: 'country', operator: 'neq', value: 'Germany' },
      { field: 'status', operator: 'neq', value: 'active' },
    ],
  },
  {
    name: '10 conditions (mixed selectivity)',
    conditions: [
      { field: 'country', operator: 'eq', value: 'france' },
      { field: 'totalTransactions', operator: 'gt', value: 1 },
      { field: 'totalTransactions', operator: 'lt', value: 40 },
      { field: 'totalAmountSpent', operator: 'gte', value: 20 },
      { field: 'totalAmountSpent', operator: 'lte', value: 5000 },
      { field: 'lastActivityDays', operator: 'gt', value: 7 },
      { field: 'lastActivityDays', operator: 'lt', value: 400 },
      { field: 'totalTransactions', operator: 'gte', value: 2 },
      { field: 'totalAmountSpent', operator: 'gt', value: 25.5 },
      { field: 'lastActivityDays', operator: 'lte', value: 365 },
    ],
  },
];

const api = (path: string) => `http://127.0.0.1:${PORT}${path}`;
const load = (name: string, url: string, options: LoadOptions = {}) => loadFor(name, url, DURATION, options);

/** The processes this run started and that have not exited: whatever stops the run, none is left running. */
const running = new Set<ChildProcess>();

/** Starts `node <command>` (bench-support's startProcess), kept in `running` until it exits. */
function start(command: string[], env: Record<string, string>, logFile: string): ChildProcess {
  const child = startProcess(command, env, logFile);
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Stops every process the run started that is still running; resolves once they have exited. */
async function stopAll(): Promise<void> {
  await Promise.all(
    [...running].map(async (child) => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }),
  );
}

/** The run database opened in this process for the in-process timings, on the run's engine. */
interface Local {
  customers: CustomerRepository;
  audience: AudienceIndex;
  /** The engine's naive statements, its search count and full scans (bench-naive.ts). */
  queries: EngineQueries;
  /** The clock of the in-process timings. */
  now: Date;
  /** Resolves to the milliseconds the audience index took to load every customer the first time. */
  audienceLoadMs(): Promise<number>;
  close(): Promise<void>;
}

/** What the stages share: what earlier stages set up for later ones, and the figures measured so far. */
interface Run {
  engine: EngineName;
  /** The run database opened in this process for the in-process timings (closed once they end). */
  local?: Local;
  /** On PostgreSQL: the server and the URL of the run's database. */
  pg?: { server: BenchServer; runUrl: string };
  /** The country with the fewest customers, listed over HTTP. */
  topCountry?: string;
  /** The service on the run database, the floor beside it, and the token signed in with. */
  service?: { process: ChildProcess; floor: ChildProcess; token: string };
  /** The JSON import bodies the backup sends (the imports stage sent the others). */
  backupBodies?: string[];
  figures: Partial<Figures> & { engine: EngineName };
  /** On PostgreSQL: the one-and-two-instances table (bench-instances.ts), printed after the report. */
  instances?: string;
}

/** One step of the run: `run` measures something and adds its figures to `run.figures`. */
interface Stage {
  name: string;
  run(run: Run): Promise<void>;
}

/** Returns what an earlier stage set up; throws when the table of stages ran them out of order. */
function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`No ${what}: a stage that needs it runs before the one that sets it up.`);
  return value;
}

/**
 * Milliseconds per call of `fn`, the median of several rounds. A promise returned is awaited (a repository's
 * call); a plain value is not, so synchronous statements are timed without a turn of the event loop.
 */
async function timeIt(fn: () => unknown, rounds = 7, perRound = 3): Promise<number> {
  await fn();
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    for (let i = 0; i < perRound; i++) {
      const result = fn();
      if (result instanceof Promise) await result;
    }
    samples.push((performance.now() - start) / perRound);
  }
  return samples.sort((a, b) => a - b)[Math.floor(rounds / 2)]!;
}

/** A fresh load into an empty SQLite database, as `npm run seed` does it; resolves to its rows per second. */
function seedSqlite(): number {
  mkdirSync(dirname(SOURCE), { recursive: true });
  removeDatabase(SEED_RUN);
  log(`Seeding ${CUSTOMERS.toLocaleString('en')} customers into an empty ${SEED_RUN}...`);
  const seedRowsPerSecond = seedDatabase(SEED_RUN, CUSTOMERS, { seed: 42, quiet: true });
  log(`Seed: ${seedRowsPerSecond.toLocaleString('en')} rows/s`);
  if (existsSync(SOURCE)) removeDatabase(SEED_RUN);
  else renameSync(SEED_RUN, SOURCE);
  return seedRowsPerSecond;
}

/** The run database: a copy of the SQLite base, brought up to the current schema first. */
async function copyBase(): Promise<void> {
  await openSqliteEngine(SOURCE).close(); // brings a database kept from an older run up to the current schema
  removeDatabase(RUN);
  copyFileSync(SOURCE, RUN);
}

/** On SQLite: a fresh seed, kept as the base when there is none yet, and the run database copied from the base. */
async function seedBase(run: Run): Promise<void> {
  run.figures.seedRowsPerSecond = seedSqlite();
  await copyBase();
}

/**
 * On PostgreSQL: the SQLite base (seeded when there is none; it is the source of the move and of the lists measured
 * on SQLite), then the server and a fresh run database seeded with the same customers as `npm run seed` does it.
 */
async function seedPostgresBase(run: Run): Promise<void> {
  if (!existsSync(SOURCE)) seedSqlite();
  await copyBase();
  await ensureUserAt(RUN, ACCOUNT); // for the lists on SQLite
  const server = await benchServer(values['database-url']);
  run.pg = { server, runUrl: await server.create(PG.run) };
  run.figures.postgresServer = await server.facts();
  log(`Seeding ${CUSTOMERS.toLocaleString('en')} customers into an empty PostgreSQL database (${PG.run})...`);
  run.figures.seedRowsPerSecond = await seedPostgresDatabase(run.pg.runUrl, CUSTOMERS, { seed: 42, quiet: true });
  log(`Seed: ${run.figures.seedRowsPerSecond.toLocaleString('en')} rows/s`);
}

/** Opens the run database of the run's engine in this process, with the user to sign in as. */
async function openLocal(run: Run): Promise<Local> {
  const now = new Date();
  if (run.engine === 'sqlite') {
    const engine = openSqliteEngine(RUN);
    await ensureUser(engine, ACCOUNT);
    const { store, audience } = openCustomers(engine);
    // Not warmed: the index loads on its first count, timed here.
    const audienceLoadMs = async () => {
      const loadStart = performance.now();
      await audience.count(null);
      return performance.now() - loadStart;
    };
    return { customers: store, audience, queries: sqliteQueries(engine), now, audienceLoadMs, close: () => engine.close() };
  }
  const engine = new PostgresEngine(need(run.pg, 'PostgreSQL').runUrl);
  await ensureUser(engine, ACCOUNT);
  const opened = await openPgLocalCustomers(engine);
  return {
    customers: opened.store,
    audience: opened.audience,
    queries: postgresQueries(engine),
    now,
    // Opened as the service opens it, the index loads at once (once the change feed listens): timed from opening.
    audienceLoadMs: async () => opened.loadMs,
    close: async () => {
      await opened.close();
      await engine.close();
    },
  };
}

/** Opens the run database: a user to sign in as, and the search terms to measure, chosen from the data itself. */
async function chooseTerms(run: Run): Promise<void> {
  const local = await openLocal(run);
  const { customers } = local;
  const base = await customers.stats.countMatching(undefined, undefined);
  const shares: SearchTerm[] = [];
  for (const term of SEARCH_CANDIDATES) {
    const page = await customers.listCustomers({ search: term, status: 'all', country: '', sort: 'lastActivityDate', direction: 'desc', page: 1, limit: 1 });
    shares.push({ term, share: page.total / base });
  }
  const closest = (target: number) => shares.reduce((best, c) => (Math.abs(Math.log(c.share / target)) < Math.abs(Math.log(best.share / target)) ? c : best));
  run.figures.customers = base;
  run.figures.searchTerms = { rare: closest(0.0005), onePercent: closest(0.01), common: closest(0.15) };
  run.topCountry = await local.queries.smallestCountry();
  run.local = local;
}

/** In process: each aggregate next to its naive single query over customers, on the same database. */
async function timeAggregates(run: Run): Promise<void> {
  const { customers, queries: naive, now } = need(run.local, 'run database');
  const { onePercent } = need(run.figures.searchTerms, 'search terms');
  log('In-process timings (median ms per call):');
  const months24 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 23, 1)).getTime();
  run.figures.inProcess = [
    { name: 'kpis', ours: await timeIt(() => customers.stats.totalsByStatus()), naive: await timeIt(() => naive.kpis(), 3, 1) },
    {
      name: 'trend (24 months)',
      ours: await timeIt(() => customers.stats.daysBetween(Math.floor(months24 / DAY_MS), Math.floor(now.getTime() / DAY_MS) + 32)),
      naive: await timeIt(() => naive.trend(months24), 3, 1),
    },
    {
      name: 'health',
      ours: await timeIt(() => customers.stats.healthInputs(now)),
      naive: await timeIt(() => naive.health(now.getTime() - STALE_AFTER_DAYS * DAY_MS), 3, 1),
    },
    { name: 'top (5)', ours: await timeIt(() => Promise.all([customers.stats.totalsByStatus(), customers.topCustomers(5)])), naive: await timeIt(() => naive.top(), 3, 1) },
    {
      // The statement the service runs for an unfiltered search count (before its per-generation memory).
      name: `search count "${onePercent.term}" (${(onePercent.share * 100).toFixed(2)}%), uncached`,
      ours: await timeIt(() => naive.searchCount(onePercent.term)),
      naive: await timeIt(() => naive.like(onePercent.term), 3, 1),
    },
  ];
}

/** A WHERE clause over the customers table that selects what `conditions` select at `now`, for a full scan. */
function naiveWhere(conditions: readonly Condition[], now: Date): string {
  const sqlOps = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
  const quoted = (values: readonly string[]) => values.map((v) => `'${v.trim().toLowerCase().replaceAll("'", "''")}'`).join(', ');
  return conditions
    .map((c) => {
      if (c.field === 'country' || c.field === 'status') {
        const column = c.field === 'country' ? 'country_key' : 'status';
        return `${column} ${c.operator === 'neq' ? 'NOT IN' : 'IN'} (${quoted(typeof c.value === 'string' ? [c.value] : c.value)})`;
      }
      if (c.field === 'totalTransactions') return `total_transactions ${sqlOps[c.operator]} ${c.value}`;
      if (c.field === 'totalAmountSpent') return `amount_cents / 100.0 ${sqlOps[c.operator]} ${c.value}`;
      const flipped = ({ gt: '<', gte: '<=', lt: '>', lte: '>=' } as const)[c.operator];
      return `last_activity_at ${flipped} ${now.getTime() - c.value * DAY_MS}`;
    })
    .join(' AND ');
}

/** The audience index's load and size, then each condition set counted afresh next to a full scan; closes the run database. */
async function timePreviews(run: Run): Promise<void> {
  const local = need(run.local, 'run database');
  const { audience, now, queries } = local;
  const rows: InProcessRow[] = need(run.figures.inProcess, 'aggregate timings');
  run.figures.audienceIndexLoadMs = await local.audienceLoadMs();
  const footprint = await audience.footprint();
  run.figures.audienceIndex = footprint;
  log(
    `Audience index: ${(footprint.bytes / 1e6).toFixed(1)} MB for ${footprint.rows.toLocaleString('en')} customers (room for ` +
      `${footprint.room.toLocaleString('en')}): ${(footprint.bytes / footprint.rows).toFixed(1)} bytes a customer, ${(footprint.bytes / footprint.room).toFixed(1)} a row of room`,
  );
  for (const set of CONDITION_SETS) {
    const where = naiveWhere(set.conditions, now);
    const expected = await queries.fullScanCount(where);
    const bounds = compileConditions(set.conditions, now);
    const got = await audience.count(bounds, now.getTime());
    if (got !== expected) throw new Error(`engine counted ${got}, SQL ${expected} for ${set.name}`);
    if ((await audience.countAfresh(bounds)) !== expected) throw new Error(`engine counted afresh differently for ${set.name}`);
    rows.push({
      name: `segment preview: ${set.name} = ${got}, uncached`,
      ours: await timeIt(() => audience.countAfresh(compileConditions(set.conditions, now)), 7, 1),
      naive: await timeIt(() => queries.fullScanCount(where), 3, 1),
    });
  }
  for (const row of rows) log(`  ${row.name.padEnd(58)} ${row.ours.toFixed(3).padStart(8)} vs ${row.naive.toFixed(1).padStart(7)}  x${Math.round(row.naive / row.ours)}`);
  await local.close();
  run.local = undefined;
}

/** Writes the CSV files of the import jobs that no earlier run left. */
async function writeCsvFiles(): Promise<void> {
  for (const [file, options] of [
    [CSV.intoFull, { seed: 8, firstSerial: 60_000_000 }],
    [CSV.intoEmpty, { seed: 9, firstSerial: 1 }],
    [CSV.updateFull, { seed: 8, firstSerial: 60_000_000, changed: true }],
  ] as const) {
    if (existsSync(file)) continue;
    log(`Writing ${file}...`);
    await writeCustomersCsv(file, CUSTOMERS, options);
  }
}

/** The yardstick of the import jobs, measured before the service starts: what SQLite itself inserts a second. */
async function timeSqliteAlone(run: Run): Promise<void> {
  log('SQLite alone, in this process (bare inserts, 50,000-row transactions, 1 GB cache):');
  const alone = await sqliteAlone(SOURCE);
  log(`  ${Math.round(alone.rowsPerSecond).toLocaleString('en')} rows/s from ${CUSTOMERS.toLocaleString('en')} to ${(CUSTOMERS + alone.rows).toLocaleString('en')} customers`);
  run.figures.sqliteAlone = alone;
}

/**
 * The yardstick of the import jobs and the move on PostgreSQL, measured before the service starts: PostgreSQL alone
 * into a copy of the run's base (the customers of the job into the full base) and into an empty base (those of the
 * job into it), as many rows as the jobs.
 */
async function timePostgresAlone(run: Run): Promise<void> {
  const { server } = need(run.pg, 'PostgreSQL');
  log(`PostgreSQL alone (COPY into an unlogged staging table, then INSERT ... ON CONFLICT DO NOTHING into the indexed table, 50,000-row transactions):`);
  const intoFull = await postgresAlone(await server.create(PG.alone, PG.run), syntheticCustomers(CUSTOMERS, { seed: 8, firstSerial: 60_000_000 }), CUSTOMERS);
  log(`  into a copy of the full base: ${Math.round(intoFull.rowsPerSecond).toLocaleString('en')} rows/s (the COPY ${Math.round(intoFull.copyRowsPerSecond).toLocaleString('en')} rows/s)`);
  const emptyUrl = await server.create(PG.alone);
  await ensureUserAt(emptyUrl, ACCOUNT); // the schema
  const intoEmpty = await postgresAlone(emptyUrl, syntheticCustomers(CUSTOMERS, { seed: 9, firstSerial: 1 }), CUSTOMERS);
  log(`  into an empty base: ${Math.round(intoEmpty.rowsPerSecond).toLocaleString('en')} rows/s (the COPY ${Math.round(intoEmpty.copyRowsPerSecond).toLocaleString('en')} rows/s)`);
  await server.drop(PG.alone);
  run.figures.postgresAlone = { intoFull, intoEmpty };
}

/** Resolves with the milliseconds until the service on `port` answers /health; throws at once if it exits first. */
async function untilHealthy(service: ChildProcess, port: string, logFile: string): Promise<number> {
  let exited: (() => void) | undefined;
  const exit = new Promise<never>((_, reject) => {
    exited = () => reject(new Error(`The service exited before answering /health; see ${logFile} and the lines above.`));
    service.once('exit', exited);
  });
  try {
    return await Promise.race([waitFor(`http://127.0.0.1:${port}/health`), exit]);
  } finally {
    service.off('exit', exited!);
  }
}

/** The service on the run database and the floor beside it, the token signed in with, and the start-up time. */
async function startOn(env: Record<string, string>, database: string, floorPort: number, logName: string) {
  const service = start(SERVICE, env, `data/${logName}.log`); // request logs as in production
  const startupMs = await untilHealthy(service, env.PORT!, `data/${logName}.log`);
  const floor = start(['--import', 'tsx', 'scripts/bench-floor.ts', database, String(floorPort)], {}, `data/${logName.replace('service', 'floor')}.log`);
  await waitFor(`http://127.0.0.1:${floorPort}/`);
  const token = await signIn(`http://127.0.0.1:${env.PORT}`, ACCOUNT.email, ACCOUNT.password);
  await sleep(1500); // let the audience index finish its background load
  return { process: service, floor, token, startupMs };
}

/** Stops a service and its floor; resolves once the service has exited. */
async function stopService({ process: service, floor }: { process: ChildProcess; floor: ChildProcess }): Promise<void> {
  floor.kill('SIGTERM');
  if (service.exitCode !== null || service.signalCode !== null) return;
  service.kill('SIGTERM');
  await new Promise((resolve) => service.once('exit', resolve));
}

/** Start-up: from spawning the service to /health answering, on the large database; then the floor, and a sign-in. */
async function startService(run: Run): Promise<void> {
  const [env, database] = run.engine === 'sqlite' ? [sqliteEnv(RUN), RUN] : [postgresEnv(need(run.pg, 'PostgreSQL').runUrl), need(run.pg, 'PostgreSQL').runUrl];
  const { startupMs, ...service } = await startOn(env, database, FLOOR_PORT, 'bench-service');
  log(`Start-up to /health: ${Math.round(startupMs)} ms`);
  run.service = service;
  run.figures.startupMs = startupMs;
}

/** A service to load: its base URL, its floor's URL and the token to send. */
interface Target {
  base: string;
  floor: string;
  token: string;
}

/** The floor and the six customer lists (path and row name): the rows both engines measure. */
function listRequests(run: Run): { name: string; path: string }[] {
  const { rare, common } = need(run.figures.searchTerms, 'search terms');
  const topCountry = need(run.topCountry, 'top country');
  const enc = encodeURIComponent;
  return [
    { name: 'GET /v1/customers (default)', path: '/v1/customers' },
    { name: 'GET /v1/customers?status=active', path: '/v1/customers?status=active' },
    { name: `GET /v1/customers?country=${topCountry} (smallest)`, path: `/v1/customers?country=${enc(topCountry)}` },
    { name: `GET /v1/customers?search=${rare.term} (${(rare.share * 100).toFixed(2)}%)`, path: `/v1/customers?search=${enc(rare.term)}` },
    { name: `GET /v1/customers?search=${common.term} (${(common.share * 100).toFixed(1)}%)`, path: `/v1/customers?search=${enc(common.term)}` },
    { name: 'GET /v1/customers?sort=totalAmountSpent&direction=asc&page=200', path: '/v1/customers?sort=totalAmountSpent&direction=asc&page=200' },
  ];
}

/**
 * The floor and the six customer lists on `target`; with `beside` (on PostgreSQL, the SQLite service), each one is
 * loaded there right after, so that both engines' figures of a row come from the same moment of the sitting.
 */
async function listLoads(run: Run, target: Target, beside?: Target): Promise<{ floor: Load; lists: Load[]; beside?: { floor: Load; lists: Load[] } }> {
  const floorName = 'floor: bare node:http, default page';
  const floor = await load(floorName, target.floor);
  const besideFloor = beside && (await load(`${floorName} (SQLite)`, beside.floor));
  const lists: Load[] = [];
  const besideLists: Load[] = [];
  for (const { name, path } of listRequests(run)) {
    lists.push(await load(name, `${target.base}${path}`, { token: target.token }));
    if (beside) besideLists.push(await load(`${name} (SQLite)`, `${beside.base}${path}`, { token: beside.token }));
  }
  // The SQLite rows keep the names of the rows they are compared with.
  const renamed = (row: Load) => ({ ...row, name: row.name.replace(/ \(SQLite\)$/, '') });
  return { floor, lists, beside: besideFloor && { floor: renamed(besideFloor), lists: besideLists.map(renamed) } };
}

/** On PostgreSQL: the SQLite service and its floor on a copy of the same base, for the lists of the same sitting. */
async function withSqliteBeside<T>(run: Run, work: (beside: Target | undefined) => Promise<T>): Promise<T> {
  if (run.engine === 'sqlite') return work(undefined);
  const sqlite = await startOn({ ...sqliteEnv(RUN), PORT: String(SQLITE_PORT) }, RUN, SQLITE_FLOOR_PORT, 'bench-service-sqlite');
  try {
    return await work({ base: `http://127.0.0.1:${SQLITE_PORT}`, floor: `http://127.0.0.1:${SQLITE_FLOOR_PORT}/`, token: sqlite.token });
  } finally {
    await stopService(sqlite);
  }
}

/** The read endpoints and segment previews under 50 connections, next to the floor (on PostgreSQL, the lists next to SQLite's). */
async function loadEndpoints(run: Run): Promise<void> {
  const { token } = need(run.service, 'service');
  log(`HTTP, 50 connections, ${DURATION} s each${run.engine === 'postgres' ? `; each list also on SQLite (a copy of ${SOURCE}) right after` : ''}:`);
  const target = { base: api(''), floor: `http://127.0.0.1:${FLOOR_PORT}/`, token };
  const { floor: floorRow, lists, beside } = await withSqliteBeside(run, (sqlite) => listLoads(run, target, sqlite));
  if (beside) run.figures.sqliteLists = { floor: beside.floor, http: beside.lists };
  const httpRows = [
    ...lists,
    await load('GET /v1/customers/kpis', api('/v1/customers/kpis'), { token }),
    await load('GET /v1/customers/trend?months=24', api('/v1/customers/trend?months=24'), { token }),
    await load('GET /v1/customers/health', api('/v1/customers/health'), { token }),
    await load('GET /v1/customers/top', api('/v1/customers/top'), { token }),
  ];
  for (const set of CONDITION_SETS) {
    httpRows.push(await load(`POST /v1/segments/preview: ${set.name}`, api('/v1/segments/preview'), { token, method: 'POST', body: { conditions: set.conditions } }));
  }
  // Cold previews: every request has an amount bound no request had before, so each one is counted afresh.
  let coldSerial = 0;
  const [, fourConditions] = CONDITION_SETS;
  httpRows.push(
    await load(`POST /v1/segments/preview: ${fourConditions!.name}, cold`, api('/v1/segments/preview'), {
      token,
      method: 'POST',
      bodies: () => ({
        conditions: fourConditions!.conditions.map((c) => (c.field === 'totalAmountSpent' ? { ...c, value: 1000 + ++coldSerial / 100 } : c)),
      }),
    }),
  );
  run.figures.floor = floorRow;
  run.figures.http = httpRows;
  // Measured: on PostgreSQL the floor's change feed would follow every write of the stages after this one.
  need(run.service, 'service').floor.kill('SIGTERM');
}

/** Import: 1000-row requests (the API's cap) of new customers from 4 concurrent clients, while KPIs are polled. */
async function loadImports(run: Run): Promise<void> {
  const { token } = need(run.service, 'service');
  const bodies = importBodies(IMPORT_REQUESTS * 2, { seed: 7, firstSerial: 50_000_000 });
  const imports = await importLoad(api(''), token, bodies.slice(0, IMPORT_REQUESTS), IMPORT_CLIENTS);
  log(
    `Import: ${Math.round(imports.rowsPerSecond).toLocaleString('en')} rows/s (${IMPORT_REQUESTS} requests of 1000 rows from ${IMPORT_CLIENTS} clients; ` +
      `slowest request ${Math.round(imports.worstImportMs)} ms); GET /v1/customers/kpis meanwhile: worst ${Math.round(imports.kpisWorstMs)} ms, ` +
      `p99 ${Math.round(imports.kpisP99Ms)} ms over ${imports.kpisSamples} requests`,
  );
  run.backupBodies = bodies.slice(IMPORT_REQUESTS);
  run.figures.import = imports;
}

/** A backup of the live database (npm run backup, another process) while imports go on. */
async function backupUnderLoad(run: Run): Promise<void> {
  const { token } = need(run.service, 'service');
  log('Backup while imports run:');
  const backupFile = 'data/bench-backup.db';
  rmSync(backupFile, { force: true });
  run.figures.backup = await backupDuringImports(api(''), token, RUN, backupFile, need(run.backupBodies, 'import bodies'));
  rmSync(backupFile, { force: true });
}

/** A CSV export of every customer (a segment matching the whole base) while GET /v1/customers/kpis is timed. */
async function exportEveryone(run: Run): Promise<void> {
  const { token, process: service } = need(run.service, 'service');
  log('Export of the whole base as CSV:');
  const everyone = await fetch(api('/v1/segments'), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Bench: everyone', conditions: [{ field: 'totalTransactions', operator: 'gte', value: 0 }] }),
  });
  const exported = await exportLoad(api(''), token, ((await everyone.json()) as { id: string }).id, service.pid!);
  log(`  ${exported.rows.toLocaleString('en')} rows in ${exported.seconds.toFixed(1)} s: ${Math.round(exported.rowsPerSecond).toLocaleString('en')} rows/s; kpis waited at most ${Math.round(exported.worstOtherRequestMs)} ms; RSS ${Math.round(exported.rssBeforeMb)} -> ${Math.round(exported.peakRssMb)} MB`);
  run.figures.export = exported;
}

/** CSV import jobs of a million rows into this base of a million, then the same customers updated; stops the service. */
async function csvJobsIntoFullBase(run: Run): Promise<void> {
  const { token, process: service } = need(run.service, 'service');
  log('CSV import jobs:');
  run.figures.jobIntoFull = await csvJobLoad(api(''), token, CSV.intoFull, CUSTOMERS, '1');
  run.figures.peakRssBeforeUpdate = rssMb(service.pid!, 'VmHWM');
  // The same customers again, a week later, with onExisting=update: every row replaces a stored customer.
  run.figures.jobUpdateFull = await csvJobLoad(api(''), token, CSV.updateFull, CUSTOMERS, '1', 'update');
  run.figures.peakRssFull = rssMb(service.pid!, 'VmHWM');
  await stopService(need(run.service, 'service'));
  run.service = undefined;
}

/** The environment of a service on an empty base of the run's engine, made afresh with the user to sign in as. */
async function emptyBase(run: Run): Promise<Record<string, string>> {
  if (run.engine === 'sqlite') {
    removeDatabase(EMPTY);
    await ensureUserAt(EMPTY, ACCOUNT);
    return sqliteEnv(EMPTY);
  }
  const url = await need(run.pg, 'PostgreSQL').server.create(PG.empty);
  await ensureUserAt(url, ACCOUNT);
  return postgresEnv(url);
}

/** A CSV import job of a million rows into an empty base, on a service of its own. */
async function csvJobIntoEmptyBase(run: Run): Promise<void> {
  const emptyService = start(SERVICE, await emptyBase(run), 'data/bench-service-empty.log');
  await untilHealthy(emptyService, String(PORT), 'data/bench-service-empty.log');
  const emptyToken = await signIn(api(''), ACCOUNT.email, ACCOUNT.password);
  const editId = await customerToEdit(api(''), emptyToken);
  run.figures.jobIntoEmpty = await csvJobLoad(api(''), emptyToken, CSV.intoEmpty, CUSTOMERS, editId);
  run.figures.peakRssEmpty = rssMb(emptyService.pid!, 'VmHWM');
  emptyService.kill('SIGTERM');
  await new Promise((resolve) => emptyService.once('exit', resolve));
  if (run.pg) await run.pg.server.drop(PG.empty);
}

/** On PostgreSQL: the SQLite base moved with `npm run move-to-postgres` onto an empty database. */
async function moveBase(run: Run): Promise<void> {
  const { server } = need(run.pg, 'PostgreSQL');
  log(`Moving ${SOURCE} (${CUSTOMERS.toLocaleString('en')} customers) with npm run move-to-postgres onto an empty database:`);
  freshCopy(SOURCE, MOVE_FROM);
  try {
    const move = await moveToPostgres(MOVE_FROM, await server.create(PG.move), CUSTOMERS);
    log(`  ${move.seconds.toFixed(1)} s: ${Math.round(move.rowsPerSecond).toLocaleString('en')} customers/s; peak RSS ${Math.round(move.peakRssMb)} MB`);
    run.figures.move = move;
  } finally {
    removeDatabase(MOVE_FROM);
    await server.drop(PG.move);
  }
}

/** The stages every run has, by name. */
const SHARED = {
  terms: { name: 'search terms', run: chooseTerms },
  aggregates: { name: 'aggregates in process', run: timeAggregates },
  previews: { name: 'previews in process', run: timePreviews },
  csvFiles: { name: 'CSV files', run: writeCsvFiles },
  startUp: { name: 'start-up', run: startService },
  http: { name: 'HTTP endpoints', run: loadEndpoints },
  imports: { name: 'JSON imports', run: loadImports },
  export: { name: 'export', run: exportEveryone },
  jobsFull: { name: 'CSV jobs into the full base', run: csvJobsIntoFullBase },
  jobEmpty: { name: 'CSV job into an empty base', run: csvJobIntoEmptyBase },
} satisfies Record<string, Stage>;

/** The stages of a run on SQLite, in order. Campaigns (100,000 of them) and chat streams run on the same database. */
const SQLITE_STAGES: Stage[] = [
  { name: 'seed', run: seedBase },
  SHARED.terms,
  SHARED.aggregates,
  SHARED.previews,
  SHARED.csvFiles,
  { name: 'SQLite alone', run: timeSqliteAlone },
  SHARED.startUp,
  SHARED.http,
  SHARED.imports,
  { name: 'backup', run: backupUnderLoad },
  SHARED.export,
  SHARED.jobsFull,
  SHARED.jobEmpty,
  {
    name: 'campaigns',
    run: async (run) => {
      run.figures.campaigns = await benchCampaigns({ database: RUN, duration: DURATION });
    },
  },
  {
    name: 'chat',
    run: async (run) => {
      run.figures.chat = await benchChat({ database: RUN });
    },
  },
  {
    name: 'webhooks',
    run: async (run) => {
      log('Webhooks: 1,000 events to a receiver on loopback:');
      run.figures.webhooks = await webhookLoad();
    },
  },
];

/**
 * The stages of a run on PostgreSQL, in order: those of SQLite that mean the same there (its HTTP stage measures the
 * lists on SQLite too, in the same sitting), PostgreSQL alone and the move. Not run: the SQLite backup (PostgreSQL has its own tools), and
 * campaigns, chat and webhooks, which no customer table serves (their benches run on SQLite).
 */
const POSTGRES_STAGES: Stage[] = [
  { name: 'seed', run: seedPostgresBase },
  SHARED.terms,
  SHARED.aggregates,
  SHARED.previews,
  SHARED.csvFiles,
  { name: 'PostgreSQL alone', run: timePostgresAlone },
  SHARED.startUp,
  SHARED.http,
  SHARED.imports,
  SHARED.export,
  SHARED.jobsFull,
  SHARED.jobEmpty,
  { name: 'move', run: moveBase },
  // Last: its own database and instances, so that nothing else of the run shares the machine with them.
  {
    name: 'instances',
    run: async (run) => {
      run.instances = await benchInstances(run.pg!.server, { customers: CUSTOMERS, seconds: DURATION, out: OUT.replace(/(\.json)?$/, '-instances.json') });
    },
  },
];

async function main(): Promise<void> {
  const run: Run = { engine: ENGINE, figures: { engine: ENGINE } };
  try {
    for (const stage of ENGINE === 'postgres' ? POSTGRES_STAGES : SQLITE_STAGES) {
      try {
        await stage.run(run);
      } catch (error) {
        log(`The bench stopped in its stage "${stage.name}".`);
        throw error;
      }
    }
  } finally {
    // Whatever stopped the run: nothing it started is left running (the cluster goes with its databases).
    await stopAll();
    await run.local?.close();
    await run.pg?.server.close();
  }
  const report = toReport(completeFigures(run.figures));
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\n${formatReport(report, OUT)}\n`);
  if (run.instances) process.stdout.write(`\n${run.instances}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
