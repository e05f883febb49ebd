// What `npm run bench` reports: the figures its stages measure, the JSON written from them (data/bench.json; other
// tools compare runs by its keys, so a key is renamed never) and the tables printed at the end. A run is on one
// engine (`engine` in the JSON): on PostgreSQL some stages do not run (the SQLite backup; campaigns, chat and
// webhooks, measured on SQLite) and others are its own (PostgreSQL alone, the move, the lists on SQLite in the same
// sitting).
import { cpus, totalmem } from 'node:os';
import type { CampaignBench } from './bench-campaigns.ts';
import type { ChatFigures } from './bench-chat.ts';
import type { ExportLoad } from './bench-exports.ts';
import type { BackupLoad, ImportLoad, JobLoad } from './bench-imports.ts';
import type { Load } from './bench-support.ts';
import type { WebhookLoad } from './bench-webhooks.ts';

/** A search term chosen from the data, and the share of customers it finds. */
export interface SearchTerm {
  term: string;
  share: number;
}

/** One in-process timing: ours next to the naive SQL, median ms per call. */
export interface InProcessRow {
  name: string;
  ours: number;
  naive: number;
}

/** The engine a run measures. */
export type EngineName = 'sqlite' | 'postgres';

/** "PostgreSQL alone" (bench-pg.ts): staged with COPY, inserted into the indexed table, without the service. */
export interface AloneLoad {
  rows: number;
  rowsPerSecond: number;
  /** The COPY into the staging table alone, rows per second. */
  copyRowsPerSecond: number;
}

/** `npm run move-to-postgres` of the SQLite base onto an empty database. */
export interface MoveLoad {
  customers: number;
  seconds: number;
  rowsPerSecond: number;
  peakRssMb: number;
}

/** Everything the stages measure; each stage sets its own. */
export interface Figures {
  engine: EngineName;
  seedRowsPerSecond: number;
  customers: number;
  searchTerms: { rare: SearchTerm; onePercent: SearchTerm; common: SearchTerm };
  inProcess: InProcessRow[];
  audienceIndexLoadMs: number;
  audienceIndex: { bytes: number; rows: number; room: number };
  sqliteAlone: { rows: number; rowsPerSecond: number };
  startupMs: number;
  floor: Load;
  http: Load[];
  import: ImportLoad;
  backup: BackupLoad;
  export: ExportLoad;
  jobIntoFull: JobLoad;
  jobUpdateFull: JobLoad;
  jobIntoEmpty: JobLoad;
  /** The service's peak RSS (VmHWM), MB: on the full base before the update job, at its end, and on the empty base. */
  peakRssBeforeUpdate: number;
  peakRssFull: number;
  peakRssEmpty: number;
  campaigns: CampaignBench;
  chat: ChatFigures;
  webhooks: WebhookLoad;
  /** On PostgreSQL: the server's version and settings that matter to the figures. */
  postgresServer: { version: string; settings: Record<string, string> };
  /** On PostgreSQL: PostgreSQL alone into a copy of the full base and into an empty one, the jobs' and the move's yardsticks. */
  postgresAlone: { intoFull: AloneLoad; intoEmpty: AloneLoad };
  /** On PostgreSQL: the floor and the customer lists on SQLite, in the same sitting. */
  sqliteLists: { floor: Load; http: Load[] };
  move: MoveLoad;
}

const BOTH: EngineName[] = ['sqlite', 'postgres'];
const SQLITE: EngineName[] = ['sqlite'];
const POSTGRES: EngineName[] = ['postgres'];

/** Every key of Figures and the engines whose runs measure it (TypeScript refuses a key missing or unknown here). */
const FIGURE_KEYS: Record<keyof Figures, EngineName[]> = {
  engine: BOTH,
  seedRowsPerSecond: BOTH,
  customers: BOTH,
  searchTerms: BOTH,
  inProcess: BOTH,
  audienceIndexLoadMs: BOTH,
  audienceIndex: BOTH,
  sqliteAlone: SQLITE,
  startupMs: BOTH,
  floor: BOTH,
  http: BOTH,
  import: BOTH,
  backup: SQLITE,
  export: BOTH,
  jobIntoFull: BOTH,
  jobUpdateFull: BOTH,
  jobIntoEmpty: BOTH,
  peakRssBeforeUpdate: BOTH,
  peakRssFull: BOTH,
  peakRssEmpty: BOTH,
  campaigns: SQLITE,
  chat: SQLITE,
  webhooks: SQLITE,
  postgresServer: POSTGRES,
  postgresAlone: POSTGRES,
  sqliteLists: POSTGRES,
  move: POSTGRES,
};

