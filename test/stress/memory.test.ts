// Sustained load on the real service process: 100 clients importing and 200 clients listing, all at once, for a
// bounded time. Its memory must settle (the RSS of the last third of the run grows little over the middle third),
// every request must be answered, and in bounded time: no queue grows without limit.
import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { seedDatabase } from '../../scripts/seed.ts';
import { launchService, rssMb, signInAdmin } from './child-service.ts';
import { importBatch } from './import-batches.ts';
import { assertCustomersConsistent } from './store-invariants.ts';
import { tempDir } from '../support/temp-dir.ts';

const DURATION_MS = Number(process.env.STRESS_MEMORY_MS ?? 18_000);
const IMPORTERS = 100;
const LISTERS = 200;
/**
 * Rows per import. 100 importers of 1000 rows ask for about ten times what one process can insert, so each would
 * wait 15-30 s for an answer; with 100 rows the service is still saturated, and the test measures memory and
 * queueing rather than insert speed.
 */
const ROWS_PER_IMPORT = 100;
/** Growth of the RSS from the middle third of the run to the last third that still counts as settled. */
const SETTLED_MB = 30;
/** 300 clients share one process: a request waits behind up to 299 others (about 2.5 s on the development VM). */
const P99_BOUND_MS = 10_000;
const GIVE_UP_MS = 30_000;

const dir = tempDir('campaigns-memory-');

const LIST_QUERIES = [
  '/v1/customers',
  '/v1/customers?page=40&limit=100',
  '/v1/customers?status=churned&sort=totalAmountSpent&direction=asc',
  '/v1/customers?country=germany&sort=name',
  '/v1/customers?search=crash',
  '/v1/customers?search=smith&status=active',
  '/v1/customers?search=b7.&limit=200',
  '/v1/customers/kpis',
  '/v1/customers/trend?months=24',
  '/v1/customers/health',
  '/v1/customers/top?limit=25',
];

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

