// Test harness: the real server on port 0 with a temporary database, a controllable clock, and HTTP helpers.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as v from 'valibot';
import { createApp } from '../src/app.ts';
import { loadConfig, type Config } from '../src/config.ts';
import type { Db } from '../src/db/database.ts';
import { openSqliteEngine, type SqliteEngine } from '../src/db/engine.ts';
import { PostgresEngine } from '../src/db/pg-engine.ts';
import { migratePostgres, tokenSecretOf } from '../src/db/postgres/migrate.ts';
import { type User } from '../src/db/users.ts';
import type { Role } from '../src/domain/auth-user.ts';
import { hashPassword, PRODUCTION_PASSWORD_COST, type PasswordCost } from '../src/domain/passwords.ts';
import { createLogger } from '../src/http/logger.ts';
import type { Route } from '../src/http/operation.ts';
import { Router } from '../src/http/router.ts';
import type { Sleep } from '../src/llm/sleep.ts';
import type { ServiceEngine } from '../src/storage.ts';
import { createDatabase, dropDatabase } from './support/postgres.ts';

/**
 * Set when the suite runs on PostgreSQL (`npm run test:pg` sets TEST_DATABASE_URL): every service then gets a fresh
 * database of its own on that server instead of a SQLite file.
 */
export const ON_POSTGRES = process.env.TEST_DATABASE_URL !== undefined;

export const PASSWORD = 'correct horse battery';
/** A cheap scrypt cost for tests (about 1 ms a hash); production hashes at `PRODUCTION_PASSWORD_COST`. */
export const TEST_PASSWORD_COST: PasswordCost = { N: 2 ** 10, r: 8, p: 1 };
const passwordHashes = new Map<string, Promise<string>>();

/** Returns the hash of PASSWORD at the cost, made once per test file. */
function passwordHashAt(cost: PasswordCost): Promise<string> {
  const key = `${cost.N}/${cost.r}/${cost.p}`;
  const hash = passwordHashes.get(key) ?? hashPassword(PASSWORD, cost);
  passwordHashes.set(key, hash);
  return hash;
}

/** A clock tests move by hand; starts at a fixed instant. */
export class TestClock {
  constructor(public current = new Date('2026-11-20T12:00:00.000Z')) {}
  now = (): Date => new Date(this.current.getTime());
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
  set(iso: string): void {
    this.current = new Date(iso);
  }
}

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  token?: string;
  headers?: Record<string, string>;
  /** Raw body sent as is (with the given headers); overrides `body`. */
  raw?: string | Uint8Array;
}