/** The figures of a complete run on SQLite, and on PostgreSQL. */
export type SqliteFigures = Omit<Figures, 'postgresServer' | 'postgresAlone' | 'sqliteLists' | 'move'>;
export type PostgresFigures = Omit<Figures, 'sqliteAlone' | 'backup' | 'campaigns' | 'chat' | 'webhooks'>;

/** Returns the figures once every stage of the run's engine has set its own; throws naming those missing. */
export function completeFigures(figures: Partial<Figures> & { engine: EngineName }): SqliteFigures | PostgresFigures {
  const missing = Object.entries(FIGURE_KEYS)
    .filter(([key, engines]) => engines.includes(figures.engine) && figures[key as keyof Figures] === undefined)
    .map(([key]) => key);
  if (missing.length > 0) throw new Error(`The bench measured no ${missing.join(', ')}.`);
  return figures as Figures;
}

/** The JSON of a run on either engine. */
export function toReport(f: SqliteFigures | PostgresFigures): Report {
  return f.engine === 'postgres' ? toPostgresReport(f as PostgresFigures) : toSqliteReport(f as SqliteFigures);
}

/** The machine a run measured on. */
const machine = () => ({ cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version });

/** The JSON of a run on SQLite: these keys, in this order, and the ratios derived from the figures. */
function toSqliteReport(f: SqliteFigures) {
  const alone = f.sqliteAlone;
  return {
    engine: 'sqlite' as const,
    measuredAt: new Date().toISOString(),
    machine: machine(),
    customers: f.customers,
    floor: f.floor,
    http: f.http.map((r) => ({ ...r, ratioToFloor: r.requestsPerSecond / f.floor.requestsPerSecond })),
    inProcess: f.inProcess.map((r) => ({ ...r, speedup: r.naive / r.ours })),
    searchTerms: f.searchTerms,
    audienceIndexLoadMs: f.audienceIndexLoadMs,
    seedRowsPerSecond: f.seedRowsPerSecond,
    importRowsPerSecond: f.import.rowsPerSecond,
    import: f.import,
    csvJobs: {
      sqliteAlone: alone,
      intoFullBase: { ...f.jobIntoFull, shareOfSqliteAlone: f.jobIntoFull.rowsPerSecond / alone.rowsPerSecond },
      intoEmptyBase: { ...f.jobIntoEmpty, shareOfSqliteAlone: f.jobIntoEmpty.rowsPerSecond / alone.rowsPerSecond },
      updateInFullBase: { ...f.jobUpdateFull, shareOfPlainJob: f.jobUpdateFull.rowsPerSecond / f.jobIntoFull.rowsPerSecond },
    },
    audienceIndex: { ...f.audienceIndex, bytesPerCustomer: f.audienceIndex.bytes / f.audienceIndex.rows },
    backup: f.backup,
    export: f.export,
    webhooks: f.webhooks,
    startupMs: f.startupMs,
    peakRssMb: Math.max(f.peakRssFull, f.peakRssEmpty),
    peakRssMbByService: { fullBase: f.peakRssFull, fullBaseBeforeUpdateJob: f.peakRssBeforeUpdate, emptyBase: f.peakRssEmpty },
    campaigns: f.campaigns,
    chat: f.chat,
  };
}

/** A list's requests a second on PostgreSQL as a share of the same list's on SQLite in the same sitting (by name). */
function shareOfSqlite(row: Load, sqlite: readonly Load[]): number | undefined {
  const same = sqlite.find((s) => s.name === row.name);
  return same && row.requestsPerSecond / same.requestsPerSecond;
}

