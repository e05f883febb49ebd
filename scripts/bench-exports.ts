// The benchmark's CSV export: a segment's customers downloaded as fast as the client reads, while another client
// polls the KPIs every 20 ms to measure how long other requests wait meanwhile, and the service's memory is sampled.
// Run alone (`tsx scripts/bench-exports.ts [--customers N | --database PATH]`) it seeds a base of N customers (200,000
// unless said) or opens an existing database, starts the service on it and prints the figures.
import { existsSync, mkdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { audienceReady, ensureUserAt, log, percentile, rssMb, SERVICE, signIn, sleep, startProcess, waitFor } from './bench-support.ts';
import { seedDatabase } from './seed.ts';

export interface ExportLoad {
  /** Lines of the file after its header. */
  rows: number;
  megabytes: number;
  /** From sending the request to the last byte. */
  seconds: number;
  rowsPerSecond: number;
  /** GET /v1/customers/kpis, one at a time 20 ms apart while the download ran: the longest and p99 wait, ms. */
  worstOtherRequestMs: number;
  otherP99Ms: number;
  otherSamples: number;
  /** The service's resident memory before the download, and the most sampled (every 20 ms) during it, MB. */
  rssBeforeMb: number;
  peakRssMb: number;
}

/**
 * Downloads `/v1/segments/{segmentId}/customers.csv` from the service at `base` (process `pid`) as fast as this client
 * reads, while another client polls GET /v1/customers/kpis every 20 ms and the service's memory is sampled. Throws
 * unless the download answers 200 and every other request 2xx.
 */
export async function exportLoad(base: string, token: string, segmentId: string, pid: number): Promise<ExportLoad> {
  const auth = { authorization: `Bearer ${token}` };
  const rssBeforeMb = rssMb(pid);
  let running = true;
  let peakRssMb = rssBeforeMb;
  const waits: number[] = [];
  const poll = async () => {
    while (running) {
      const started = performance.now();
      const reply = await fetch(`${base}/v1/customers/kpis`, { headers: auth });
      await reply.arrayBuffer();
      if (!reply.ok) throw new Error(`GET /v1/customers/kpis during the export: ${reply.status}`);
      waits.push(performance.now() - started);
      peakRssMb = Math.max(peakRssMb, rssMb(pid));
      await sleep(20);
    }
  };
  const poller = poll();
  poller.catch(() => {}); // a failed poll is thrown below, once the download has ended

  const started = performance.now();
  let lines = 0;
  let bytes = 0;
  try {
    const reply = await fetch(`${base}/v1/segments/${segmentId}/customers.csv`, { headers: auth });
    if (reply.status !== 200 || !reply.body) throw new Error(`export: ${reply.status} ${await reply.text()}`);
    const reader = reply.body.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      const piece = read.value;
      bytes += piece.byteLength;
      for (let at = piece.indexOf(10); at !== -1; at = piece.indexOf(10, at + 1)) lines++;
    }
  } finally {
    running = false;
    await poller;
  }
  const seconds = (performance.now() - started) / 1000;
  const rows = lines - 1;
  const result = {
    rows,
    megabytes: bytes / 1e6,
    seconds,
    rowsPerSecond: rows / seconds,
    worstOtherRequestMs: Math.max(0, ...waits),
    otherP99Ms: percentile(waits, 0.99),
    otherSamples: waits.length,
    rssBeforeMb,
    peakRssMb,
  };
  log(
    `  CSV export of ${rows.toLocaleString('en')} customers (${result.megabytes.toFixed(0)} MB): ${Math.round(result.rowsPerSecond).toLocaleString('en')} rows/s ` +
      `in ${seconds.toFixed(2)} s; GET /v1/customers/kpis meanwhile: worst ${Math.round(result.worstOtherRequestMs)} ms, p99 ${Math.round(result.otherP99Ms)} ms ` +
      `over ${waits.length}; service RSS ${Math.round(rssBeforeMb)} MB before, at most ${Math.round(peakRssMb)} MB during`,
  );
  return result;
}

/**
 * Seeds a base of `--customers` (once, kept in data/) or opens `--database`, starts the service on it, and measures one
 * export of every customer.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({ options: { customers: { type: 'string', default: '200000' }, database: { type: 'string' }, port: { type: 'string', default: '3919' } } });
  const customers = Number(values.customers);
  const database = values.database ?? `data/bench-exports-${customers}.db`;
  const account = { email: 'bench-exports@example.com', fullName: 'Bench exports', role: 'lifecycle_marketer', password: 'bench-exports-password' } as const;
  mkdirSync('data', { recursive: true });
  if (!existsSync(database)) {
    log(`Seeding ${customers.toLocaleString('en')} customers into ${database}...`);
    seedDatabase(database, customers, { seed: 42, quiet: true });
  }
  await ensureUserAt(database, account);
  const base = `http://127.0.0.1:${values.port}`;
  const service = startProcess(SERVICE, { DATABASE_PATH: database, PORT: values.port!, LOG_LEVEL: 'info', ADMIN_PASSWORD: 'unused-admin-password' }, 'data/bench-exports-service.log');
  try {
    await waitFor(`${base}/health`);
    const token = await signIn(base, account.email, account.password);
    await audienceReady(base, token);
    const segment = await fetch(`${base}/v1/segments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Everyone (bench)', conditions: [{ field: 'totalTransactions', operator: 'gte', value: 0 }] }),
    });
    const { id, matchCount } = (await segment.json()) as { id: string; matchCount: number };
    log(`Export of a segment of ${matchCount.toLocaleString('en')} customers:`);
    const result = await exportLoad(base, token, id, service.pid!);
    if (result.rows !== matchCount) throw new Error(`exported ${result.rows} rows, the segment counts ${matchCount}`);
    await fetch(`${base}/v1/segments/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    service.kill('SIGTERM');
    await new Promise((resolve) => service.once('exit', resolve));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