export interface TestService {
  url: string;
  /** The service's SQLite connection, for tests that look at or arrange rows directly; throws on PostgreSQL. */
  db: Db;
  /** The SQLite engine the service runs on, for tests that call repositories themselves; throws on PostgreSQL. */
  engine: SqliteEngine;
  /** The engine the service runs on, whichever it is. */
  anyEngine: ServiceEngine;
  /** The folder where CSV uploads wait for their import job. */
  uploads: string;
  /**
   * Runs one SQL statement on the service's database, whichever the engine, and resolves to its rows: for tests that
   * arrange or check rows directly. Write it in SQL both engines read, with `?` placeholders (numbered for PostgreSQL).
   */
  query<T = Record<string, unknown>>(text: string, ...params: unknown[]): Promise<T[]>;
  /** Resolves to the first column of the first row `query` returns (undefined for none): a count, an id. */
  queryValue<T = unknown>(text: string, ...params: unknown[]): Promise<T | undefined>;
  config: Config;
  clock: TestClock;
  logLines: Record<string, unknown>[];
  /** Resolves with the first log line (already written or still to come) that `matches`. */
  waitForLog(matches: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<Reply<T>>;
  /** Creates a user directly in the database (password PASSWORD) and returns it. */
  createUser(role: Role, email?: string): Promise<User>;
  /** Signs in and returns the session. */
  signIn(email: string, password?: string): Promise<{ accessToken: string; refreshToken: string; user: User }>;
  /** Creates a user of the role and returns an access token for them. */
  tokenFor(role: Role): Promise<string>;
  close(): Promise<void>;
}

let userCounter = 0;

export interface StartOptions {
  env?: Record<string, string>;
  clock?: TestClock;
  fetch?: typeof fetch;
  /** The model layer's waits and jitter (AppDeps `sleep` and `random`). */
  sleep?: Sleep;
  random?: () => number;
  /** An existing database file to open, as after a restart; the caller owns it and removes it. */
  databasePath?: string;
  /** An existing PostgreSQL database to open (test/support/postgres.ts `createDatabase`); the caller owns it and drops it. */
  databaseUrl?: string;
  /** The cost of new password hashes: TEST_PASSWORD_COST unless given; 'app default' leaves createApp's own default. */
  passwordCost?: PasswordCost | 'app default';
}

/** Starts the service on a free port with a fresh database (or `databasePath`); `env` adds configuration variables. */
export async function startService(options: StartOptions = {}): Promise<TestService> {
  const onPostgres = options.databaseUrl !== undefined || (ON_POSTGRES && options.databasePath === undefined);
  /** A database this service made for itself, dropped when it closes. */
  const ownDatabase = onPostgres && options.databaseUrl === undefined;
  const dir = options.databasePath === undefined && !onPostgres ? mkdtempSync(join(tmpdir(), 'campaigns-test-')) : undefined;
  const config = loadConfig({
    ...(onPostgres
      ? { DATABASE_URL: options.databaseUrl ?? (await createDatabase('http', { withSchema: true })) }
      : { DATABASE_PATH: options.databasePath ?? join(dir!, 'test.db') }),
    TOKEN_SECRET: 'test-secret-that-is-at-least-32-bytes-long',
    LOG_LEVEL: 'info',
    ...options.env,
  });
  const clock = options.clock ?? new TestClock();
  const engine: ServiceEngine = onPostgres ? new PostgresEngine(config.databaseUrl!) : openSqliteEngine(config.databasePath);
  if (engine.kind === 'postgres') await migratePostgres(engine);
  // `env: { TOKEN_SECRET: '' }` on PostgreSQL: the secret kept in the database, as a moved deployment has it.
  const tokenSecret = config.tokenSecret ?? (engine.kind === 'postgres' ? await tokenSecretOf(engine) : undefined);
  const sqliteOnly = <T>(get: (engine: SqliteEngine) => T) => () => {
    if (engine.kind !== 'sqlite') throw new Error('This test looks inside SQLite: it belongs in a file scripts/test-pg.ts runs on SQLite only.');
    return get(engine);
  };
  const logLines: Record<string, unknown>[] = [];
  const logWaiters = new Set<(line: Record<string, unknown>) => void>();
  const logger = createLogger(
    config.logLevel,
    (text) => {
      const line = JSON.parse(text) as Record<string, unknown>;
      logLines.push(line);
      for (const waiter of logWaiters) waiter(line);
    },
    clock.now,
  );
  const waitForLog = (matches: (line: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const found = logLines.find(matches);
      if (found) return resolve(found);
      const waiter = (line: Record<string, unknown>) => {
        if (!matches(line)) return;
        logWaiters.delete(waiter);
        resolve(line);
      };
      logWaiters.add(waiter);
    });
  const passwordCost = options.passwordCost ?? TEST_PASSWORD_COST;
  const app = createApp({
    engine,
    config,
    tokenSecret,
    clock: clock.now,
    logger,
    fetch: options.fetch,
    sleep: options.sleep,
    random: options.random,
    ...(passwordCost === 'app default' ? {} : { passwordCost }),
  });
  const routes = new Router<Route>();
  for (const r of app.routes) routes.add(r.method, r.path, r);
  const server: Server = createServer(app.listener);
  await app.ready;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app.listeningAt(url);
  const users = app.users;

  const query = async <T = Record<string, unknown>>(text: string, ...params: unknown[]): Promise<T[]> => {
    if (engine.kind === 'sqlite') {
      const statement = engine.db.prepare(text);
      if (statement.reader) return statement.all(...params) as T[];
      statement.run(...params);
      return [];
    }
    let n = 0;
    const numbered = text.replace(/\?/g, () => `$${++n}`);
    return (await engine.sql.unsafe(numbered, params as never[])) as unknown as T[];
  };
  const queryValue = async <T = unknown>(text: string, ...params: unknown[]): Promise<T | undefined> => {
    const [row] = await query<Record<string, unknown>>(text, ...params);
    return row === undefined ? undefined : (Object.values(row)[0] as T);
  };

  const request = async <T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<Reply<T>> => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | Uint8Array | undefined = opts.raw;
    if (body === undefined && opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(url + path, { method, headers, body: body as RequestInit['body'] });
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (response.status === 200 && /^application\/json\b/.test(response.headers.get('content-type') ?? '')) {
      assertResponseSchema(routes, method, new URL(url + path).pathname, parsed);
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  };

  const createUser = async (role: Role, email = `user${++userCounter}.${role}@example.com`) => {
    const passwordHash = await passwordHashAt(passwordCost === 'app default' ? PRODUCTION_PASSWORD_COST : passwordCost);
    return users.insertUser({ email, fullName: `Test ${role}`, role, passwordHash }, clock.now());
  };

  const signIn = async (email: string, password = PASSWORD) => {
    const reply = await request('POST', '/v1/auth/sign-in', { body: { email, password } });
    if (reply.status !== 200) throw new Error(`sign-in failed: ${reply.status} ${reply.text}`);
    return reply.body;
  };

  return {
    url,
    get db() {
      return sqliteOnly((e) => e.db)();
    },
    get engine() {
      return sqliteOnly((e) => e)();
    },
    anyEngine: engine,
    uploads: app.uploads,
    query,
    queryValue,
    config,
    clock,
    logLines,
    waitForLog,
    request,
    createUser,
    signIn,
    async tokenFor(role) {
      const user = await createUser(role);
      return (await signIn(user.email)).accessToken;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.stopBackground();
      await app.leave();
      await engine.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      // Hundreds of services run in a suite: their databases (and the upload folders named after them, or after an
      // in-memory database) would fill the disk.
      if (ownDatabase) await dropDatabase(config.databaseUrl!);
      if (ownDatabase || config.databasePath === ':memory:') rmSync(app.uploads, { recursive: true, force: true });
    },
  };
}

/**
 * The request log lines written for one trace id. Waits for the first (it is written when the response closes),
 * then for the line of one more request on a fresh connection: any second line for the trace id would be written
 * before it.
 */
export async function requestLogLines(target: TestService, traceId: string): Promise<Record<string, unknown>[]> {
  const isRequest = (id: string) => (line: Record<string, unknown>) => line.msg === 'request' && line.traceId === id;
  await target.waitForLog(isRequest(traceId));
  const marker = `after-${traceId}`.slice(0, 128);
  await target.request('GET', '/health', { headers: { 'x-request-id': marker, connection: 'close' } });
  await target.waitForLog(isRequest(marker));
  return target.logLines.filter(isRequest(traceId));
}

/**
 * Asserts that a 200 JSON body fits the `response` schema of the operation that answered it: every field it requires
 * is there with its type, and no field is sent that the schema does not describe (which `v.object` would only strip).
 */
function assertResponseSchema(routes: Router<Route>, method: string, path: string, body: unknown): void {
  const found = routes.lookup(method.toUpperCase(), path);
  if (found.kind !== 'found') return; // a file of the console, not an operation
  const { operation } = found.match.route;
  const result = v.safeParse(operation.response, body);
  const issues = result.success
    ? undescribedKeys(body, result.output).map((at) => `  at ${at}: a field the schema does not describe`)
    : result.issues.map((issue) => `  at ${v.getDotPath(issue) ?? '(the body)'}: ${issue.message}`);
  if (issues.length === 0) return;
  assert.fail(`${method} ${path}: the 200 body does not fit the response schema of ${operation.operationId}:\n${issues.join('\n')}`);
}

/** Returns the paths of the keys of `sent` that parsing dropped from `parsed`. */
function undescribedKeys(sent: unknown, parsed: unknown, at = ''): string[] {
  if (typeof sent !== 'object' || sent === null || typeof parsed !== 'object' || parsed === null) return [];
  return Object.entries(sent).flatMap(([key, value]) => {
    const path = at ? `${at}.${key}` : key;
    return key in parsed ? undescribedKeys(value, (parsed as Record<string, unknown>)[key], path) : [path];
  });
}

/** Asserts a problem document: status, code, content type, version header, trace id, and the named fields in order. */
export function assertProblem(reply: Reply, status: number, code: string, fields?: string[]): void {
  assert.equal(reply.status, status, reply.text);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(reply.headers.get('x-api-version'), 'v1');
  assert.equal(reply.body.code, code, reply.text);
  assert.equal(reply.body.status, status);
  assert.equal(typeof reply.body.title, 'string');
  assert.equal(typeof reply.body.detail, 'string');
  assert.equal(typeof reply.body.type, 'string');
  assert.equal(reply.body.traceId, reply.headers.get('x-trace-id'));
  if (fields) assert.deepEqual(reply.body.errors?.map((e: { field: string }) => e.field), fields, reply.text);
}
