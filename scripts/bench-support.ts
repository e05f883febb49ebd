// What the benchmarks share: child processes with their output in a file, waiting for a URL, memory, percentiles,
// and autocannon runs reported as one row.
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';

export const log = (text: string) => process.stderr.write(`${text}\n`);

export interface Load {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
}

/** The service's command line as `npm start` runs it: its Node flags and script, read from package.json. */
export const SERVICE = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start.split(' ').slice(1);

/**
 * Starts `node <command>` with stdout in `logFile`: a pipe the benchmark did not read would stall it when full.
 * BENCH_NODE_FLAGS adds flags to every process started, e.g. `--cpu-prof --cpu-prof-dir=data/profiles`.
 */
export function startProcess(command: string[], env: Record<string, string>, logFile: string): ChildProcess {
  const flags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  return spawn(process.execPath, [...flags, ...command], { env: { ...process.env, ...env }, stdio: ['ignore', openSync(logFile, 'w'), 'inherit'] });
}

/** Resolves with the milliseconds until `url` answered 2xx; throws after `timeoutMs`. */
export async function waitFor(url: string, timeoutMs = 60_000): Promise<number> {
  const begun = performance.now();
  for (;;) {
    try {
      if ((await fetch(url)).ok) return performance.now() - begun;
    } catch {
      // not listening yet
    }
    if (performance.now() - begun > timeoutMs) throw new Error(`${url} did not answer`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The process's resident memory in MB: now (`VmRSS`) or at its peak (`VmHWM`). */
export function rssMb(pid: number, which: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${which}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
}

/** The value at fraction `p` (0.5, 0.99) of the samples, in any order. */
export function percentile(samples: readonly number[], p: number): number {
  return [...samples].sort((a, b) => a - b)[Math.min(samples.length - 1, Math.floor(samples.length * p))] ?? 0;
}

/** Signs in and returns the access token. */
export async function signIn(base: string, email: string, password: string): Promise<string> {
  const reply = await fetch(`${base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  if (reply.status !== 200) throw new Error(`sign-in as ${email}: ${reply.status} ${await reply.text()}`);
  return ((await reply.json()) as { accessToken: string }).accessToken;
}

export interface LoadOptions {
  token?: string;
  method?: string;
  body?: unknown;
  /** A fresh body for every request, so nothing the service remembers can answer it (autocannon's `requests`). */
  bodies?: () => unknown;
  connections?: number;
}

/** Drives `url` with autocannon (50 connections unless said) for `duration` seconds; logs and returns the row. */
export async function load(name: string, url: string, duration: number, options: LoadOptions = {}): Promise<Load> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const { bodies } = options;
  const result = await autocannon({
    url,
    connections: options.connections ?? 50,
    duration,
    method: options.method ?? 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    requests: bodies && [{ setupRequest: (request: object) => ({ ...request, body: JSON.stringify(bodies()) }) }],
  });
  const row = { name, requestsPerSecond: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx + result.errors };
  log(`  ${name.padEnd(52)} ${String(Math.round(row.requestsPerSecond)).padStart(6)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms${row.non2xx ? `  (${row.non2xx} failed)` : ''}`);
  return row;
}

/** Resolves once the service's in-memory audience index has loaded (a preview waits for it), so timings exclude it. */
export async function audienceReady(base: string, token: string): Promise<void> {
  const reply = await fetch(`${base}/v1/segments/preview`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ conditions: [{ field: 'totalTransactions', operator: 'gte', value: 0 }] }),
  });
  if (reply.status !== 200) throw new Error(`preview: ${reply.status} ${await reply.text()}`);
}
