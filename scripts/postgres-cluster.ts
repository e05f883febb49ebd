// A throwaway PostgreSQL cluster on a free loopback port, for `npm run test:pg`, the tests and the bench: Debian's
// PostgreSQL server (installed when missing), initialised in a temporary folder, started, and removed when stopped.
// Run as root, the server runs as the `postgres` user (it refuses to run as root).
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A running cluster: its URL (database `postgres`, user `postgres`, no password) and how to stop it. */
export interface PostgresCluster {
  url: string;
  port: number;
  dir: string;
  stop(): Promise<void>;
}

const ROOT = process.getuid?.() === 0;

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

/**
 * Starts a new cluster: initdb (trust authentication, no fsync: throwaway data), then the server on a free port of
 * 127.0.0.1 with its socket in the cluster's folder. `settings` are extra server settings (`-c name=value`).
 */
export async function startPostgres(settings: Record<string, string | number> = {}): Promise<PostgresCluster> {
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), 'campaigns-pg-'));
  if (ROOT) chownSync(dir, uid('postgres'), gid('postgres'));
  const data = join(dir, 'data');
  run(bin, 'initdb', ['-D', data, '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8', '-U', 'postgres']);
  const port = await freePort();
  const options = [`-p ${port}`, `-k ${dir}`, '-c listen_addresses=127.0.0.1', '-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off'];
  for (const [name, value] of Object.entries(settings)) options.push(`-c ${name}=${value}`);
  run(bin, 'pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-o', options.join(' '), 'start']);
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        run(bin, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

function uid(user: string): number {
  return Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
}

function gid(user: string): number {
  return Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
}
