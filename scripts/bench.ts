// `npm run bench [-- --customers N] [--duration S] [--out FILE]`: measures the service on a large base and
// prints a table; figures are also written as JSON. See README "Benchmark" for what each row means.
// Besides the read endpoints it measures a fresh seed, imports from several concurrent clients while a poller
// watches how long other requests wait, and segment previews both repeated and never seen before.
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { openCustomers } from '../src/customers/index.ts';
import { openDatabase } from '../src/db/database.ts';
import { createUserRepository } from '../src/db/users.ts';
import { customerFields, DAY_MS, STALE_AFTER_DAYS } from '../src/domain/customers.ts';
import { hashPassword } from '../src/domain/passwords.ts';
import { compileConditions, type Condition } from '../src/domain/segments.ts';
import { benchCampaigns } from './bench-campaigns.ts';
import { benchChat } from './bench-chat.ts';
import { backupDuringImports, csvJobLoad, sqliteAlone, type JobLoad } from './bench-imports.ts';
import { exportLoad } from './bench-exports.ts';
import { webhookLoad } from './bench-webhooks.ts';
import { writeCustomersCsv } from './csv-file.ts';
import { load as loadFor, type LoadOptions, log, percentile, rssMb, SERVICE, startProcess as start, waitFor } from './bench-support.ts';
import { seedDatabase } from './seed.ts';
import { syntheticCustomers } from './synthetic-customers.ts';

const { values } = parseArgs({
  options: { customers: { type: 'string', default: '1000000' }, duration: { type: 'string', default: '5' }, out: { type: 'string' } },
});
const CUSTOMERS = Number(values.customers);
const DURATION = Number(values.duration);
const SOURCE = `data/bench-${CUSTOMERS}.db`;
const RUN = 'data/bench-run.db';
const OUT = values.out ?? 'data/bench.json';
const SEED_RUN = 'data/bench-seed.db';
const PORT = 3917;
const FLOOR_PORT = 3918;
const EMAIL = 'bench@example.com';
const PASSWORD = 'bench-password-1';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const load = (name: string, url: string, options: LoadOptions = {}) => loadFor(name, url, DURATION, options);

/** Milliseconds per call of `fn`, the median of several rounds. */
function timeIt(fn: () => unknown, rounds = 7, perRound = 3): number {
  fn();
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    for (let i = 0; i < perRound; i++) fn();
    samples.push((performance.now() - start) / perRound);
  }
  return samples.sort((a, b) => a - b)[Math.floor(rounds / 2)]!;
}

async function timeAsync(fn: () => Promise<unknown>, rounds = 7): Promise<number> {
  await fn();
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  return samples.sort((a, b) => a - b)[Math.floor(rounds / 2)]!;
}

interface ImportLoad {
  rowsPerSecond: number;
  requests: number;
  clients: number;
  /** The slowest import request, ms. */
  worstImportMs: number;
  /** GET /v1/customers/kpis polled one at a time while the imports ran: how long it waited at worst, and p99. */
  kpisWorstMs: number;
  kpisP99Ms: number;
  kpisSamples: number;
}

/** Sends the bodies (1000 rows each) from `clients` concurrent clients while one poller reads the KPIs in a loop. */
async function importLoad(api: (path: string) => string, token: string, bodies: string[], clients: number): Promise<ImportLoad> {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  let next = 0;
  const importMs: number[] = [];
  const client = async () => {
    for (let i = next++; i < bodies.length; i = next++) {
      const started = performance.now();
      const reply = await fetch(api('/v1/customers/import'), { method: 'POST', headers, body: bodies[i] });
      const report = (await reply.json()) as { imported: number };
      if (report.imported !== 1000) throw new Error(`import request ${i}: ${JSON.stringify(report).slice(0, 200)}`);
      importMs.push(performance.now() - started);
    }
  };
  let importing = true;
  const kpisMs: number[] = [];
  const poll = async () => {
    while (importing) {
      const started = performance.now();
      const reply = await fetch(api('/v1/customers/kpis'), { headers });
      await reply.arrayBuffer();
      kpisMs.push(performance.now() - started);
      await sleep(5);
    }
  };
  const poller = poll();
  const started = performance.now();
  await Promise.all(Array.from({ length: clients }, client));
  const seconds = (performance.now() - started) / 1000;
  importing = false;
  await poller;
  return {
    rowsPerSecond: (bodies.length * 1000) / seconds,
    requests: bodies.length,
    clients,
    worstImportMs: Math.max(...importMs),
    kpisWorstMs: Math.max(...kpisMs),
    kpisP99Ms: percentile(kpisMs, 0.99),
    kpisSamples: kpisMs.length,
  };
}

