// The real service, started as `npm start` starts it, as a child process for the stress tests: started on a free port,
// ready once it logs "listening", killed or stopped on demand; and a small HTTP client bounded in time.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `npm start`'s command line after `node` (its flags and script), from package.json. */
const START = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start.split(' ').slice(1);

export const ADMIN_EMAIL = 'admin@example.com';
export const ADMIN_PASSWORD = 'stress-admin-password';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** What the service logged on stdout: request lines counted by status, and every warning or error line whole. */
export interface LogSummary {
  statuses: Map<number, number>;
  /** Time the service spent on each request, by path (query left out): from its arrival to the end of the answer. */
  durations: Map<string, number[]>;
  problems: string[];
}

/** One line of the service's JSON log (src/http/logger.ts). */
export type LogEntry = { level: string; msg: string; [field: string]: unknown };

export interface ChildService {
  url: string;
  pid: number;
  exited: Promise<Exit>;
  log: LogSummary;
  /** Everything the process wrote on stderr so far. */
  stderr(): string;
  /** Calls `listener` with each JSON line the service logs from now on; returns the function that stops it. */
  onLog(listener: (entry: LogEntry) => void): () => void;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<Exit>;
  /** SIGTERM; resolves once the process has exited. */
  stop(): Promise<Exit>;
}

/** Runs a TypeScript file of this repository with Node and tsx; `args` follow the file. */
export function spawnScript(file: string, args: string[], env: Record<string, string> = {}) {
  return spawn(process.execPath, ['--import', 'tsx', file, ...args], { cwd: ROOT, env: { ...process.env, ...env } });
}

/** Services still running: a test that fails part-way leaves them, and they would keep the test file from ending. */
const running = new Set<ReturnType<typeof spawn>>();
after(() => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts the service on a free port of 127.0.0.1 and resolves once it logs that it listens; rejects if it exits first. */
export async function launchService(env: Record<string, string>, timeoutMs = 30_000): Promise<ChildService> {
  const child = spawn(process.execPath, START, { cwd: ROOT, env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ADMIN_PASSWORD, ...env } });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const log: LogSummary = { statuses: new Map(), durations: new Map(), problems: [] };
  // Listeners rather than a record of every line: a stress test logs hundreds of thousands of requests.
  const listeners = new Set<(entry: LogEntry) => void>();
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening" line within ${timeoutMs} ms: ${err}`)), timeoutMs);
    let pending = '';
    // Read line by line as it comes, so the pipe never fills and nothing but the summary is kept.
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        let entry: { level: string; msg: string; url?: string; status?: number; path?: string; durationMs?: number };
        try {
          entry = JSON.parse(line) as typeof entry;
        } catch {
          log.problems.push(line); // stdout holds only log lines
          continue;
        }
        if (entry.msg === 'listening') {
          clearTimeout(timer);
          resolve(entry.url!);
        } else if (entry.msg === 'request') {
          log.statuses.set(entry.status!, (log.statuses.get(entry.status!) ?? 0) + 1);
          const path = entry.path ?? '?';
          if (!log.durations.has(path)) log.durations.set(path, []);
          log.durations.get(path)!.push(entry.durationMs!);
        }
        if (entry.level === 'warn' || entry.level === 'error') log.problems.push(line);
        for (const listener of listeners) listener(entry as LogEntry);
      }
    });
    void exited.then((exit) => {
      clearTimeout(timer);
      reject(new Error(`service exited (${exit.code ?? exit.signal}) before listening: ${err}`));
    });
  });
  const signal = async (name: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    return exited;
  };
  const onLog = (listener: (entry: LogEntry) => void) => {
    listeners.add(listener);
    return () => void listeners.delete(listener);
  };
  return { url, pid: child.pid!, exited, log, stderr: () => err, onLog, kill: () => signal('SIGKILL'), stop: () => signal('SIGTERM') };
}

export interface Answer<T = any> {
  status: number;
  body: T;
}

/** One request with a JSON body and a bearer token, given up after `timeoutMs`; rejects when the connection fails. */
export async function call<T = any>(
  url: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; timeoutMs?: number; close?: boolean } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = options.close ? { connection: 'close' } : {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(url + path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** Signs in as the first admin and returns an access token. */
export async function signInAdmin(url: string): Promise<string> {
  const reply = await call<{ accessToken: string }>(url, 'POST', '/v1/auth/sign-in', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, close: true });
  if (reply.status !== 200) throw new Error(`sign-in failed with ${reply.status}: ${JSON.stringify(reply.body)}`);
  return reply.body.accessToken;
}

/** Returns how many sockets the process holds open (its listening socket and stdio pipes included). */
export function openSockets(pid: number): number {
  let sockets = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) sockets++;
    } catch {
      // closed while we looked
    }
  }
  return sockets;
}

/** Returns the resident set size of the process in MiB. */
export function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
}

/**
 * Checks `condition` every `everyMs` until it holds, for state no event reports (another process's sockets or
 * memory); rejects naming `what` after `timeoutMs`.
 */
export async function waitUntil(condition: () => boolean, what: string, timeoutMs: number, everyMs = 50): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