/** The JSON of a run on PostgreSQL: the keys of a SQLite run it has, then its own. */
function toPostgresReport(f: PostgresFigures) {
  const { intoFull, intoEmpty } = f.postgresAlone;
  return {
    engine: 'postgres' as const,
    measuredAt: new Date().toISOString(),
    machine: machine(),
    postgresServer: f.postgresServer,
    customers: f.customers,
    floor: { ...f.floor, shareOfSqlite: f.floor.requestsPerSecond / f.sqliteLists.floor.requestsPerSecond },
    http: f.http.map((r) => ({ ...r, ratioToFloor: r.requestsPerSecond / f.floor.requestsPerSecond, shareOfSqlite: shareOfSqlite(r, f.sqliteLists.http) })),
    sqliteLists: {
      floor: f.sqliteLists.floor,
      http: f.sqliteLists.http.map((r) => ({ ...r, ratioToFloor: r.requestsPerSecond / f.sqliteLists.floor.requestsPerSecond })),
    },
    inProcess: f.inProcess.map((r) => ({ ...r, speedup: r.naive / r.ours })),
    searchTerms: f.searchTerms,
    audienceIndexLoadMs: f.audienceIndexLoadMs,
    seedRowsPerSecond: f.seedRowsPerSecond,
    importRowsPerSecond: f.import.rowsPerSecond,
    import: f.import,
    csvJobs: {
      postgresAlone: f.postgresAlone,
      intoFullBase: { ...f.jobIntoFull, shareOfPostgresAlone: f.jobIntoFull.rowsPerSecond / intoFull.rowsPerSecond },
      intoEmptyBase: { ...f.jobIntoEmpty, shareOfPostgresAlone: f.jobIntoEmpty.rowsPerSecond / intoEmpty.rowsPerSecond },
      updateInFullBase: { ...f.jobUpdateFull, shareOfPlainJob: f.jobUpdateFull.rowsPerSecond / f.jobIntoFull.rowsPerSecond },
    },
    move: { ...f.move, shareOfPostgresAlone: f.move.rowsPerSecond / intoEmpty.rowsPerSecond },
    audienceIndex: { ...f.audienceIndex, bytesPerCustomer: f.audienceIndex.bytes / f.audienceIndex.rows },
    export: f.export,
    startupMs: f.startupMs,
    peakRssMb: Math.max(f.peakRssFull, f.peakRssEmpty),
    peakRssMbByService: { fullBase: f.peakRssFull, fullBaseBeforeUpdateJob: f.peakRssBeforeUpdate, emptyBase: f.peakRssEmpty },
  };
}

export type SqliteReport = ReturnType<typeof toSqliteReport>;
export type PostgresReport = ReturnType<typeof toPostgresReport>;
export type Report = SqliteReport | PostgresReport;

const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
const en = (n: number) => n.toLocaleString('en');
const rounded = (n: number) => Math.round(n).toLocaleString('en');

/** The tables and lines printed at the end of a run whose JSON went to `out`. */
export function formatReport(report: Report, out: string): string {
  return report.engine === 'postgres' ? formatPostgresReport(report, out) : formatSqliteReport(report, out);
}

function formatSqliteReport(report: SqliteReport, out: string): string {
  return [
    `Benchmark on ${report.machine.cpus} cores (${report.machine.cpuModel}), Node ${report.machine.node}, ${en(report.customers)} customers`,
    '',
    ...httpTable(report),
    '',
    ...inProcessTable(report),
    '',
    ...loadLines(report),
    '',
    ...campaignTable(report.campaigns),
    '',
    ...providerLines(report.campaigns),
    '',
    ...chatTable(report.chat),
    '',
    chatToolsLine(report.chat),
    '',
    webhooksLine(report.webhooks),
    '',
    `Figures written to ${out}.`,
  ].join('\n');
}

function loadRow(row: Load, ofFloor: string): string {
  return line([row.name, String(Math.round(row.requestsPerSecond)), String(row.p50), String(row.p99), ofFloor]);
}

function httpTable({ floor, http }: Pick<Report, 'floor' | 'http'>): string[] {
  return [
    line(['HTTP endpoint (50 connections)', 'req/s', 'p50 ms', 'p99 ms', 'of floor']),
    line(['-', '-', '-', '-', '-']),
    loadRow(floor, '100%'),
    ...http.map((r) => loadRow(r, `${Math.round(r.ratioToFloor * 100)}%`)),
  ];
}

function inProcessTable({ inProcess }: Pick<Report, 'inProcess'>): string[] {
  return [
    line(['In process', 'ours ms', 'naive ms', 'speed-up']),
    line(['-', '-', '-', '-']),
    ...inProcess.map((r) => line([r.name, r.ours.toFixed(3), r.naive.toFixed(1), `${Math.round(r.speedup)}x`])),
  ];
}

