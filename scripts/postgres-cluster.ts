// A throwaway PostgreSQL cluster on a free loopback port, for `npm run test:pg`, the tests and the bench: Debian's
// PostgreSQL server (installed when missing), initialised in a temporary folder, started, and removed when stopped.
// Run as root, the server runs as the `postgres` user (it refuses to run as root). For failover tests, a streaming
// standby of a running cluster (`startStandby`), synchronous if asked, that can be promoted; and a primary can be
// halted as if its machine had died (`halt`).
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';

/** A running cluster: its URL (database `postgres`, user `postgres`, no password) and how to stop it. */
export interface PostgresCluster {
  url: string;
  port: number;
  dir: string;
  /** The server settings it was started with (`-c name=value`), which a standby of it needs too. */
  settings: Record<string, string | number>;
  /** Stops the server at once, as a crash would (`pg_ctl stop -m immediate`), keeping its files; `stop` removes them. */
  halt(): void;
  /** Stops the server (if still running) and removes its files. */
  stop(): Promise<void>;
}

/** A streaming standby: a cluster that replays its primary's WAL and takes no writes until promoted. */
export interface StandbyCluster extends PostgresCluster {
  /** Promotes it (`pg_ctl promote`); resolves once it has left recovery and takes writes. */
  promote(): Promise<void>;
}

const ROOT = process.getuid?.() === 0;

/** Throwaway data: nothing is flushed to disk. A synchronous standby needs `synchronous_commit` on: pass it in `settings`. */
const THROWAWAY = { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' };

/** Returns the folder of the newest PostgreSQL server's programs, installing Debian's package when there is none. */
export function postgresBin(): string {
  const found = () => {
    const base = '/usr/lib/postgresql';
    if (!existsSync(base)) return undefined;
    const versions = readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'initdb')));
    versions.sort((a, b) => Number(b) - Number(a));
    return versions[0] && join(base, versions[0], 'bin');
  };
  let bin = found();
  if (!bin && ROOT) {
    execFileSync('apt-get', ['install', '-y', '-q', 'postgresql'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    bin = found();
  }
  if (!bin) throw new Error('No PostgreSQL server is installed (apt-get install postgresql).');
  return bin;
}

/** Returns a TCP port free on 127.0.0.1 now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Runs one of the server's programs, as the `postgres` user when we are root. */
function run(bin: string, program: string, args: string[]): void {
  const command = ROOT ? ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]] : [join(bin, program), args];
  execFileSync(command[0] as string, command[1] as string[], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Makes a temporary folder the server's user owns. */
function serverDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'campaigns-pg-'));
  if (ROOT) chownSync(dir, uid('postgres'), gid('postgres'));
  return dir;
}

/**
 * Starts the server of the data folder `dir`/data on a free port of 127.0.0.1, its socket in `dir`, and returns the
 * cluster. Settings given on the command line win over the configuration files, ALTER SYSTEM's included.
 */
async function startServer(bin: string, dir: string, settings: Record<string, string | number>): Promise<PostgresCluster> {
  const data = join(dir, 'data');
  const port = await freePort();
  const options = [`-p ${port}`, `-k ${dir}`, '-c listen_addresses=127.0.0.1'];
  for (const [name, value] of Object.entries(settings)) options.push(`-c ${name}=${value}`);
  run(bin, 'pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-o', options.join(' '), 'start']);
  let running = true;
  let removed = false;
  const halt = () => {
    if (!running) return;
    running = false;
    run(bin, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
  };
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    settings,
    halt,
    async stop() {
      if (removed) return;
      removed = true;
      try {
        halt();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Starts a new cluster: initdb (trust authentication, for replication from 127.0.0.1 too; no fsync: throwaway data),
 * then the server on a free port of 127.0.0.1 with its socket in the cluster's folder. `settings` are extra server
 * settings (`-c name=value`), overriding the throwaway ones.
 */
export async function startPostgres(settings: Record<string, string | number> = {}): Promise<PostgresCluster> {
  const bin = postgresBin();
  const dir = serverDir();
  run(bin, 'initdb', ['-D', join(dir, 'data'), '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8', '-U', 'postgres']);
  return startServer(bin, dir, { ...THROWAWAY, ...settings });
}

/**
 * Starts a streaming standby of `primary`: a base backup streaming the WAL meanwhile (`pg_basebackup -R -X stream`,
 * which also writes the connection to the primary and standby.signal), started on a port of its own with the
 * primary's settings (a hot standby refuses to start with fewer connections or workers than its primary).
 *
 * `synchronous`: the primary then waits for this standby at each commit (`synchronous_standby_names = '*'`, set by
 * ALTER SYSTEM after the base backup, so that the standby does not inherit it: once promoted, it would otherwise wait
 * for a standby of its own at each commit, for ever); resolves once the primary reports the standby as 'sync'. Needs
 * the primary started with `synchronous_commit` on, which is checked.
 */
export async function startStandby(primary: PostgresCluster, { synchronous = false }: { synchronous?: boolean } = {}): Promise<StandbyCluster> {
  const bin = postgresBin();
  const dir = serverDir();
  const data = join(dir, 'data');
  run(bin, 'pg_basebackup', ['-D', data, '-R', '-X', 'stream', '-c', 'fast', '--no-sync', '-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres']);
  const standby = await startServer(bin, dir, primary.settings);
  try {
    if (synchronous) await makeSynchronous(primary);
    await untilTrue(standby.url, 'SELECT pg_is_in_recovery() AS ok', 'the standby to be in recovery');
  } catch (error) {
    await standby.stop();
    throw error;
  }
  return {
    ...standby,
    async promote() {
      run(bin, 'pg_ctl', ['-D', data, '-w', 'promote']);
      await untilTrue(standby.url, 'SELECT NOT pg_is_in_recovery() AS ok', 'the promoted standby to take writes');
    },
  };
}

/** Makes the primary wait for its standby at each commit, and waits until it reports the standby as synchronous. */
async function makeSynchronous(primary: PostgresCluster): Promise<void> {
  const sql = postgres(primary.url, { max: 1, onnotice: () => {} });
  try {
    const [commit] = await sql<{ synchronous_commit: string }[]>`SHOW synchronous_commit`;
    if (commit!.synchronous_commit === 'off') throw new Error('A synchronous standby needs its primary started with synchronous_commit on.');
    await sql`ALTER SYSTEM SET synchronous_standby_names = '*'`;
    await sql`SELECT pg_reload_conf()`;
  } finally {
    await sql.end();
  }
  await untilTrue(primary.url, "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync') AS ok", 'the standby to be synchronous');
}

/** Asks `query` (answering one row with a boolean `ok`) every 50 ms until it is true; rejects after 20 s naming `what`. */
async function untilTrue(url: string, query: string, what: string): Promise<void> {
  const deadline = performance.now() + 20_000;
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 2 });
  try {
    for (;;) {
      const [row] = await sql.unsafe<{ ok: boolean }[]>(query).catch(() => [{ ok: false }]);
      if (row?.ok) return;
      if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await sql.end();
  }
}

function uid(user: string): number {
  return Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
}

function gid(user: string): number {
  return Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
}
