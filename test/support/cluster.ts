// Several real instances of the service (`npm start` processes, test/stress/child-service.ts) on one PostgreSQL
// database, with the same settings, and optionally Debian's nginx in front of them with the site configuration the
// README shows (its nginx code block is `siteConfig(DEPLOYMENT)`): what section 13 of product.md calls a deployment
// of several instances, started by a test on free ports and stopped after it.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/postgres-cluster.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, launchService, type ChildService, type LogEntry } from '../stress/child-service.ts';
import { createDatabase, dropDatabase } from './postgres.ts';

/** Debian's nginx (`apt-get install -y nginx`; .ci/run installs it when missing). */
export const NGINX = '/usr/sbin/nginx';

/**
 * What every instance of a test cluster is given besides the database: the first admin, and leases short enough
 * that a killed instance's claims expire within two seconds (INSTANCE_LEASE_MS, renewed every INSTANCE_HEARTBEAT_MS).
 */
export const CLUSTER_ENV: Record<string, string> = {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  INSTANCE_LEASE_MS: '1500',
  INSTANCE_HEARTBEAT_MS: '300',
  LOG_LEVEL: 'info',
  // nginx, when in front, connects from here.
  TRUSTED_PROXIES: '127.0.0.1',
};

/** The values of the site configuration: where nginx listens, the instances it balances, and the largest body. */
export interface SiteValues {
  /** `listen`'s argument: a port, or an address and port. */
  listen: string;
  serverName: string;
  /** The instances, `host:port` each. */
  upstreams: string[];
  /** IMPORT_MAX_BYTES of the instances: a CSV upload is the largest request body. */
  maxBodyBytes: number;
  accessLog: string;
}

/** The deployment the README shows: two instances on two machines, nginx on port 80, IMPORT_MAX_BYTES at its default. */
export const DEPLOYMENT: SiteValues = {
  listen: '80',
  serverName: 'campaigns.example.com',
  upstreams: ['10.0.0.11:3000', '10.0.0.12:3000'],
  maxBodyBytes: 500 * 1024 * 1024,
  accessLog: '/var/log/nginx/campaigns.access.log',
};

/** The README, whose first nginx code block is `siteConfig(DEPLOYMENT)`, as test/pg/nginx.test.ts checks. */
export const README_FILE = new URL('../../README.md', import.meta.url);

/** Returns the README's first ```nginx code block: the site configuration it shows. */
export function readmeSiteConfig(readme: string): string | undefined {
  return /^```nginx\n([\s\S]*?)^```$/m.exec(readme)?.[1];
}

/**
 * Returns the nginx site configuration of the service for `values`: the block the README shows (with
 * DEPLOYMENT) and the one the tests run (with their own addresses), so the README's configuration is the tested one.
 */
export function siteConfig({ listen, serverName, upstreams, maxBodyBytes, accessLog }: SiteValues): string {
  return `# nginx in front of several instances of the campaign drafting service on one PostgreSQL database (README,
# "A deployment: two instances behind nginx"). On Debian (nginx 1.22): save as /etc/nginx/conf.d/campaigns.conf, which
# nginx.conf reads inside its http block; remove Debian's own site on port 80 (rm /etc/nginx/sites-enabled/default);
# put the instances' addresses below; then \`nginx -t && systemctl reload nginx\`. TLS ends here in production:
# \`listen 443 ssl;\` with ssl_certificate and ssl_certificate_key. test/pg/nginx.test.ts runs this configuration
# with its own addresses (test/support/cluster.ts writes it).

# Which instance answered each request and how long it took: a stopped instance shows here first.
log_format campaigns '$remote_addr [$time_local] "$request" $status $body_bytes_sent $request_time '
                     'upstream=$upstream_addr upstream_status=$upstream_status upstream_time=$upstream_response_time';

upstream campaigns {
    # Round robin, nginx's default: any instance answers any request (tokens, limits, idempotency keys, import jobs
    # and caches are shared through the database), so no session affinity is needed. An instance that cannot be
    # reached is left out for 10 s, then tried again.
${upstreams.map((server) => `    server ${server} max_fails=1 fail_timeout=10s;`).join('\n')}
    # Idle connections kept open to the instances, so that requests do not each pay a new connection.
    keepalive 32;
}

server {
    listen ${listen};
    server_name ${serverName};
    access_log ${accessLog} campaigns;

    # IMPORT_MAX_BYTES of the instances (in bytes): a CSV upload is the largest request body. Keep the two equal.
    client_max_body_size ${maxBodyBytes};

    location / {
        proxy_pass http://campaigns;
        # Keep-alive to the instances: HTTP/1.1, and the client's "Connection" header not passed on.
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        # The client's address, appended to what the client sent: the instances believe it from this nginx only
        # when their TRUSTED_PROXIES names its address (the sign-in limit then counts per client, not per proxy).
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        # Chat replies are server-sent events: each is passed on as it arrives (the service also sends
        # X-Accel-Buffering: no on them). CSV exports stream the same way.
        proxy_buffering off;
        # A CSV upload goes to the instance as it arrives, which checks its size and rows as it reads, rather than
        # being written to nginx's disk first.
        proxy_request_buffering off;
        # A reply stream is never quiet longer than CHAT_HEARTBEAT_MS (15 s); a large export or upload may take minutes.
        proxy_read_timeout 300s;
        proxy_send_timeout 300s;
        # Another instance is tried when one cannot be reached or fails before its answer's headers. A POST or PATCH it
        # received is never sent twice (nginx's rule); a GET or DELETE may be, which they bear.
        proxy_next_upstream error;
    }
}
`;
}

