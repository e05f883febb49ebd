// What the benchmarks share: child processes with their output in a file, waiting for a URL, memory, percentiles,
// autocannon runs reported as one row, the databases they run on and the user they sign in as.
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { openSqliteEngine, type SqliteEngine } from '../src/db/engine.ts';
import { PostgresEngine } from '../src/db/pg-engine.ts';
import { migratePostgres } from '../src/db/postgres/migrate.ts';
import { createPgUserRepository } from '../src/db/postgres/users.ts';
import { createUserRepository, type User } from '../src/db/users.ts';
import type { Role } from '../src/domain/auth-user.ts';
import { customerFields } from '../src/customers/index.ts';
import { hashPassword } from '../src/domain/passwords.ts';
import { syntheticCustomers } from './synthetic-customers.ts';

export const log = (text: string) => process.stderr.write(`${text}\n`);

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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

/** Deletes the database at `path` and what lives beside it (its log, shared memory, token secret, import uploads). */
export function removeDatabase(path: string): void {
  for (const suffix of ['', '-wal', '-shm', '.secret', '.imports']) rmSync(path + suffix, { force: true, recursive: true });
}

/** Replaces `copy` with a copy of `source`: a bench run alone changes the copy, never the seeded base it started from. */
export function freshCopy(source: string, copy: string): void {
  if (!existsSync(source)) throw new Error(`${source} does not exist: run npm run bench once, or npm run seed -- --database ${source}`);
  removeDatabase(copy);
  copyFileSync(source, copy);
}

/** The user a bench signs in as. */
export interface BenchAccount {
  email: string;
  fullName: string;
  role: Role;
  password: string;
}

/** Returns the user with `account`'s email, added first when the database has none (a rerun finds the one before). */
export async function ensureUser(engine: SqliteEngine | PostgresEngine, account: BenchAccount): Promise<User> {
  const users = engine.kind === 'sqlite' ? createUserRepository(engine) : createPgUserRepository(engine);
  const found = await users.findCredentials(account.email);
  if (found) return found.user;
  const { password, ...user } = account;
  return users.insertUser({ ...user, passwordHash: await hashPassword(password) }, new Date());
}

/**
 * `ensureUser` on the database at `path` (a SQLite file, or a postgres:// URL, its schema created first), opened for
 * it and closed again before a service opens it.
 */
export async function ensureUserAt(path: string, account: BenchAccount): Promise<void> {
  const postgresUrl = /^postgres(ql)?:\/\//.test(path);
  const engine = postgresUrl ? new PostgresEngine(path, { max: 1 }) : openSqliteEngine(path);
  try {
    if (engine.kind === 'postgres') await migratePostgres(engine);
    await ensureUser(engine, account);
  } finally {
    await engine.close();
  }
}

/**
 * `count` bodies for POST /v1/customers/import of 1000 new synthetic customers each (the API's cap), drawn from
 * `seed` with serials from `firstSerial`: the same seed gives the same customers in every bench.
 */
export function importBodies(count: number, { seed, firstSerial }: { seed: number; firstSerial: number }): string[] {
  const made = syntheticCustomers(count * 1000, { seed, firstSerial });
  const bodies: string[] = [];
  for (let b = 0; b < count; b++) {
    const customers = [];
    for (let i = 0; i < 1000; i++) customers.push(customerFields(made.next().value!));
    bodies.push(JSON.stringify({ customers }));
  }
  return bodies;
}
