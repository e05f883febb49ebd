// The benchmark's CSV import jobs: a file uploaded as one job, followed to its end, while another client reads the
// KPIs and edits a customer in a loop to measure how long other requests wait meanwhile.
import { readFile } from 'node:fs/promises';
import { log, percentile, startProcess } from './bench-support.ts';

export interface JobLoad {
  rows: number;
  fileMb: number;
  /** From the start of the upload to the job's `completed`, rows per second. */
  rowsPerSecond: number;
  uploadMs: number;
  /** Other requests (a KPI read and a customer edit, one at a time) while the job ran: worst and p99 wait, ms. */
  othersWorstMs: number;
  othersP99Ms: number;
  othersSamples: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Uploads `file` (`rows` rows) to the service at `base` as a CSV import job and follows it to its end, while one
 * client alternates GET /v1/customers/kpis and PATCH /v1/customers/{editId}. Throws unless every row is imported.
 */
export async function csvJobLoad(base: string, token: string, file: string, rows: number, editId: string): Promise<JobLoad> {
  const auth = { authorization: `Bearer ${token}` };
  const body = await readFile(file);
  let running = true;
  const waits: number[] = [];
  const others = async () => {
    for (let i = 0; running; i++) {
      const started = performance.now();
      const reply =
        i % 2 === 0
          ? await fetch(`${base}/v1/customers/kpis`, { headers: auth })
          : await fetch(`${base}/v1/customers/${editId}`, {
              method: 'PATCH',
              headers: { ...auth, 'content-type': 'application/json' },
              body: JSON.stringify({ totalTransactions: i }),
            });
      await reply.arrayBuffer();
      if (!reply.ok) throw new Error(`request during the job: ${reply.status}`);
      waits.push(performance.now() - started);
      await sleep(5);
    }
  };
  const other = others();
  const started = performance.now();
  const accepted = await fetch(`${base}/v1/customers/imports?fileName=bench.csv`, { method: 'POST', headers: { ...auth, 'content-type': 'text/csv' }, body });
  if (accepted.status !== 202) throw new Error(`upload: ${accepted.status} ${await accepted.text()}`);
  const uploadMs = performance.now() - started;
  const { id } = (await accepted.json()) as { id: string };
  let job: { status: string; imported: number; skipped: number };
  for (;;) {
    job = (await (await fetch(`${base}/v1/customers/imports/${id}`, { headers: auth })).json()) as typeof job;
    if (job.status !== 'running') break;
    await sleep(100);
  }
  const seconds = (performance.now() - started) / 1000;
  running = false;
  await other;
  if (job.status !== 'completed' || job.imported !== rows) throw new Error(`job ended ${JSON.stringify(job)}`);
  const result = {
    rows,
    fileMb: body.length / 1e6,
    rowsPerSecond: rows / seconds,
    uploadMs,
    othersWorstMs: Math.max(...waits),
    othersP99Ms: percentile(waits, 0.99),
    othersSamples: waits.length,
  };
  log(
    `  CSV job of ${rows.toLocaleString('en')} rows (${result.fileMb.toFixed(0)} MB): ${Math.round(result.rowsPerSecond).toLocaleString('en')} rows/s upload to completed ` +
      `(upload ${Math.round(uploadMs)} ms); other requests meanwhile: worst ${Math.round(result.othersWorstMs)} ms, p99 ${Math.round(result.othersP99Ms)} ms over ${waits.length}`,
  );
  return result;
}

export interface BackupLoad {
  backupMs: number;
  /** 1000-row imports committed while the backup ran. */
  importsDuring: number;
  othersWorstMs: number;
  othersP99Ms: number;
  othersSamples: number;
}

/**
 * Runs `npm run backup` of `database` into `out` while two clients send the import bodies (1000 rows each) to the
 * service at `base` and a third reads the KPIs in a loop, all until the backup ends. Throws if the backup fails.
 */
export async function backupDuringImports(base: string, token: string, database: string, out: string, bodies: string[]): Promise<BackupLoad> {
  const auth = { authorization: `Bearer ${token}` };
  const started = performance.now();
  const backup = startProcess(['--import', 'tsx', 'scripts/backup.ts', '--out', out, '--database', database], {}, 'data/bench-backup.log');
  let running = true;
  const ended = new Promise<number | null>((resolve) => backup.once('exit', (code) => resolve(code))).then((code) => {
    running = false;
    return code;
  });
  let next = 0;
  let importsDuring = 0;
  const importer = async () => {
    while (running && next < bodies.length) {
      const reply = await fetch(`${base}/v1/customers/import`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: bodies[next++] });
      await reply.arrayBuffer();
      if (running) importsDuring++;
    }
  };
  const waits: number[] = [];
  const reader = async () => {
    while (running) {
      const begun = performance.now();
      await (await fetch(`${base}/v1/customers/kpis`, { headers: auth })).arrayBuffer();
      waits.push(performance.now() - begun);
      await sleep(5);
    }
  };
  const [code] = await Promise.all([ended, importer(), importer(), reader()]);
  if (code !== 0) throw new Error(`npm run backup exited with ${code}; see data/bench-backup.log`);
  const result = { backupMs: performance.now() - started, importsDuring, othersWorstMs: Math.max(...waits), othersP99Ms: percentile(waits, 0.99), othersSamples: waits.length };
  log(
    `  Backup of the live database: ${Math.round(result.backupMs).toLocaleString('en')} ms with ${importsDuring} imports of 1000 rows committed meanwhile; ` +
      `GET /v1/customers/kpis waited at most ${Math.round(result.othersWorstMs)} ms (p99 ${Math.round(result.othersP99Ms)} ms)`,
  );
  return result;
}
