// `npm run bench:instances -- [--customers N] [--seconds S] [--database-url URL] [--out FILE]`: one and two instances
// of the service on the same PostgreSQL (a throwaway cluster unless a server is given), a base of N synthetic
// customers (a million by default), the same loads on each: customer lists, segment previews and chat reply streams
// (the local provider, which paces its words like a network model). Two instances are driven at once, half of the
// connections each, as a round-robin proxy would spread them; the CPU each process used during every load is
// reported beside it, which is what says what limits the second instance on a small machine. Prints a table, writes
// JSON (data/bench-instances.json unless --out).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { benchServer, BENCH_SETTINGS, type BenchServer } from './bench-pg.ts';
import { ensureUserAt, load, log, percentile, rssMb, SERVICE, signIn, startProcess, waitFor, audienceReady, type Load, type LoadOptions } from './bench-support.ts';
import { freePort } from './postgres-cluster.ts';

const ACCOUNT = { email: 'instances-bench@example.com', fullName: 'Instances bench', role: 'marketing_lead', password: 'bench-password-1' } as const;
/** Connections in all, whatever the number of instances: the same client load, spread. */
const CONNECTIONS = 50;
/** Reply streams open at once in all, and how many each load opens in total. */
const STREAMS_OPEN = 40;

interface Instance {
  base: string;
  pid: number;
  token: string;
  stop(): void;
}

/** CPU seconds a process has used (user + system), from /proc. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime: clock ticks of 1/100 s
  } catch {
    return 0;
  }
}

/** The pids of the PostgreSQL server's processes (the postmaster and every backend). */
function postgresPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    });
}

/** Runs `work` and returns what it returned with the share of the machine's cores each process group used meanwhile. */
async function withCpu<T>(instances: Instance[], work: () => Promise<T>): Promise<{ result: T; cpu: Record<string, number> }> {
  const groups = (): Record<string, number> => {
    const taken: Record<string, number> = { postgres: postgresPids().reduce((sum, pid) => sum + cpuSeconds(pid), 0), bench: cpuSeconds(process.pid) };
    instances.forEach((instance, i) => (taken[`instance ${i + 1}`] = cpuSeconds(instance.pid)));
    return taken;
  };
  const before = groups();
  const begun = performance.now();
  const result = await work();
  const seconds = (performance.now() - begun) / 1000;
  const after = groups();
  const cpu = Object.fromEntries(Object.keys(after).map((name) => [name, Math.round(((after[name]! - (before[name] ?? 0)) / seconds) * 100) / 100]));
  return { result, cpu };
}

async function startInstance(url: string, index: number): Promise<Instance> {
  const port = await freePort();
  const env = {
    DATABASE_URL: url,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    LLM_PROVIDER: 'local',
    MODEL_CALLS_PER_MINUTE: '100000',
    CHAT_STREAMS_PER_USER: '1000',
    CHAT_STREAMS_TOTAL: '1000',
  };
  mkdirSync('data', { recursive: true });
  const child = startProcess(SERVICE, env, `data/bench-instance-${index}.log`);
  const base = `http://127.0.0.1:${port}`;
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`instance ${index} exited (${code}) before answering: see data/bench-instance-${index}.log`))));
  exited.catch(() => {}); // once it answered, its exit at the end is expected
  await Promise.race([waitFor(`${base}/health`, 120_000), exited]);
  const token = await signIn(base, ACCOUNT.email, ACCOUNT.password);
  await audienceReady(base, token);
  return { base, pid: child.pid!, token, stop: () => child.kill('SIGTERM') };
}

/** Drives every instance at once with its share of the connections; the figures added up. */
async function spread(name: string, instances: Instance[], seconds: number, path: string, options: Omit<LoadOptions, 'token' | 'connections'> = {}): Promise<Load> {
  const rows = await Promise.all(
    instances.map((instance, i) => load(`${name} (instance ${i + 1} of ${instances.length})`, instance.base + path, seconds, { ...options, token: instance.token, connections: CONNECTIONS / instances.length })),
  );
  return {
    name,
    requestsPerSecond: rows.reduce((sum, row) => sum + row.requestsPerSecond, 0),
    p50: Math.max(...rows.map((row) => row.p50)),
    p99: Math.max(...rows.map((row) => row.p99)),
    non2xx: rows.reduce((sum, row) => sum + row.non2xx, 0),
  };
}