/** The yardstick of a CSV job: what the engine alone does, and what the target says of it. */
interface Yardstick {
  name: 'SQLite alone' | 'PostgreSQL alone';
  rowsPerSecond: number;
  target: string;
}

const SQLITE_TARGET = 'the target, 25,000 of 58,000, is 43%';

/** A CSV import job's line: its rate as a share of the engine alone, and how long other requests waited meanwhile. */
function jobLine(where: string, job: JobLoad, alone: Yardstick): string {
  return (
    `CSV import job of ${en(job.rows)} rows ${where}: ${rounded(job.rowsPerSecond)} rows/s upload to completed ` +
    `(${Math.round((job.rowsPerSecond / alone.rowsPerSecond) * 100)}% of ${alone.name}, ${rounded(alone.rowsPerSecond)} rows/s; ${alone.target}); ` +
    `other requests meanwhile (a KPI read and a customer edit in turn) waited at most ${Math.round(job.othersWorstMs)} ms ` +
    `(p99 ${Math.round(job.othersP99Ms)} ms; the edits at most ${Math.round(job.edits.worstMs)} ms, the reads ${Math.round(job.reads.worstMs)} ms).`
  );
}

/** The lines of the loads on the full base: imports, backup, export, CSV jobs, the index, start-up and memory. */
function loadLines(report: SqliteReport): string[] {
  const { customers, import: imports, backup, export: exported, csvJobs } = report;
  const { intoFullBase, intoEmptyBase } = csvJobs;
  return [
    `Import through HTTP in 1000-row requests from ${imports.clients} clients: ${rounded(report.importRowsPerSecond)} rows/s ` +
      `(slowest request ${Math.round(imports.worstImportMs)} ms); GET /v1/customers/kpis meanwhile waited at most ${Math.round(imports.kpisWorstMs)} ms ` +
      `(p99 ${Math.round(imports.kpisP99Ms)} ms). Seed of ${en(customers)} customers into an empty database: ${en(report.seedRowsPerSecond)} rows/s.`,
    `Backup of the live database (${en(customers)} customers) while imports ran: ${rounded(backup.backupMs)} ms, ` +
      `${backup.importsDuring} imports of 1000 rows meanwhile; GET /v1/customers/kpis waited at most ${Math.round(backup.othersWorstMs)} ms (p99 ${Math.round(backup.othersP99Ms)} ms).`,
    `Export of the whole base as CSV: ${en(exported.rows)} rows at ${rounded(exported.rowsPerSecond)} rows/s; ` +
      `GET /v1/customers/kpis waited at most ${Math.round(exported.worstOtherRequestMs)} ms (p99 ${Math.round(exported.otherP99Ms)} ms); RSS ${Math.round(exported.rssBeforeMb)} -> ${Math.round(exported.peakRssMb)} MB.`,
    jobLine(`into a base of ${en(customers)}`, intoFullBase, { name: 'SQLite alone', rowsPerSecond: csvJobs.sqliteAlone.rowsPerSecond, target: SQLITE_TARGET }),
    jobLine('into an empty base', intoEmptyBase, { name: 'SQLite alone', rowsPerSecond: csvJobs.sqliteAlone.rowsPerSecond, target: SQLITE_TARGET }),
    ...baseLines(report),
  ];
}

/** The lines both engines print after the jobs: the update job, the audience index, start-up and memory. */
function baseLines(report: Report): string[] {
  const { csvJobs, audienceIndex: index, peakRssMbByService: rss } = report;
  const { intoFullBase, updateInFullBase } = csvJobs;
  return [
    `The same ${en(updateInFullBase.rows)} customers again a week later with onExisting=update (every row replaces a stored one): ` +
      `${rounded(updateInFullBase.rowsPerSecond)} rows/s (${Math.round((updateInFullBase.rowsPerSecond / intoFullBase.rowsPerSecond) * 100)}% of the plain job's); ` +
      `other requests waited at most ${Math.round(updateInFullBase.othersWorstMs)} ms (p99 ${Math.round(updateInFullBase.othersP99Ms)} ms).`,
    `Audience index: ${index.bytesPerCustomer.toFixed(1)} bytes a customer (${(index.bytes / 1e6).toFixed(1)} MB for ${en(index.rows)}, room for ${en(index.room)}).`,
    `Start-up to /health: ${Math.round(report.startupMs)} ms. Peak RSS of the service: ${Math.round(rss.fullBase)} MB on the full base (${Math.round(rss.fullBaseBeforeUpdateJob)} MB before the update job), ` +
      `${Math.round(rss.emptyBase)} MB on the empty one (the target: under 300 MB). Audience index load: ${Math.round(report.audienceIndexLoadMs)} ms.`,
  ];
}