/**
 * Returns the main configuration of a test's own nginx: everything it writes inside `dir` (pid, logs, temporary
 * files), in the foreground, one worker, and the site file `site` included in its http block as Debian's nginx.conf
 * includes conf.d. Run as root, its worker runs as root too, so that it can read `dir`.
 */
export function testMainConfig(dir: string, site: string): string {
  const user = process.getuid?.() === 0 ? 'user root;\n' : '';
  return `${user}daemon off;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} info;
events {
    worker_connections 512;
}
http {
    client_body_temp_path ${join(dir, 'client_body')};
    proxy_temp_path ${join(dir, 'proxy')};
    fastcgi_temp_path ${join(dir, 'fastcgi')};
    uwsgi_temp_path ${join(dir, 'uwsgi')};
    scgi_temp_path ${join(dir, 'scgi')};
    include ${site};
}
`;
}

/** A test's own nginx, started by `startNginx`. */
export interface NginxProxy {
  /** Where nginx listens: `http://127.0.0.1:PORT`. */
  url: string;
  dir: string;
  /** nginx's error log so far. */
  errorLog(): string;
  /** Stops nginx (SIGTERM: at once, open connections cut) and resolves once it has exited. */
  stop(): Promise<void>;
}

/** Starts nginx in front of `upstreams` (`host:port` each) on a free port; resolves once it accepts connections. */
export async function startNginx(upstreams: string[], maxBodyBytes: number): Promise<NginxProxy> {
  if (!existsSync(NGINX)) throw new Error(`${NGINX} is missing: apt-get install -y --no-install-recommends nginx`);
  // Removed by `stop` (not by test/support/temp-dir.ts, whose `after` would run at the end of the hook that started it).
  const dir = mkdtempSync(join(tmpdir(), 'campaigns-nginx-'));
  for (const sub of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, sub));
  const port = await freePort();
  const site = join(dir, 'campaigns.conf');
  writeFileSync(site, siteConfig({ listen: `127.0.0.1:${port}`, serverName: '127.0.0.1', upstreams, maxBodyBytes, accessLog: join(dir, 'access.log') }));
  writeFileSync(join(dir, 'nginx.conf'), testMainConfig(dir, site));
  // -e: the error log from the very start, before the configuration (which names it) is read.
  const child = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A test process that ends without `stop` (a failure part-way) must not leave nginx holding its port.
  const orphaned = () => child.kill('SIGKILL');
  process.once('exit', orphaned);
  const errorLog = () => (existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '');
  try {
    await accepting(port, child, 5_000);
  } catch (error) {
    child.kill('SIGKILL');
    process.off('exit', orphaned);
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`nginx did not start: ${(error as Error).message}\n${stderr}\n${errorLog()}`);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    dir,
    errorLog,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      process.off('exit', orphaned);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once 127.0.0.1:`port` accepts a connection; rejects when `child` exits first or after `timeoutMs`. */
async function accepting(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`nginx exited (${child.exitCode ?? child.signalCode})`);
    if (await connects(port)) return;
    if (performance.now() > deadline) throw new Error(`nothing accepted connections on port ${port} within ${timeoutMs} ms`);
    // nginx tells nobody when it listens: a connection attempt is the only way to know.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** What `startCluster` starts. */