/** Opens STREAMS_OPEN reply streams at a time, over the instances in turn, for `seconds`; streams ended per second and first-text latency. */
async function streams(instances: Instance[], seconds: number): Promise<Load> {
  const threads = await Promise.all(
    instances.map(async (instance) => {
      const reply = await fetch(`${instance.base}/v1/chat/threads`, { method: 'POST', headers: { authorization: `Bearer ${instance.token}`, 'content-type': 'application/json' }, body: '{}' });
      return ((await reply.json()) as { id: string }).id;
    }),
  );
  const firstTexts: number[] = [];
  let done = 0;
  let failed = 0;
  const until = performance.now() + seconds * 1000;
  const oneAfterAnother = async (slot: number) => {
    for (let n = 0; performance.now() < until; n++) {
      const i = (slot + n) % instances.length;
      const instance = instances[i]!;
      const begun = performance.now();
      const reply = await fetch(`${instance.base}/v1/chat/threads/${threads[i]}/messages/stream`, {
        method: 'POST',
        headers: { authorization: `Bearer ${instance.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'How many customers are active?' }),
      });
      if (reply.status !== 200 || !reply.body) {
        failed++;
        await reply.text();
        continue;
      }
      let first = true;
      let text = '';
      for await (const chunk of reply.body as unknown as AsyncIterable<Uint8Array>) {
        text += Buffer.from(chunk).toString();
        if (first && text.includes('"delta"')) {
          firstTexts.push(performance.now() - begun);
          first = false;
        }
      }
      if (text.includes('"type":"done"')) done++;
      else failed++;
    }
  };
  const begun = performance.now();
  await Promise.all(Array.from({ length: STREAMS_OPEN }, (_, slot) => oneAfterAnother(slot)));
  const row = { name: 'chat reply streams (40 open)', requestsPerSecond: done / ((performance.now() - begun) / 1000), p50: Math.round(percentile(firstTexts, 0.5)), p99: Math.round(percentile(firstTexts, 0.99)), non2xx: failed };
  log(`  ${row.name.padEnd(52)} ${row.requestsPerSecond.toFixed(1).padStart(6)} streams/s  first text p50 ${row.p50} ms  p99 ${row.p99} ms${failed ? `  (${failed} failed)` : ''}`);
  return row;
}

interface Measured {
  load: Load;
  cpu: Record<string, number>;
}

/** The three loads against these instances. */
async function measure(instances: Instance[], seconds: number): Promise<Measured[]> {
  log(`${instances.length} instance${instances.length > 1 ? 's' : ''}:`);
  const measured: Measured[] = [];
  const record = async (work: () => Promise<Load>) => {
    const { result, cpu } = await withCpu(instances, work);
    log(`    CPU (cores): ${Object.entries(cpu).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    measured.push({ load: result, cpu });
  };
  await record(() => spread('customers, default list', instances, seconds, '/v1/customers'));
  await record(() => spread('customers, search "smith" by amount', instances, seconds, '/v1/customers?search=smith&sort=totalAmountSpent&direction=desc'));
  // Every preview with a bound no request had before: counted afresh, not answered from the count cache.
  const preview = () => ({ conditions: [{ field: 'country', operator: 'eq', value: 'Germany' }, { field: 'totalAmountSpent', operator: 'gt', value: Math.round(Math.random() * 500_000) / 100 }] });
  await record(() => spread('segment preview, cold', instances, seconds, '/v1/segments/preview', { method: 'POST', bodies: preview }));
  await record(() => streams(instances, seconds));
  return measured;
}

export interface InstancesOptions {
  customers: number;
  seconds: number;
  /** Where the JSON goes. */
  out: string;
}

/**
 * Runs the one-and-two-instances bench on `server` (a database of its own, seeded with `customers`), writes the JSON
 * and resolves to the table as Markdown. `npm run bench -- --engine postgres` runs it as its last stage.
 */
export async function benchInstances(server: BenchServer, { customers, seconds, out }: InstancesOptions): Promise<string> {
  const running: Instance[] = [];
  let table = '';
  try {
    const url = await server.create('bench_instances');
    await ensureUserAt(url, ACCOUNT);
    log(`seeding ${customers.toLocaleString('en')} customers`);
    execFileSync(process.execPath, ['--import', 'tsx', 'scripts/seed.ts', '--customers', String(customers), '--database-url', url], { stdio: ['ignore', 'ignore', 'inherit'] });
    running.push(await startInstance(url, 1));
    const one = await measure(running, seconds);
    running.push(await startInstance(url, 2));
    const two = await measure(running, seconds);
    const rss = running.map((instance) => Math.round(rssMb(instance.pid, 'VmHWM')));
    const facts = await server.facts();
    const rows = one.map((single, i) => {
      const pair = two[i]!;
      return {
        load: single.load.name,
        one: Math.round(single.load.requestsPerSecond * 10) / 10,
        two: Math.round(pair.load.requestsPerSecond * 10) / 10,
        ratio: Math.round((pair.load.requestsPerSecond / single.load.requestsPerSecond) * 100) / 100,
        p99: [single.load.p99, pair.load.p99],
        failed: single.load.non2xx + pair.load.non2xx,
        cpuOne: single.cpu,
        cpuTwo: pair.cpu,
      };
    });
    table += `One and two instances on one PostgreSQL ${facts.version}, ${customers.toLocaleString('en')} customers, ${cpus().length} cores, ${seconds} s a load\n\n`;
    table += '| load | one instance /s | two instances /s | two / one | p99 ms (one, two) | CPU cores, one instance | CPU cores, two instances |\n|-|-|-|-|-|-|-|\n';
    const cores = (cpu: Record<string, number>) => Object.entries(cpu).map(([k, v]) => `${k} ${v}`).join(', ');
    for (const row of rows) {
      table += `| ${row.load} | ${row.one} | ${row.two} | ${row.ratio} | ${row.p99.join(', ')} | ${cores(row.cpuOne)} | ${cores(row.cpuTwo)} |\n`;
    }
    table += `\npeak RSS of each instance: ${rss.join(', ')} MB; failed requests: ${rows.reduce((sum, row) => sum + row.failed, 0)}\n`;
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({ customers, seconds, cores: cpus().length, postgres: facts, settings: BENCH_SETTINGS, rows, rssMb: rss }, null, 2)}\n`);
    log(`written to ${out}`);
    await server.drop('bench_instances');
  } finally {
    for (const instance of running) instance.stop();
  }
  return table;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: { customers: { type: 'string' }, seconds: { type: 'string' }, 'database-url': { type: 'string' }, out: { type: 'string' } },
  });
  const server = await benchServer(values['database-url']);
  try {
    const table = await benchInstances(server, { customers: Number(values.customers ?? 1_000_000), seconds: Number(values.seconds ?? 10), out: values.out ?? 'data/bench-instances.json' });
    process.stdout.write(`\n${table}`);
  } finally {
    await server.close();
  }
}