/** The tables and lines of a run on PostgreSQL. */
function formatPostgresReport(report: PostgresReport, out: string): string {
  const { version, settings } = report.postgresServer;
  return [
    `Benchmark on PostgreSQL ${version} (${Object.entries(settings).map(([k, v]) => `${k} ${v}`).join(', ')}), ${report.machine.cpus} cores (${report.machine.cpuModel}), ` +
      `Node ${report.machine.node}, ${en(report.customers)} customers`,
    '',
    ...pgHttpTable(report),
    '',
    ...winsAndLosses(report),
    '',
    ...inProcessTable(report),
    '(naive: the same question in one SQL statement on the same PostgreSQL, without the aggregate tables, indexes or the audience index; the target: aggregates at least 20x)',
    '',
    ...pgLoadLines(report),
    '',
    'Not run on PostgreSQL: the SQLite backup (pg_dump and base backups instead); campaigns, chat and webhooks (their benches start services on SQLite files: see a run on SQLite).',
    '',
    `Figures written to ${out}.`,
  ].join('\n');
}

/** The HTTP table of a PostgreSQL run, with each row's share of the same request on SQLite in the same sitting. */
function pgHttpTable({ floor, http, sqliteLists }: PostgresReport): string[] {
  const share = (value: number | undefined) => (value === undefined ? '' : `${Math.round(value * 100)}%`);
  const row = (r: Load, ofFloor: string, ofSqlite: number | undefined, sqlite: Load | undefined) =>
    line([r.name, String(Math.round(r.requestsPerSecond)), String(r.p50), String(r.p99), ofFloor, sqlite ? String(Math.round(sqlite.requestsPerSecond)) : '', share(ofSqlite)]);
  return [
    line(['HTTP endpoint on PostgreSQL (50 connections)', 'req/s', 'p50 ms', 'p99 ms', 'of floor', 'SQLite req/s', 'of SQLite']),
    line(['-', '-', '-', '-', '-', '-', '-']),
    row(floor, '100%', floor.shareOfSqlite, sqliteLists.floor),
    ...http.map((r) => row(r, `${Math.round(r.ratioToFloor * 100)}%`, r.shareOfSqlite, sqliteLists.http.find((s) => s.name === r.name))),
    '(of SQLite: the same request on SQLite in the same sitting, a copy of the same base; the target: each customer list at least 70%)',
  ];
}

/** Which requests measured on both engines in the same sitting PostgreSQL serves faster, and which slower. */
function winsAndLosses({ http }: PostgresReport): string[] {
  const compared = http.filter((r) => r.shareOfSqlite !== undefined);
  const names = (rows: typeof compared) => rows.map((r) => `${r.name} (${Math.round(r.shareOfSqlite! * 100)}%)`).join('; ') || 'none';
  return [
    `PostgreSQL wins against SQLite in the same sitting: ${names(compared.filter((r) => r.shareOfSqlite! >= 1))}.`,
    `PostgreSQL loses: ${names(compared.filter((r) => r.shareOfSqlite! < 1))}.`,
  ];
}