test(`${IMPORTERS} importers and ${LISTERS} listers for ${DURATION_MS / 1000} s: RSS settles, every request is answered in bounded time`, async () => {
  const path = join(dir, 'memory.db');
  // A base larger than SQLite's 64 MiB page cache, so the cache is full early and later growth is the process's own.
  seedDatabase(path, 150_000, { seed: 7, quiet: true });
  const service = await launchService({ DATABASE_PATH: path });
  const agent = new Agent({ keepAlive: true, maxFreeSockets: IMPORTERS + LISTERS });
  try {
    const token = await signInAdmin(service.url);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    /** One request on a kept-alive connection; resolves with the status and body, or rejects after GIVE_UP_MS. */
    const send = (method: string, target: string, body?: string) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = httpRequest(service.url + target, { method, headers, agent, timeout: GIVE_UP_MS }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
          res.on('error', reject);
        });
        req.on('timeout', () => req.destroy(new Error(`no answer within ${GIVE_UP_MS} ms`)));
        req.on('error', reject);
        req.end(body);
      });

    // One body, made unique per request by its batch tag: the clients spend their time waiting, not building JSON.
    const template = JSON.stringify({ customers: importBatch(0, ROWS_PER_IMPORT).rows }).replaceAll('B0.CRASH.TEST', '@TAG@').replaceAll('b0.crash.test', '@TAG@');
    let batches = 0;
    let imported = 0;
    const latencies: { import: number[]; list: number[] } = { import: [], list: [] };
    const failures: string[] = [];
    let deadline = 0;
    const request = async (kind: 'import' | 'list', target: string, body?: string) => {
      const begun = performance.now();
      try {
        const reply = await send(body ? 'POST' : 'GET', target, body);
        if (reply.status !== 200) failures.push(`${kind} ${target}: ${reply.status} ${reply.text.slice(0, 200)}`);
        else if (kind === 'import') imported += (JSON.parse(reply.text) as { imported: number }).imported;
      } catch (error) {
        failures.push(`${kind} ${target}: ${(error as Error).message}`);
      }
      latencies[kind].push(performance.now() - begun);
    };
    const importer = async () => {
      for (let i = 0; i < 10_000 && performance.now() < deadline; i++) {
        await request('import', '/v1/customers/import', template.replaceAll('@TAG@', `m${++batches}.memory.test`));
      }
    };
    const lister = async (client: number) => {
      for (let i = 0; i < 100_000 && performance.now() < deadline; i++) await request('list', LIST_QUERIES[(client + i) % LIST_QUERIES.length]!);
    };

    // Every client connects first, and the agent keeps all 300 connections (by default it keeps 256 idle ones). While
    // the service is saturated, a connection opened then waits long to be served (first requests waited up to 20 s
    // where requests on open connections waited 2-4 s): a separate finding, not what this test measures.
    await Promise.all(Array.from({ length: IMPORTERS + LISTERS }, () => send('GET', '/health')));
    const started = performance.now();
    deadline = started + DURATION_MS;
    // The RSS is sampled on a timer: no event reports another process's memory.
    const samples: { at: number; mb: number }[] = [];
    const sampler = setInterval(() => samples.push({ at: performance.now() - started, mb: rssMb(service.pid) }), 250);
    try {
      await Promise.all([...Array.from({ length: IMPORTERS }, importer), ...Array.from({ length: LISTERS }, (_, c) => lister(c))]);
    } finally {
      clearInterval(sampler);
    }
    const elapsed = performance.now() - started;

    const third = (k: number) => samples.filter((s) => s.at >= (k * DURATION_MS) / 3 && s.at < ((k + 1) * DURATION_MS) / 3).map((s) => s.mb);
    const middle = Math.max(...third(1));
    const last = Math.max(...third(2));
    const peak = Math.max(...samples.map((s) => s.mb));
    const sorted = { import: latencies.import.sort((a, b) => a - b), list: latencies.list.sort((a, b) => a - b) };
    const describe = (kind: 'import' | 'list') =>
      `${kind}: ${sorted[kind].length} answered, p50 ${Math.round(percentile(sorted[kind], 50))} ms, p99 ${Math.round(percentile(sorted[kind], 99))} ms, max ${Math.round(sorted[kind].at(-1)!)} ms`;
    const serverImports = [...(service.log.durations.get('/v1/customers/import') ?? [])].sort((a, b) => a - b);
    process.stderr.write(
      `# ${Math.round(elapsed)} ms; RSS at start ${samples[0]?.mb.toFixed(0)} MB, middle third max ${middle.toFixed(0)} MB, last third max ${last.toFixed(0)} MB, peak ${peak.toFixed(0)} MB\n` +
        `# ${describe('import')} (${imported} rows; the service's own time p50 ${Math.round(percentile(serverImports, 50))} ms); ${describe('list')}\n`,
    );

    assert.deepEqual(failures.slice(0, 5), [], `${failures.length} requests failed or were not answered`);
    assert.ok(elapsed < DURATION_MS + P99_BOUND_MS, 'the last requests were answered soon after the clients stopped');
    assert.ok(percentile(sorted.import, 99) < P99_BOUND_MS, describe('import'));
    assert.ok(percentile(sorted.list, 99) < P99_BOUND_MS, describe('list'));
    assert.ok(last - middle < SETTLED_MB, `RSS grew ${(last - middle).toFixed(0)} MB from the middle to the last third (settled: below ${SETTLED_MB})`);
    assert.ok(imported > 0 && sorted.list.length > LISTERS, 'both kinds of work were done');

    const quiet = performance.now();
    assert.equal((await send('GET', '/health')).status, 200);
    assert.ok(performance.now() - quiet < 1000, 'the service answers at once when the load is gone');
  } finally {
    agent.destroy();
    await service.stop();
  }
  // The load left a consistent store behind: aggregates and search index match the rows.
  assert.ok(assertCustomersConsistent(path) > 150_000);
});