async function main(): Promise<void> {
  mkdirSync(dirname(SOURCE), { recursive: true });
  // Seed: a fresh load into an empty database, as `npm run seed` does it; kept as the base when there is none yet.
  for (const suffix of ['', '-wal', '-shm']) rmSync(SEED_RUN + suffix, { force: true });
  log(`Seeding ${CUSTOMERS.toLocaleString('en')} customers into an empty ${SEED_RUN}...`);
  const seedRowsPerSecond = seedDatabase(SEED_RUN, CUSTOMERS, { seed: 42, quiet: true });
  log(`Seed: ${seedRowsPerSecond.toLocaleString('en')} rows/s`);
  if (existsSync(SOURCE)) rmSync(SEED_RUN, { force: true });
  else renameSync(SEED_RUN, SOURCE);
  openDatabase(SOURCE).close(); // brings a database kept from an older run up to the current schema
  for (const suffix of ['', '-wal', '-shm', '.secret']) rmSync(RUN + suffix, { force: true });
  copyFileSync(SOURCE, RUN);

  // A user to sign in as, and the terms and condition sets to measure, chosen from the data itself.
  const db = openDatabase(RUN);
  const users = createUserRepository(db);
  if (!users.findCredentials(EMAIL)) {
    users.insertUser({ email: EMAIL, fullName: 'Bench', role: 'admin', passwordHash: await hashPassword(PASSWORD) }, new Date());
  }
  const { store: customers, audience } = openCustomers(db);
  const base = customers.stats.countMatching(undefined, undefined);
  const candidates = ['smith', 'zofia', 'o\'brien', 'aoife.k', 'lars.b', 'example.org', 'mail.example', 'müller', 'anna', 'kenji.n', 'ia.s', 'laurent', 'dvořák'];
  const share = (term: string) => customers.listCustomers({ search: term, status: 'all', country: '', sort: 'lastActivityDate', direction: 'desc', page: 1, limit: 1 }).total / base;
  const shares = candidates.map((term) => ({ term, share: share(term) }));
  const closest = (target: number) => shares.reduce((best, c) => (Math.abs(Math.log(c.share / target)) < Math.abs(Math.log(best.share / target)) ? c : best));
  const rare = closest(0.0005);
  const onePercent = closest(0.01);
  const common = closest(0.15);
  const topCountry = (db.prepare('SELECT country_key FROM customer_countries GROUP BY country_key ORDER BY sum(customers) LIMIT 1').pluck().get() as string);

  const now = new Date();
  const conditionSets: { name: string; conditions: Condition[] }[] = [
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

  // In-process: each aggregate next to its naive single query over customers.
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
  const aggregateRows = [
    { name: 'kpis', ours: timeIt(() => customers.stats.totalsByStatus()), naive: timeIt(() => naive.kpis.all(), 3, 1) },
    {
      name: 'trend (24 months)',
      ours: timeIt(() => customers.stats.daysBetween(Math.floor(months24 / DAY_MS), Math.floor(now.getTime() / DAY_MS) + 32)),
      naive: timeIt(() => naive.trend.all(months24), 3, 1),
    },
    { name: 'health', ours: timeIt(() => customers.stats.healthInputs(now)), naive: timeIt(() => naive.health.get(now.getTime() - STALE_AFTER_DAYS * DAY_MS), 3, 1) },
    { name: 'top (5)', ours: timeIt(() => [customers.stats.totalsByStatus(), customers.topCustomers(5)]), naive: timeIt(() => naive.top.all(), 3, 1) },
    {
      name: `search count "${onePercent.term}" (${(onePercent.share * 100).toFixed(2)}%), uncached`,
      ours: timeIt(() => trigramCount.get(`"${onePercent.term}"`)),
      naive: timeIt(() => naive.like.get(`%${onePercent.term}%`, `%${onePercent.term}%`), 3, 1),
    },
  ];
  const loadStart = performance.now();
  await audience.count(null);
  const audienceLoadMs = performance.now() - loadStart;
  const audienceFootprint = await audience.footprint();
  const indexBytesPerCustomer = audienceFootprint.bytes / audienceFootprint.rows;
  log(
    `Audience index: ${(audienceFootprint.bytes / 1e6).toFixed(1)} MB for ${audienceFootprint.rows.toLocaleString('en')} customers (room for ` +
      `${audienceFootprint.room.toLocaleString('en')}): ${indexBytesPerCustomer.toFixed(1)} bytes a customer, ${(audienceFootprint.bytes / audienceFootprint.room).toFixed(1)} a row of room`,
  );
  const sqlOps = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
  for (const set of conditionSets) {
    const where = set.conditions
      .map((c) => {
        const quoted = (values: readonly string[]) => values.map((v) => `'${v.trim().toLowerCase().replaceAll("'", "''")}'`).join(', ');
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
    const fullScan = db.prepare(`SELECT count(*) FROM customers NOT INDEXED WHERE ${where}`).pluck();
    const expected = fullScan.get() as number;
    const bounds = compileConditions(set.conditions, now);
    const got = await audience.count(bounds, now.getTime());
    if (got !== expected) throw new Error(`engine counted ${got}, SQL ${expected} for ${set.name}`);
    if ((await audience.countAfresh(bounds)) !== expected) throw new Error(`engine counted afresh differently for ${set.name}`);
    aggregateRows.push({
      name: `segment preview: ${set.name} = ${got}, uncached`,
      ours: await timeAsync(() => audience.countAfresh(compileConditions(set.conditions, now))),
      naive: timeIt(() => fullScan.get(), 3, 1),
    });
  }
  for (const row of aggregateRows) log(`  ${row.name.padEnd(58)} ${row.ours.toFixed(3).padStart(8)} vs ${row.naive.toFixed(1).padStart(7)}  x${Math.round(row.naive / row.ours)}`);
  db.close();

  // The CSV files of the import jobs, written before the service starts (and kept for later runs, as
  // bench:imports keeps them): 170 MB written just before a job left the machine flushing them during it.
  const intoFull = `data/bench-imports-full-${CUSTOMERS}.csv`;
  const intoEmpty = `data/bench-imports-empty-${CUSTOMERS}.csv`;
  const updateFull = `data/bench-imports-update-${CUSTOMERS}.csv`; // the customers of intoFull a week later
  for (const [file, options] of [
    [intoFull, { seed: 8, firstSerial: 60_000_000 }],
    [intoEmpty, { seed: 9, firstSerial: 1 }],
    [updateFull, { seed: 8, firstSerial: 60_000_000, changed: true }],
  ] as const) {
    if (existsSync(file)) continue;
    log(`Writing ${file}...`);
    await writeCustomersCsv(file, CUSTOMERS, options);
  }

  // The yardstick of the import jobs, measured here, before the service starts: what SQLite itself inserts a second.
  log('SQLite alone, in this process (bare inserts, 50,000-row transactions, 1 GB cache):');
  const alone = await sqliteAlone(SOURCE);
  log(`  ${Math.round(alone.rowsPerSecond).toLocaleString('en')} rows/s from ${CUSTOMERS.toLocaleString('en')} to ${(CUSTOMERS + alone.rows).toLocaleString('en')} customers`);

  // Start-up: from spawning the service to /health answering, on the large database.
  const serviceEnv = { DATABASE_PATH: RUN, PORT: String(PORT), LOG_LEVEL: 'info', ADMIN_PASSWORD: 'unused-admin-password' };
  const service = start(SERVICE, serviceEnv, 'data/bench-service.log'); // request logs as in production
  const startupMs = await waitFor(`http://127.0.0.1:${PORT}/health`);
  log(`Start-up to /health: ${Math.round(startupMs)} ms`);
  const floor = start(['--import', 'tsx', 'scripts/bench-floor.ts', RUN, String(FLOOR_PORT)], {}, 'data/bench-floor.log');
  await waitFor(`http://127.0.0.1:${FLOOR_PORT}/`);

  const signIn = await fetch(`http://127.0.0.1:${PORT}/v1/auth/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  const { accessToken: token } = (await signIn.json()) as { accessToken: string };
  const api = (path: string) => `http://127.0.0.1:${PORT}${path}`;
  await sleep(1500); // let the audience index finish its background load

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
  for (const set of conditionSets) {
    httpRows.push(await load(`POST /v1/segments/preview: ${set.name}`, api('/v1/segments/preview'), { token, method: 'POST', body: { conditions: set.conditions } }));
  }
  // Cold previews: every request has an amount bound no request had before, so each one is counted afresh.
  let coldSerial = 0;
  const [, fourConditions] = conditionSets;
  httpRows.push(
    await load(`POST /v1/segments/preview: ${fourConditions!.name}, cold`, api('/v1/segments/preview'), {
      token,
      method: 'POST',
      bodies: () => ({
        conditions: fourConditions!.conditions.map((c) => (c.field === 'totalAmountSpent' ? { ...c, value: 1000 + ++coldSerial / 100 } : c)),
      }),
    }),
  );

  // Import: 1000-row requests (the API's cap) of new customers from 4 concurrent clients, while KPIs are polled.
  const clients = 4;
  const requests = 60;
  const bodies: string[] = [];
  const fresh = syntheticCustomers(requests * 2 * 1000, { seed: 7, firstSerial: 50_000_000 });
  for (let b = 0; b < requests * 2; b++) {
    const customers = [];
    for (let i = 0; i < 1000; i++) customers.push(customerFields(fresh.next().value!));
    bodies.push(JSON.stringify({ customers }));
  }
  const imports = await importLoad(api, token, bodies.slice(0, requests), clients);
  const importRowsPerSecond = imports.rowsPerSecond;
  log(
    `Import: ${Math.round(importRowsPerSecond).toLocaleString('en')} rows/s (${requests} requests of 1000 rows from ${clients} clients; ` +
      `slowest request ${Math.round(imports.worstImportMs)} ms); GET /v1/customers/kpis meanwhile: worst ${Math.round(imports.kpisWorstMs)} ms, ` +
      `p99 ${Math.round(imports.kpisP99Ms)} ms over ${imports.kpisSamples} requests`,
  );

  // A backup of the live database (npm run backup, another process) while imports go on.
  log('Backup while imports run:');
  const backupFile = 'data/bench-backup.db';
  rmSync(backupFile, { force: true });
  const backup = await backupDuringImports(api(''), token, RUN, backupFile, bodies.slice(requests));
  rmSync(backupFile, { force: true });

  // A CSV export of every customer (a segment matching the whole base) while GET /v1/customers/kpis is timed.
  log('Export of the whole base as CSV:');
  const everyone = await fetch(api('/v1/segments'), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Bench: everyone', conditions: [{ field: 'totalTransactions', operator: 'gte', value: 0 }] }),
  });
  const exported = await exportLoad(api(''), token, ((await everyone.json()) as { id: string }).id, service.pid!);
  log(`  ${exported.rows.toLocaleString('en')} rows in ${exported.seconds.toFixed(1)} s: ${Math.round(exported.rowsPerSecond).toLocaleString('en')} rows/s; kpis waited at most ${Math.round(exported.worstOtherRequestMs)} ms; RSS ${Math.round(exported.rssBeforeMb)} -> ${Math.round(exported.peakRssMb)} MB`);

  // CSV import jobs of a million rows: into this base of a million, then into an empty base.
  log('CSV import jobs:');
  const jobIntoFull = await csvJobLoad(api(''), token, intoFull, CUSTOMERS, '1');
  const peakRssBeforeUpdate = rssMb(service.pid!, 'VmHWM');
  // The same customers again, a week later, with onExisting=update: every row replaces a stored customer.
  const jobUpdateFull = await csvJobLoad(api(''), token, updateFull, CUSTOMERS, '1', 'update');

  const peakRss = rssMb(service.pid!, 'VmHWM');
  service.kill('SIGTERM');
  floor.kill('SIGTERM');
  await new Promise((resolve) => service.once('exit', resolve));

  const EMPTY = 'data/bench-empty.db';
  for (const suffix of ['', '-wal', '-shm', '.secret']) rmSync(EMPTY + suffix, { force: true });
  const emptyDb = openDatabase(EMPTY);
  createUserRepository(emptyDb).insertUser({ email: EMAIL, fullName: 'Bench', role: 'admin', passwordHash: await hashPassword(PASSWORD) }, new Date());
  emptyDb.close();
  const emptyService = start(SERVICE, { ...serviceEnv, DATABASE_PATH: EMPTY }, 'data/bench-service-empty.log');
  await waitFor(`http://127.0.0.1:${PORT}/health`);
  const emptyToken = ((await (await fetch(api('/v1/auth/sign-in'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: EMAIL, password: PASSWORD }) })).json()) as { accessToken: string }).accessToken;
  const edited = await fetch(api('/v1/customers'), {
    method: 'POST',
    headers: { authorization: `Bearer ${emptyToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Edited during the job', email: 'edited@bench.example.com', country: 'Germany', totalTransactions: 1, totalAmountSpent: 1, lastActivityDate: '2026-01-01', status: 'active' }),
  });
  const editId = ((await edited.json()) as { id: string }).id;
  const jobIntoEmpty = await csvJobLoad(api(''), emptyToken, intoEmpty, CUSTOMERS, editId);
  const emptyPeakRss = rssMb(emptyService.pid!, 'VmHWM');
  emptyService.kill('SIGTERM');
  await new Promise((resolve) => emptyService.once('exit', resolve));

  // Campaigns (100,000 of them) and chat streams, on the same database.
  const campaigns = await benchCampaigns({ database: RUN, duration: DURATION });
  const chat = await benchChat({ database: RUN });
  log('Webhooks: 1,000 events to a receiver on loopback:');
  const webhooks = await webhookLoad();

  const report = {
    measuredAt: new Date().toISOString(),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
    customers: base,
    floor: floorRow,
    http: httpRows.map((r) => ({ ...r, ratioToFloor: r.requestsPerSecond / floorRow.requestsPerSecond })),
    inProcess: aggregateRows.map((r) => ({ ...r, speedup: r.naive / r.ours })),
    searchTerms: { rare, onePercent, common },
    audienceIndexLoadMs: audienceLoadMs,
    seedRowsPerSecond,
    importRowsPerSecond,
    import: imports,
    csvJobs: {
      sqliteAlone: alone,
      intoFullBase: { ...jobIntoFull, shareOfSqliteAlone: jobIntoFull.rowsPerSecond / alone.rowsPerSecond },
      intoEmptyBase: { ...jobIntoEmpty, shareOfSqliteAlone: jobIntoEmpty.rowsPerSecond / alone.rowsPerSecond },
      updateInFullBase: { ...jobUpdateFull, shareOfPlainJob: jobUpdateFull.rowsPerSecond / jobIntoFull.rowsPerSecond },
    },
    audienceIndex: { ...audienceFootprint, bytesPerCustomer: indexBytesPerCustomer },
    backup,
    export: exported,
    webhooks,
    startupMs,
    peakRssMb: Math.max(peakRss, emptyPeakRss),
    peakRssMbByService: { fullBase: peakRss, fullBaseBeforeUpdateJob: peakRssBeforeUpdate, emptyBase: emptyPeakRss },
    campaigns,
    chat,
  };
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, `${JSON.stringify(report, null, 2)}\n`);

  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const jobLine = (where: string, job: JobLoad) =>
    `CSV import job of ${job.rows.toLocaleString('en')} rows ${where}: ${Math.round(job.rowsPerSecond).toLocaleString('en')} rows/s upload to completed ` +
    `(${Math.round((job.rowsPerSecond / alone.rowsPerSecond) * 100)}% of SQLite alone, ${Math.round(alone.rowsPerSecond).toLocaleString('en')} rows/s; the target, 25,000 of 58,000, is 43%); ` +
    `other requests meanwhile (a KPI read and a customer edit in turn) waited at most ${Math.round(job.othersWorstMs)} ms ` +
    `(p99 ${Math.round(job.othersP99Ms)} ms; the edits at most ${Math.round(job.edits.worstMs)} ms, the reads ${Math.round(job.reads.worstMs)} ms).`;
  const table = [
    `Benchmark on ${report.machine.cpus} cores (${report.machine.cpuModel}), Node ${report.machine.node}, ${base.toLocaleString('en')} customers`,
    '',
    line(['HTTP endpoint (50 connections)', 'req/s', 'p50 ms', 'p99 ms', 'of floor']),
    line(['-', '-', '-', '-', '-']),
    line([floorRow.name, String(Math.round(floorRow.requestsPerSecond)), String(floorRow.p50), String(floorRow.p99), '100%']),
    ...report.http.map((r) => line([r.name, String(Math.round(r.requestsPerSecond)), String(r.p50), String(r.p99), `${Math.round(r.ratioToFloor * 100)}%`])),
    '',
    line(['In process', 'ours ms', 'naive ms', 'speed-up']),
    line(['-', '-', '-', '-']),
    ...report.inProcess.map((r) => line([r.name, r.ours.toFixed(3), r.naive.toFixed(1), `${Math.round(r.speedup)}x`])),
    '',
    `Import through HTTP in 1000-row requests from ${clients} clients: ${Math.round(importRowsPerSecond).toLocaleString('en')} rows/s ` +
      `(slowest request ${Math.round(imports.worstImportMs)} ms); GET /v1/customers/kpis meanwhile waited at most ${Math.round(imports.kpisWorstMs)} ms ` +
      `(p99 ${Math.round(imports.kpisP99Ms)} ms). Seed of ${base.toLocaleString('en')} customers into an empty database: ${seedRowsPerSecond.toLocaleString('en')} rows/s.`,
    `Backup of the live database (${base.toLocaleString('en')} customers) while imports ran: ${Math.round(backup.backupMs).toLocaleString('en')} ms, ` +
      `${backup.importsDuring} imports of 1000 rows meanwhile; GET /v1/customers/kpis waited at most ${Math.round(backup.othersWorstMs)} ms (p99 ${Math.round(backup.othersP99Ms)} ms).`,
    `Export of the whole base as CSV: ${exported.rows.toLocaleString('en')} rows at ${Math.round(exported.rowsPerSecond).toLocaleString('en')} rows/s; ` +
      `GET /v1/customers/kpis waited at most ${Math.round(exported.worstOtherRequestMs)} ms (p99 ${Math.round(exported.otherP99Ms)} ms); RSS ${Math.round(exported.rssBeforeMb)} -> ${Math.round(exported.peakRssMb)} MB.`,
    jobLine('into a base of a million', jobIntoFull),
    jobLine('into an empty base', jobIntoEmpty),
    `The same ${jobUpdateFull.rows.toLocaleString('en')} customers again a week later with onExisting=update (every row replaces a stored one): ` +
      `${Math.round(jobUpdateFull.rowsPerSecond).toLocaleString('en')} rows/s (${Math.round((jobUpdateFull.rowsPerSecond / jobIntoFull.rowsPerSecond) * 100)}% of the plain job's); ` +
      `other requests waited at most ${Math.round(jobUpdateFull.othersWorstMs)} ms (p99 ${Math.round(jobUpdateFull.othersP99Ms)} ms).`,
    `Audience index: ${indexBytesPerCustomer.toFixed(1)} bytes a customer (${(audienceFootprint.bytes / 1e6).toFixed(1)} MB for ${audienceFootprint.rows.toLocaleString('en')}, room for ${audienceFootprint.room.toLocaleString('en')}).`,
    `Start-up to /health: ${Math.round(startupMs)} ms. Peak RSS of the service: ${Math.round(peakRss)} MB on the full base (${Math.round(peakRssBeforeUpdate)} MB before the update job), ${Math.round(emptyPeakRss)} MB on the empty one. Audience index load: ${Math.round(audienceLoadMs)} ms.`,
    '',
    line(['Campaigns (50 connections)', 'req/s', 'p50 ms', 'p99 ms', 'of floor']),
    line(['-', '-', '-', '-', '-']),
    line([campaigns.floor.name, String(Math.round(campaigns.floor.requestsPerSecond)), String(campaigns.floor.p50), String(campaigns.floor.p99), '100%']),
    line([campaigns.list.name, String(Math.round(campaigns.list.requestsPerSecond)), String(campaigns.list.p50), String(campaigns.list.p99), `${Math.round(campaigns.list.ratioToFloor * 100)}%`]),
    line([campaigns.localGeneration.name, String(Math.round(campaigns.localGeneration.requestsPerSecond)), String(campaigns.localGeneration.p50), String(campaigns.localGeneration.p99), '']),
    line([campaigns.segmentDraft.name, String(Math.round(campaigns.segmentDraft.requestsPerSecond)), String(campaigns.segmentDraft.p50), String(campaigns.segmentDraft.p99), '']),
    '',
    `Generation through a provider answering at once, ${campaigns.provider.requests} requests one at a time: service p50 ${campaigns.provider.serviceP50.toFixed(2)} ms, ` +
      `provider p50 ${campaigns.provider.providerP50.toFixed(2)} ms, added by the service p50 ${campaigns.provider.addedP50.toFixed(2)} ms.`,
    `Segment draft (audience from words) the same way: service p50 ${campaigns.segmentDraftProvider.serviceP50.toFixed(2)} ms, ` +
      `provider p50 ${campaigns.segmentDraftProvider.providerP50.toFixed(2)} ms, added by the service p50 ${campaigns.segmentDraftProvider.addedP50.toFixed(2)} ms.`,
    '',
    line(['Chat streams', 'first frame p50 / p99 ms', 'first text p50 / p99 ms', 'open at once', 'RSS MB before / open', '/health p99 ms']),
    line(['-', '-', '-', '-', '-', '-']),
    ...chat.streams.map((r) =>
      line([
        `${r.streams} streams, ${r.name}`,
        `${r.firstFrame.p50.toFixed(1)} / ${r.firstFrame.p99.toFixed(1)}`,
        `${r.firstText.p50.toFixed(1)} / ${r.firstText.p99.toFixed(1)}`,
        String(r.peakOpen),
        `${Math.round(r.rssBeforeMb)} / ${Math.round(r.rssOpenMb)}`,
        r.healthP99Ms.toFixed(1),
      ]),
    ),
    '',
    `Chat turns with one read tool (count_audience) through a provider answering at once, ${chat.tools.turns} one at a time: service p50 ${chat.tools.serviceP50.toFixed(2)} ms, ` +
      `provider p50 ${chat.tools.providerP50.toFixed(2)} ms for its two answers, added by the service p50 ${chat.tools.addedP50.toFixed(2)} ms; ` +
      `${chat.tools.concurrent.streams} such turns streaming at once: first frame p50 ${chat.tools.concurrent.firstFrame.p50.toFixed(1)} / p99 ${chat.tools.concurrent.firstFrame.p99.toFixed(1)} ms, ` +
      `RSS ${Math.round(chat.tools.concurrent.rssBeforeMb)} -> ${Math.round(chat.tools.concurrent.rssPeakMb)} MB.`,
    '',
    `Webhooks: ${webhooks.events.toLocaleString('en')} events from ${webhooks.clients} clients to a receiver on loopback: ${Math.round(webhooks.deliveriesPerSecond)} deliveries/s; ` +
      `change to delivery p50 ${Math.round(webhooks.latencyP50Ms)} ms, p99 ${Math.round(webhooks.latencyP99Ms)} ms.`,
    '',
    `Figures written to ${OUT}.`,
  ];
  process.stdout.write(`\n${table.join('\n')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