/** The lines of a PostgreSQL run's loads: seed, imports, export, CSV jobs against PostgreSQL alone, the move, memory. */
function pgLoadLines(report: PostgresReport): string[] {
  const { customers, import: imports, export: exported, csvJobs, move } = report;
  const { intoFullBase, intoEmptyBase, postgresAlone: alone } = csvJobs;
  const target = 'the target is 43%';
  return [
    `Import through HTTP in 1000-row requests from ${imports.clients} clients: ${rounded(report.importRowsPerSecond)} rows/s ` +
      `(slowest request ${Math.round(imports.worstImportMs)} ms); GET /v1/customers/kpis meanwhile waited at most ${Math.round(imports.kpisWorstMs)} ms ` +
      `(p99 ${Math.round(imports.kpisP99Ms)} ms). Seed of ${en(customers)} customers into an empty database (npm run seed, COPY): ${en(report.seedRowsPerSecond)} rows/s.`,
    `Export of the whole base as CSV: ${en(exported.rows)} rows at ${rounded(exported.rowsPerSecond)} rows/s; ` +
      `GET /v1/customers/kpis waited at most ${Math.round(exported.worstOtherRequestMs)} ms (p99 ${Math.round(exported.otherP99Ms)} ms); RSS ${Math.round(exported.rssBeforeMb)} -> ${Math.round(exported.peakRssMb)} MB.`,
    `PostgreSQL alone (COPY of ${en(alone.intoFull.rows)} rows into an unlogged staging table, then INSERT ... SELECT ... ON CONFLICT DO NOTHING into the indexed table in 50,000-row transactions, no service): ` +
      `${rounded(alone.intoFull.rowsPerSecond)} rows/s into a copy of the full base, ${rounded(alone.intoEmpty.rowsPerSecond)} rows/s into an empty one ` +
      `(the COPY alone ${rounded(alone.intoFull.copyRowsPerSecond)} and ${rounded(alone.intoEmpty.copyRowsPerSecond)} rows/s).`,
    jobLine(`into a base of ${en(customers)}`, intoFullBase, { name: 'PostgreSQL alone', rowsPerSecond: alone.intoFull.rowsPerSecond, target }),
    jobLine('into an empty base', intoEmptyBase, { name: 'PostgreSQL alone', rowsPerSecond: alone.intoEmpty.rowsPerSecond, target }),
    `Move of the SQLite base (${en(move.customers)} customers) with npm run move-to-postgres onto an empty database: ${move.seconds.toFixed(1)} s, ` +
      `${rounded(move.rowsPerSecond)} customers/s (${Math.round(move.shareOfPostgresAlone * 100)}% of PostgreSQL alone into an empty base; the target is 50%); peak RSS of the move ${Math.round(move.peakRssMb)} MB.`,
    ...baseLines(report),
  ];
}

function campaignTable(campaigns: CampaignBench): string[] {
  return [
    line(['Campaigns (50 connections)', 'req/s', 'p50 ms', 'p99 ms', 'of floor']),
    line(['-', '-', '-', '-', '-']),
    loadRow(campaigns.floor, '100%'),
    loadRow(campaigns.list, `${Math.round(campaigns.list.ratioToFloor * 100)}%`),
    loadRow(campaigns.localGeneration, ''),
    loadRow(campaigns.segmentDraft, ''),
  ];
}

/** What the service adds to a provider answering at once: generation, then segment drafts. */
function providerLines({ provider, segmentDraftProvider: draft }: CampaignBench): string[] {
  return [
    `Generation through a provider answering at once, ${provider.requests} requests one at a time: service p50 ${provider.serviceP50.toFixed(2)} ms, ` +
      `provider p50 ${provider.providerP50.toFixed(2)} ms, added by the service p50 ${provider.addedP50.toFixed(2)} ms.`,
    `Segment draft (audience from words) the same way: service p50 ${draft.serviceP50.toFixed(2)} ms, ` +
      `provider p50 ${draft.providerP50.toFixed(2)} ms, added by the service p50 ${draft.addedP50.toFixed(2)} ms.`,
  ];
}

function chatTable(chat: ChatFigures): string[] {
  return [
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
  ];
}

function chatToolsLine({ tools }: ChatFigures): string {
  return (
    `Chat turns with one read tool (count_audience) through a provider answering at once, ${tools.turns} one at a time: service p50 ${tools.serviceP50.toFixed(2)} ms, ` +
    `provider p50 ${tools.providerP50.toFixed(2)} ms for its two answers, added by the service p50 ${tools.addedP50.toFixed(2)} ms; ` +
    `${tools.concurrent.streams} such turns streaming at once: first frame p50 ${tools.concurrent.firstFrame.p50.toFixed(1)} / p99 ${tools.concurrent.firstFrame.p99.toFixed(1)} ms, ` +
    `RSS ${Math.round(tools.concurrent.rssBeforeMb)} -> ${Math.round(tools.concurrent.rssPeakMb)} MB.`
  );
}

function webhooksLine(webhooks: WebhookLoad): string {
  return (
    `Webhooks: ${en(webhooks.events)} events from ${webhooks.clients} clients to a receiver on loopback: ${Math.round(webhooks.deliveriesPerSecond)} deliveries/s; ` +
    `change to delivery p50 ${Math.round(webhooks.latencyP50Ms)} ms, p99 ${Math.round(webhooks.latencyP99Ms)} ms.`
  );
}
