// What `npm run bench` reports: the figures its stages measure, the JSON written from them (data/bench.json; other
// tools compare runs by its keys, so a key is renamed never) and the tables printed at the end.
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

/** Everything the stages measure; each stage sets its own. */
export interface Figures {
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
}

/** Every key of Figures (TypeScript refuses a key missing or unknown here), to check that every stage set its own. */
const FIGURE_KEYS: Record<keyof Figures, true> = {
  seedRowsPerSecond: true,
  customers: true,
  searchTerms: true,
  inProcess: true,
  audienceIndexLoadMs: true,
  audienceIndex: true,
  sqliteAlone: true,
  startupMs: true,
  floor: true,
  http: true,
  import: true,
  backup: true,
  export: true,
  jobIntoFull: true,
  jobUpdateFull: true,
  jobIntoEmpty: true,
  peakRssBeforeUpdate: true,
  peakRssFull: true,
  peakRssEmpty: true,
  campaigns: true,
  chat: true,
  webhooks: true,
};

/** Returns the figures once every stage has set its own; throws naming those missing. */
export function completeFigures(figures: Partial<Figures>): Figures {
  const missing = Object.keys(FIGURE_KEYS).filter((key) => figures[key as keyof Figures] === undefined);
  if (missing.length > 0) throw new Error(`The bench measured no ${missing.join(', ')}.`);
  return figures as Figures;
}

/** The JSON of a run: these keys, in this order, and the ratios derived from the figures. */
export function toReport(f: Figures) {
  const alone = f.sqliteAlone;
  return {
    measuredAt: new Date().toISOString(),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
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

export type Report = ReturnType<typeof toReport>;

const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
const en = (n: number) => n.toLocaleString('en');
const rounded = (n: number) => Math.round(n).toLocaleString('en');

/** The tables and lines printed at the end of a run whose JSON went to `out`. */
export function formatReport(report: Report, out: string): string {
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

function httpTable({ floor, http }: Report): string[] {
  return [
    line(['HTTP endpoint (50 connections)', 'req/s', 'p50 ms', 'p99 ms', 'of floor']),
    line(['-', '-', '-', '-', '-']),
    loadRow(floor, '100%'),
    ...http.map((r) => loadRow(r, `${Math.round(r.ratioToFloor * 100)}%`)),
  ];
}

function inProcessTable({ inProcess }: Report): string[] {
  return [
    line(['In process', 'ours ms', 'naive ms', 'speed-up']),
    line(['-', '-', '-', '-']),
    ...inProcess.map((r) => line([r.name, r.ours.toFixed(3), r.naive.toFixed(1), `${Math.round(r.speedup)}x`])),
  ];
}

/** A CSV import job's line: its rate as a share of SQLite alone, and how long other requests waited meanwhile. */
function jobLine(where: string, job: JobLoad, alone: Report['csvJobs']['sqliteAlone']): string {
  return (
    `CSV import job of ${en(job.rows)} rows ${where}: ${rounded(job.rowsPerSecond)} rows/s upload to completed ` +
    `(${Math.round((job.rowsPerSecond / alone.rowsPerSecond) * 100)}% of SQLite alone, ${rounded(alone.rowsPerSecond)} rows/s; the target, 25,000 of 58,000, is 43%); ` +
    `other requests meanwhile (a KPI read and a customer edit in turn) waited at most ${Math.round(job.othersWorstMs)} ms ` +
    `(p99 ${Math.round(job.othersP99Ms)} ms; the edits at most ${Math.round(job.edits.worstMs)} ms, the reads ${Math.round(job.reads.worstMs)} ms).`
  );
}

/** The lines of the loads on the full base: imports, backup, export, CSV jobs, the index, start-up and memory. */
function loadLines(report: Report): string[] {
  const { customers, import: imports, backup, export: exported, csvJobs, audienceIndex: index, peakRssMbByService: rss } = report;
  const { intoFullBase, intoEmptyBase, updateInFullBase } = csvJobs;
  return [
    `Import through HTTP in 1000-row requests from ${imports.clients} clients: ${rounded(report.importRowsPerSecond)} rows/s ` +
      `(slowest request ${Math.round(imports.worstImportMs)} ms); GET /v1/customers/kpis meanwhile waited at most ${Math.round(imports.kpisWorstMs)} ms ` +
      `(p99 ${Math.round(imports.kpisP99Ms)} ms). Seed of ${en(customers)} customers into an empty database: ${en(report.seedRowsPerSecond)} rows/s.`,
    `Backup of the live database (${en(customers)} customers) while imports ran: ${rounded(backup.backupMs)} ms, ` +
      `${backup.importsDuring} imports of 1000 rows meanwhile; GET /v1/customers/kpis waited at most ${Math.round(backup.othersWorstMs)} ms (p99 ${Math.round(backup.othersP99Ms)} ms).`,
    `Export of the whole base as CSV: ${en(exported.rows)} rows at ${rounded(exported.rowsPerSecond)} rows/s; ` +
      `GET /v1/customers/kpis waited at most ${Math.round(exported.worstOtherRequestMs)} ms (p99 ${Math.round(exported.otherP99Ms)} ms); RSS ${Math.round(exported.rssBeforeMb)} -> ${Math.round(exported.peakRssMb)} MB.`,
    jobLine('into a base of a million', intoFullBase, csvJobs.sqliteAlone),
    jobLine('into an empty base', intoEmptyBase, csvJobs.sqliteAlone),
    `The same ${en(updateInFullBase.rows)} customers again a week later with onExisting=update (every row replaces a stored one): ` +
      `${rounded(updateInFullBase.rowsPerSecond)} rows/s (${Math.round((updateInFullBase.rowsPerSecond / intoFullBase.rowsPerSecond) * 100)}% of the plain job's); ` +
      `other requests waited at most ${Math.round(updateInFullBase.othersWorstMs)} ms (p99 ${Math.round(updateInFullBase.othersP99Ms)} ms).`,
    `Audience index: ${index.bytesPerCustomer.toFixed(1)} bytes a customer (${(index.bytes / 1e6).toFixed(1)} MB for ${en(index.rows)}, room for ${en(index.room)}).`,
    `Start-up to /health: ${Math.round(report.startupMs)} ms. Peak RSS of the service: ${Math.round(rss.fullBase)} MB on the full base (${Math.round(rss.fullBaseBeforeUpdateJob)} MB before the update job), ` +
      `${Math.round(rss.emptyBase)} MB on the empty one. Audience index load: ${Math.round(report.audienceIndexLoadMs)} ms.`,
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
