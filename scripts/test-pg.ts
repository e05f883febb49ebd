// `npm run test:pg [-- options] [files]`: starts a throwaway PostgreSQL (postgres-cluster.ts), runs against it the
// tests of test/pg/ and the HTTP suite of test/ (or the files given), and stops it, whatever the tests did. The tests
// find the server in TEST_DATABASE_URL; test/helpers.ts then starts every service on a fresh database of its own.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { PostgresEngine } from '../src/db/pg-engine.ts';
import { migratePostgres } from '../src/db/postgres/migrate.ts';
import { startPostgres } from './postgres-cluster.ts';

/** The database with the service's schema that the tests' databases are copied from (test/support/postgres.ts). */
const TEMPLATE = 'campaigns_template';

/** Creates the template database and its schema; nothing stays connected to it, so it can be copied. */
async function createTemplate(url: string): Promise<void> {
  const server = postgres(url, { max: 1, onnotice: () => {} });
  await server.unsafe(`CREATE DATABASE ${TEMPLATE}`).finally(() => server.end());
  const at = new URL(url);
  at.pathname = `/${TEMPLATE}`;
  const engine = new PostgresEngine(at.href);
  await migratePostgres(engine).finally(() => engine.close());
}

const DIR = 'test/pg';
/**
 * Files of test/ that do not run on PostgreSQL: they test SQLite itself (its files, backups, connection, in-process
 * change feed and leadership, import writer and bulk load), or nothing stored at all (configuration, parsing,
 * in-memory structures, the model layer). Every other file speaks HTTP to the service and runs, whole, on both
 * engines: a test that looks inside SQLite belongs in one of these files, not in a file of both.
 */
const NOT_ON_POSTGRES = new Set([
  'backup', 'change-source', 'config', 'customers-boundary', 'database', 'engine', 'import-writer', 'key-queue', 'leadership', 'listener', 'llm',
  'process', 'process-state', 'provider-check', 'segment-words', 'sse',
]);

/** The test files run by default: test/pg/ and the HTTP suite. */
function defaultFiles(): string[] {
  const inDir = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.test.ts')).sort();
  const http = inDir('test').filter((f) => !NOT_ON_POSTGRES.has(f.replace(/\.test\.ts$/, '')));
  return [...inDir(DIR).map((f) => join(DIR, f)), ...http.map((f) => join('test', f))];
}

async function main(): Promise<void> {
  // Options (`--test-name-pattern=...`) go to node's test runner; files, when given, replace those of test/pg/.
  const options = process.argv.slice(2).filter((a) => a.startsWith('--'));
  const given = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const files = given.length > 0 ? given : defaultFiles();
  const started = performance.now();
  // Each service of the HTTP suite holds a pool of its own, and two files run at once.
  const cluster = await startPostgres({ max_connections: 400 });
  process.stderr.write(`PostgreSQL started on port ${cluster.port} in ${Math.round(performance.now() - started)} ms\n`);
  let code = 1;
  try {
    await createTemplate(cluster.url);
    const tests = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...options, ...files], {
      stdio: 'inherit',
      env: { ...process.env, TEST_DATABASE_URL: cluster.url, TEST_TEMPLATE_DATABASE: TEMPLATE },
    });
    code = await new Promise<number>((resolve) => tests.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0))));
  } finally {
    await cluster.stop();
  }
  process.exitCode = code;
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
