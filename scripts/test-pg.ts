// `npm run test:pg [-- options] [files]`: starts a throwaway PostgreSQL (postgres-cluster.ts), runs the tests of
// test/pg/ against it (or the files given), and stops it, whatever the tests did. The tests find the server in TEST_DATABASE_URL.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startPostgres } from './postgres-cluster.ts';

const DIR = 'test/pg';

async function main(): Promise<void> {
  // Options (`--test-name-pattern=...`) go to node's test runner; files, when given, replace those of test/pg/.
  const options = process.argv.slice(2).filter((a) => a.startsWith('--'));
  const given = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const files = given.length > 0 ? given : readdirSync(DIR).filter((f) => f.endsWith('.test.ts')).sort().map((f) => join(DIR, f));
  const started = performance.now();
  const cluster = await startPostgres();
  process.stderr.write(`PostgreSQL started on port ${cluster.port} in ${Math.round(performance.now() - started)} ms\n`);
  let code = 1;
  try {
    const tests = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...options, ...files], {
      stdio: 'inherit',
      env: { ...process.env, TEST_DATABASE_URL: cluster.url },
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