export interface ClusterOptions {
  /** How many instances to start, all at once. */
  instances: number;
  /** Settings every instance gets besides CLUSTER_ENV, DATABASE_URL and TMPDIR. */
  env?: Record<string, string>;
  /** The database; by default a new one, dropped by `stop`. */
  databaseUrl?: string;
  /**
   * The new database starts with the schema (a copy of the template `npm run test:pg` makes, faster than creating it);
   * otherwise it is empty and the first instances create the schema. Either way they create the first admin.
   */
  withSchema?: boolean;
  /** Puts nginx in front of the instances. */
  proxy?: boolean;
}

/** Instances of the service on one database, and nginx in front of them when asked for. */
export interface Cluster {
  databaseUrl: string;
  /** The environment every instance was started with (for `npm run user`, or one more instance). */
  env: Record<string, string>;
  /** The running instances, in the order they were started (stopped or killed ones stay in place). */
  instances: ChildService[];
  /** nginx, when asked for. */
  proxy: NginxProxy | undefined;
  /** Starts one more instance with the same settings (not behind nginx). */
  add(): Promise<ChildService>;
  /**
   * Resolves with the index of the instance that logged the request whose answer carried `traceId` (x-trace-id);
   * rejects after `timeoutMs`. The log line follows the answer, so it is waited for.
   */
  servedBy(traceId: string, timeoutMs?: number): Promise<number>;
  /** Every warning and error line the instances logged so far, each prefixed with the instance's index. */
  problems(): string[];
  /** Stops nginx and every instance (SIGTERM), then drops the database when the cluster made it. */
  stop(): Promise<void>;
}

/** Starts `instances` instances at once on one database (and nginx in front when asked); resolves once all listen. */
export async function startCluster({ instances: count, env = {}, databaseUrl, withSchema = false, proxy: withProxy = false }: ClusterOptions): Promise<Cluster> {
  const ownDatabase = databaseUrl === undefined;
  const url = databaseUrl ?? (await createDatabase('cluster', { withSchema }));
  // One folder for every instance's waiting uploads (as instances on one machine share /tmp), removed by `stop`.
  const dir = mkdtempSync(join(tmpdir(), 'campaigns-cluster-'));
  const shared: Record<string, string> = { ...CLUSTER_ENV, ...env, DATABASE_URL: url, TMPDIR: dir };
  const instances: ChildService[] = [];
  const servedBy = new Map<string, number>();
  const waiting = new Map<string, (index: number) => void>();

  const watch = (service: ChildService, index: number) =>
    service.onLog((entry: LogEntry) => {
      if (entry.msg !== 'request' || typeof entry.traceId !== 'string') return;
      servedBy.set(entry.traceId, index);
      waiting.get(entry.traceId)?.(index);
    });
  const add = async () => {
    const service = await launchService(shared);
    watch(service, instances.push(service) - 1);
    return service;
  };

  let proxy: NginxProxy | undefined;
  try {
    const started = await Promise.all(Array.from({ length: count }, () => launchService(shared)));
    for (const service of started) watch(service, instances.push(service) - 1);
    if (withProxy) {
      const maxBodyBytes = Number(shared.IMPORT_MAX_BYTES ?? 500 * 1024 * 1024);
      proxy = await startNginx(instances.map((service) => new URL(service.url).host), maxBodyBytes);
    }
  } catch (error) {
    await Promise.all(instances.map((service) => service.kill()));
    if (ownDatabase) await dropDatabase(url);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  return {
    databaseUrl: url,
    env: shared,
    instances,
    proxy,
    add,
    servedBy(traceId, timeoutMs = 5_000) {
      const known = servedBy.get(traceId);
      if (known !== undefined) return Promise.resolve(known);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(traceId);
          reject(new Error(`no instance logged the request ${traceId} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiting.set(traceId, (index) => {
          clearTimeout(timer);
          waiting.delete(traceId);
          resolve(index);
        });
      });
    },
    problems: () => instances.flatMap((service, index) => service.log.problems.map((line) => `${index}: ${line}`)),
    async stop() {
      await proxy?.stop();
      await Promise.all(instances.map((service) => service.stop()));
      if (ownDatabase) await dropDatabase(url);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
