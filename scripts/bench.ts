// `npm run bench [-- --customers N] [--duration S] [--out FILE]`: measures the service on a large base and
// prints a table; figures are also written as JSON. See README "Benchmark" for what each row means.
// Besides the read endpoints it measures a fresh seed, imports from several concurrent clients while a poller
// watches how long other requests wait, and segment previews both repeated and never seen before.
// The run is a table of stages (STAGES, at the end), run in order; each adds its figures (bench-report.ts).
import type { ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { openCustomers, type Customers } from '../src/customers/index.ts';
import { openSqliteEngine, type SqliteEngine } from '../src/db/engine.ts';
import { DAY_MS, STALE_AFTER_DAYS } from '../src/domain/customers.ts';
import { compileConditions, type Condition } from '../src/domain/segments.ts';
import { benchCampaigns } from './bench-campaigns.ts';
import { benchChat } from './bench-chat.ts';
import { exportLoad } from './bench-exports.ts';
import { backupDuringImports, csvJobLoad, customerToEdit, importLoad, sqliteAlone } from './bench-imports.ts';
import { completeFigures, formatReport, toReport, type Figures, type InProcessRow, type SearchTerm } from './bench-report.ts';
import {
  ensureUser,
  ensureUserAt,
  importBodies,
  load as loadFor,
  type LoadOptions,
  log,
  removeDatabase,
  rssMb,
  SERVICE,
  signIn,
  sleep,
  startProcess as start,
  waitFor,
} from './bench-support.ts';
import { webhookLoad } from './bench-webhooks.ts';
import { writeCustomersCsv } from './csv-file.ts';
import { seedDatabase } from './seed.ts';

const { values } = parseArgs({
  options: { customers: { type: 'string', default: '1000000' }, duration: { type: 'string', default: '5' }, out: { type: 'string' } },
});
const CUSTOMERS = Number(values.customers);
const DURATION = Number(values.duration);
const SOURCE = `data/bench-${CUSTOMERS}.db`;
const RUN = 'data/bench-run.db';
const OUT = values.out ?? 'data/bench.json';
const SEED_RUN = 'data/bench-seed.db';
const EMPTY = 'data/bench-empty.db';
const PORT = 3917;
const FLOOR_PORT = 3918;
const ACCOUNT = { email: 'bench@example.com', fullName: 'Bench', role: 'admin', password: 'bench-password-1' } as const;
const SERVICE_ENV = { DATABASE_PATH: RUN, PORT: String(PORT), LOG_LEVEL: 'info', ADMIN_PASSWORD: 'unused-admin-password' };
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

/** What the stages share: what earlier stages set up for later ones, and the figures measured so far. */
interface Run {
  /** The run database opened in this process for the in-process timings (closed once they end), and their clock. */
  local?: { engine: SqliteEngine; customers: Customers['store']; audience: Customers['audience']; now: Date };
  /** The country with the fewest customers, listed over HTTP. */
  topCountry?: string;
  /** The service on the run database, the floor beside it, and the token signed in with. */
  service?: { process: ChildProcess; floor: ChildProcess; token: string };
  /** The JSON import bodies the backup sends (the imports stage sent the others). */
  backupBodies?: string[];
  figures: Partial<Figures>;
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

/** A fresh load into an empty database, as `npm run seed` does it; kept as the base when there is none yet. */
async function seedBase(run: Run): Promise<void> {
  mkdirSync(dirname(SOURCE), { recursive: true });
  removeDatabase(SEED_RUN);
  log(`Seeding ${CUSTOMERS.toLocaleString('en')} customers into an empty ${SEED_RUN}...`);
  const seedRowsPerSecond = seedDatabase(SEED_RUN, CUSTOMERS, { seed: 42, quiet: true });
  log(`Seed: ${seedRowsPerSecond.toLocaleString('en')} rows/s`);
  if (existsSync(SOURCE)) removeDatabase(SEED_RUN);
  else renameSync(SEED_RUN, SOURCE);
  await openSqliteEngine(SOURCE).close(); // brings a database kept from an older run up to the current schema
  removeDatabase(RUN);
  copyFileSync(SOURCE, RUN);
  run.figures.seedRowsPerSecond = seedRowsPerSecond;
}

/** Opens the run database: a user to sign in as, and the search terms to measure, chosen from the data itself. */
async function chooseTerms(run: Run): Promise<void> {
  const engine = openSqliteEngine(RUN);
  await ensureUser(engine, ACCOUNT);
  const { store: customers, audience } = openCustomers(engine);
  const base = await customers.stats.countMatching(undefined, undefined);
  const shares: SearchTerm[] = [];
  for (const term of SEARCH_CANDIDATES) {
    const page = await customers.listCustomers({ search: term, status: 'all', country: '', sort: 'lastActivityDate', direction: 'desc', page: 1, limit: 1 });
    shares.push({ term, share: page.total / base });
  }
  const closest = (target: number) => shares.reduce((best, c) => (Math.abs(Math.log(c.share / target)) < Math.abs(Math.log(best.share / target)) ? c : best));
  run.figures.customers = base;
  run.figures.searchTerms = { rare: closest(0.0005), onePercent: closest(0.01), common: closest(0.15) };
  run.topCountry = engine.db.prepare('SELECT country_key FROM customer_countries GROUP BY country_key ORDER BY sum(customers) LIMIT 1').pluck().get() as string;
  run.local = { engine, customers, audience, now: new Date() };
}

/** In process: each aggregate next to its naive single query over customers. */
async function timeAggregates(run: Run): Promise<void> {
  const { engine, customers, now } = need(run.local, 'run database');
  const { onePercent } = need(run.figures.searchTerms, 'search terms');
  const { db } = engine;
  log('In-process timings (median ms per call):');
  const months24 = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 23, 1)).getTime();
  const naive = {
    kpis: db.prepare('SELECT status, count(*) AS n, sum(amount_cents) AS cents FROM customers GROUP BY status'),
    trend: db.prepare(
      `SELECT strftime('%Y-%m', last_activity_at / 1000, 'unixepoch') AS month, count(*) AS n, sum(amount_cents) AS cents,
              sum(status = 'churned') AS churned FROM customers WHERE last_activity_at >= ? GROUP BY month`,
    ),
    health: db.prepare(
      `SELECT count(*) AS n, sum(status = 'active') AS active, sum(status = 'inactive') AS inactive, sum(status = 'churned') AS churned,
              sum(status = 'active' AND last_activity_at < ?) AS stale FROM customers`,
    ),
    top: db.prepare('SELECT (SELECT sum(amount_cents) FROM customers) AS total, id FROM customers NOT INDEXED ORDER BY amount_cents DESC, last_activity_at DESC LIMIT 5'),
    like: db.prepare("SELECT count(*) AS n FROM customers WHERE name LIKE ? ESCAPE '\\' OR email LIKE ? ESCAPE '\\'"),
  };
  // The statement the service runs for an unfiltered search count (before its per-generation memory).
  const trigramCount = db.prepare('SELECT count(*) AS n FROM customer_search WHERE customer_search MATCH ?');
  run.figures.inProcess = [
    { name: 'kpis', ours: await timeIt(() => customers.stats.totalsByStatus()), naive: await timeIt(() => naive.kpis.all(), 3, 1) },
    {
      name: 'trend (24 months)',
      ours: await timeIt(() => customers.stats.daysBetween(Math.floor(months24 / DAY_MS), Math.floor(now.getTime() / DAY_MS) + 32)),
      naive: await timeIt(() => naive.trend.all(months24), 3, 1),
    },
    {
      name: 'health',
      ours: await timeIt(() => customers.stats.healthInputs(now)),
      naive: await timeIt(() => naive.health.get(now.getTime() - STALE_AFTER_DAYS * DAY_MS), 3, 1),
    },
    { name: 'top (5)', ours: await timeIt(() => Promise.all([customers.stats.totalsByStatus(), customers.topCustomers(5)])), naive: await timeIt(() => naive.top.all(), 3, 1) },
    {
      name: `search count "${onePercent.term}" (${(onePercent.share * 100).toFixed(2)}%), uncached`,
      ours: await timeIt(() => trigramCount.get(`"${onePercent.term}"`)),
      naive: await timeIt(() => naive.like.get(`%${onePercent.term}%`, `%${onePercent.term}%`), 3, 1),
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
  const { engine, audience, now } = need(run.local, 'run database');
  const rows: InProcessRow[] = need(run.figures.inProcess, 'aggregate timings');
  const loadStart = performance.now();
  await audience.count(null);
  run.figures.audienceIndexLoadMs = performance.now() - loadStart;
  const footprint = await audience.footprint();
  run.figures.audienceIndex = footprint;
  log(
    `Audience index: ${(footprint.bytes / 1e6).toFixed(1)} MB for ${footprint.rows.toLocaleString('en')} customers (room for ` +
      `${footprint.room.toLocaleString('en')}): ${(footprint.bytes / footprint.rows).toFixed(1)} bytes a customer, ${(footprint.bytes / footprint.room).toFixed(1)} a row of room`,
  );
  for (const set of CONDITION_SETS) {
    const fullScan = engine.db.prepare(`SELECT count(*) FROM customers NOT INDEXED WHERE ${naiveWhere(set.conditions, now)}`).pluck();
    const expected = fullScan.get() as number;
    const bounds = compileConditions(set.conditions, now);
    const got = await audience.count(bounds, now.getTime());
    if (got !== expected) throw new Error(`engine counted ${got}, SQL ${expected} for ${set.name}`);
    if ((await audience.countAfresh(bounds)) !== expected) throw new Error(`engine counted afresh differently for ${set.name}`);
    rows.push({
      name: `segment preview: ${set.name} = ${got}, uncached`,
      ours: await timeIt(() => audience.countAfresh(compileConditions(set.conditions, now)), 7, 1),
      naive: await timeIt(() => fullScan.get(), 3, 1),
    });
  }
  for (const row of rows) log(`  ${row.name.padEnd(58)} ${row.ours.toFixed(3).padStart(8)} vs ${row.naive.toFixed(1).padStart(7)}  x${Math.round(row.naive / row.ours)}`);
  await engine.close();
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

/** Start-up: from spawning the service to /health answering, on the large database; then the floor, and a sign-in. */
async function startService(run: Run): Promise<void> {
  const service = start(SERVICE, SERVICE_ENV, 'data/bench-service.log'); // request logs as in production
  const startupMs = await waitFor(`http://127.0.0.1:${PORT}/health`);
  log(`Start-up to /health: ${Math.round(startupMs)} ms`);
  const floor = start(['--import', 'tsx', 'scripts/bench-floor.ts', RUN, String(FLOOR_PORT)], {}, 'data/bench-floor.log');
  await waitFor(`http://127.0.0.1:${FLOOR_PORT}/`);
  const token = await signIn(api(''), ACCOUNT.email, ACCOUNT.password);
  await sleep(1500); // let the audience index finish its background load
  run.service = { process: service, floor, token };
  run.figures.startupMs = startupMs;
}

/** The read endpoints and segment previews under 50 connections, next to the floor. */
async function loadEndpoints(run: Run): Promise<void> {
  const { token } = need(run.service, 'service');
  const { rare, common } = need(run.figures.searchTerms, 'search terms');
  const topCountry = need(run.topCountry, 'top country');
  log(`HTTP, 50 connections, ${DURATION} s each:`);
  const floorRow = await load('floor: bare node:http, default page', `http://127.0.0.1:${FLOOR_PORT}/`);
  const enc = encodeURIComponent;
  const httpRows = [
    await load('GET /v1/customers (default)', api('/v1/customers'), { token }),
    await load('GET /v1/customers?status=active', api('/v1/customers?status=active'), { token }),
    await load(`GET /v1/customers?country=${topCountry} (smallest)`, api(`/v1/customers?country=${enc(topCountry)}`), { token }),
    await load(`GET /v1/customers?search=${rare.term} (${(rare.share * 100).toFixed(2)}%)`, api(`/v1/customers?search=${enc(rare.term)}`), { token }),
    await load(`GET /v1/customers?search=${common.term} (${(common.share * 100).toFixed(1)}%)`, api(`/v1/customers?search=${enc(common.term)}`), { token }),
    await load('GET /v1/customers?sort=totalAmountSpent&direction=asc&page=200', api('/v1/customers?sort=totalAmountSpent&direction=asc&page=200'), { token }),
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
  const { token, process: service, floor } = need(run.service, 'service');
  log('CSV import jobs:');
  run.figures.jobIntoFull = await csvJobLoad(api(''), token, CSV.intoFull, CUSTOMERS, '1');
  run.figures.peakRssBeforeUpdate = rssMb(service.pid!, 'VmHWM');
  // The same customers again, a week later, with onExisting=update: every row replaces a stored customer.
  run.figures.jobUpdateFull = await csvJobLoad(api(''), token, CSV.updateFull, CUSTOMERS, '1', 'update');
  run.figures.peakRssFull = rssMb(service.pid!, 'VmHWM');
  service.kill('SIGTERM');
  floor.kill('SIGTERM');
  await new Promise((resolve) => service.once('exit', resolve));
  run.service = undefined;
}

/** A CSV import job of a million rows into an empty base, on a service of its own. */
async function csvJobIntoEmptyBase(run: Run): Promise<void> {
  removeDatabase(EMPTY);
  await ensureUserAt(EMPTY, ACCOUNT);
  const emptyService = start(SERVICE, { ...SERVICE_ENV, DATABASE_PATH: EMPTY }, 'data/bench-service-empty.log');
  await waitFor(`http://127.0.0.1:${PORT}/health`);
  const emptyToken = await signIn(api(''), ACCOUNT.email, ACCOUNT.password);
  const editId = await customerToEdit(api(''), emptyToken);
  run.figures.jobIntoEmpty = await csvJobLoad(api(''), emptyToken, CSV.intoEmpty, CUSTOMERS, editId);
  run.figures.peakRssEmpty = rssMb(emptyService.pid!, 'VmHWM');
  emptyService.kill('SIGTERM');
  await new Promise((resolve) => emptyService.once('exit', resolve));
}

/** The stages of a run, in order. Campaigns (100,000 of them) and chat streams run on the same database. */
const STAGES: Stage[] = [
  { name: 'seed', run: seedBase },
  { name: 'search terms', run: chooseTerms },
  { name: 'aggregates in process', run: timeAggregates },
  { name: 'previews in process', run: timePreviews },
  { name: 'CSV files', run: writeCsvFiles },
  { name: 'SQLite alone', run: timeSqliteAlone },
  { name: 'start-up', run: startService },
  { name: 'HTTP endpoints', run: loadEndpoints },
  { name: 'JSON imports', run: loadImports },
  { name: 'backup', run: backupUnderLoad },
  { name: 'export', run: exportEveryone },
  { name: 'CSV jobs into the full base', run: csvJobsIntoFullBase },
  { name: 'CSV job into an empty base', run: csvJobIntoEmptyBase },
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

async function main(): Promise<void> {
  const run: Run = { figures: {} };
  for (const stage of STAGES) {
    try {
      await stage.run(run);
    } catch (error) {
      log(`The bench stopped in its stage "${stage.name}".`);
      throw error;
    }
  }
  const report = toReport(completeFigures(run.figures));
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\n${formatReport(report, OUT)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
