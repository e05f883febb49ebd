// The service as a process: what `npm start` prints, configuration errors, graceful shutdown.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

const dir = mkdtempSync(join(tmpdir(), 'campaigns-process-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Started {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stderr: () => string;
  stdout: () => string;
  exited: Promise<number | null>;
}

function launch(env: Record<string, string>): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['scripts/start.js'], { env: { ...process.env, LOG_LEVEL: 'info', ...env } });
}

/** Starts the service as `npm start` does, on a free port, and waits for its "listening" log line. */
async function start(env: Record<string, string>): Promise<Started> {
  const child = launch({ PORT: '0', ...env });
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /"msg":"listening","url":"([^"]+)"/.exec(out);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`exited with ${code}: ${err}`)));
  });
  return { child, url, stderr: () => err, stdout: () => out, exited };
}

test('first start prints the generated admin password once, and it signs in', async () => {
  const service = await start({ DATABASE_PATH: join(dir, 'first.db') });
  try {
    const match = /Sign in as (admin@example\.com) with password (\S+) \(shown only this once\)/.exec(service.stderr());
    assert.ok(match, service.stderr());
    const reply = await fetch(`${service.url}/v1/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: match[1], password: match[2] }),
    });
    assert.equal(reply.status, 200);
    assert.equal(((await reply.json()) as { user: { role: string } }).user.role, 'admin');
  } finally {
    service.child.kill('SIGTERM');
    await service.exited;
  }
  const again = await start({ DATABASE_PATH: join(dir, 'first.db') });
  again.child.kill('SIGTERM');
  assert.equal(await again.exited, 0);
  assert.doesNotMatch(again.stderr(), /Created the first admin/);
});

test('a bad configuration value stops the process with a message naming the variable', async () => {
  const child = launch({ DATABASE_PATH: join(dir, 'bad.db'), PORT: 'abc' });
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 2);
  assert.match(err, /Configuration error: PORT: /);
});

test('SIGTERM lets a request in flight finish, then the process exits 0 and stops listening', async () => {
  const service = await start({ DATABASE_PATH: join(dir, 'term.db'), ADMIN_PASSWORD: 'a-long-password' });
  // Sign-in takes a few hundred milliseconds of scrypt: long enough to be in flight when the signal arrives.
  const inFlight = fetch(`${service.url}/v1/auth/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ email: 'admin@example.com', password: 'a-long-password' }),
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  service.child.kill('SIGTERM');
  const reply = await inFlight;
  assert.equal(reply.status, 200);
  assert.equal(await service.exited, 0);
  await assert.rejects(fetch(`${service.url}/health`));
});

test('from the first moment /health answers 200 the first admin signs in; before it, connections are refused or 503', async () => {
  const { port, release } = await occupyPort();
  await release(); // free again, and known before the process starts, so /health can be asked from its first moment
  const child = launch({ DATABASE_PATH: join(dir, 'ready.db'), PORT: String(port), ADMIN_EMAIL: 'ready@example.com', ADMIN_PASSWORD: 'ready-admin-password' });
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let running = true;
  void exited.then(() => (running = false));
  const url = `http://127.0.0.1:${port}`;
  try {
    const deadline = performance.now() + 30_000;
    let refused = 0;
    for (;;) {
      assert.ok(running, `the process exited before /health answered 200: ${err}`);
      assert.ok(performance.now() < deadline, 'no 200 from /health within 30 s');
      let health: Response;
      try {
        health = await fetch(`${url}/health`);
      } catch (error) {
        assert.equal((error as { cause?: { code?: string } }).cause?.code, 'ECONNREFUSED', String(error));
        refused++;
        continue;
      }
      await health.arrayBuffer();
      if (health.status === 200) break;
      assert.equal(health.status, 503, 'before it is ready the service answers nothing but 503');
      assert.match(health.headers.get('retry-after') ?? '', /^\d+$/);
    }
    assert.ok(refused > 0, 'the poll began before the service listened');
    const signIn = await fetch(`${url}/v1/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'ready@example.com', password: 'ready-admin-password' }),
    });
    assert.equal(signIn.status, 200, await signIn.clone().text());
    assert.equal(((await signIn.json()) as { user: { role: string } }).user.role, 'admin');
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});

/** Holds a port on 127.0.0.1 until released. */
async function occupyPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const { createServer } = await import('node:net');
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  return { port, release: () => new Promise<void>((resolve) => blocker.close(() => resolve())) };
}

async function runToExit(command: string[], env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, command, { env: { ...process.env, LOG_LEVEL: 'info', ...env } });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.resume();
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stderr };
}

test('a busy port stops npm start with one line naming PORT, exit 2, and no first admin created', async () => {
  const busy = await occupyPort();
  try {
    const database = join(dir, 'busy.db');
    const { code, stderr } = await runToExit(['scripts/start.js'], { DATABASE_PATH: database, PORT: String(busy.port) });
    assert.equal(code, 2);
    assert.equal(stderr.trim(), `Configuration error: PORT: port ${busy.port} on 127.0.0.1 is already in use; set PORT to a free port`);
    const { openDatabase } = await import('../src/db/database.ts');
    const db = openDatabase(database);
    try {
      assert.equal((db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n, 0);
    } finally {
      db.close();
    }
  } finally {
    await busy.release();
  }
});

test('a busy port stops npm run demo the same way', async () => {
  const busy = await occupyPort();
  try {
    const { code, stderr } = await runToExit(['--import', 'tsx', 'scripts/demo.ts'], { DEMO_DATABASE_PATH: join(dir, 'demo.db'), PORT: String(busy.port) });
    assert.equal(code, 2);
    assert.match(stderr, new RegExp(`^Configuration error: PORT: port ${busy.port} on 127\\.0\\.0\\.1 is already in use; set PORT to a free port\\n$`));
  } finally {
    await busy.release();
  }
});

test('the start-up log line names the model provider and model, never the key', async () => {
  const service = await start({
    DATABASE_PATH: join(dir, 'provider.db'),
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: 'http://user:hunter2@127.0.0.1:9/v1',
    LLM_MODEL: 'gpt-test-mini',
    LLM_API_KEY: 'sk-very-secret-key',
  });
  service.child.kill('SIGTERM');
  await service.exited;
  const listening = JSON.parse(service.stdout().split('\n').find((line) => line.includes('"msg":"listening"'))!) as Record<string, unknown>;
  assert.equal(listening.llmProvider, 'openai');
  assert.equal(listening.llmModel, 'gpt-test-mini');
  assert.equal(listening.llmBaseUrl, 'http://127.0.0.1:9/v1');
  assert.doesNotMatch(service.stdout() + service.stderr(), /sk-very-secret-key|hunter2/);
});

test('npm start runs the service built into one module: its console, schema and import threads resolve beside the sources, and the threads are built too', async () => {
  const service = await start({ DATABASE_PATH: join(dir, 'built.db'), ADMIN_PASSWORD: 'built-admin-password' });
  try {
    const page = await fetch(`${service.url}/`, { headers: { accept: 'text/html' } });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);
    const signIn = await fetch(`${service.url}/v1/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@example.com', password: 'built-admin-password' }),
    });
    const { accessToken } = (await signIn.json()) as { accessToken: string };
    const auth = { authorization: `Bearer ${accessToken}` };
    const csv = 'email,name,country,total_amount_spent,total_transactions,last_activity_date,status\nada@example.com,Ada,Norway,10.50,2,2026-01-02,active\n';
    const accepted = await fetch(`${service.url}/v1/customers/imports`, { method: 'POST', headers: { ...auth, 'content-type': 'text/csv' }, body: csv });
    assert.equal(accepted.status, 202);
    const { id } = (await accepted.json()) as { id: string };
    let job: { status: string; imported: number };
    // Another process: its job's end shows only in its answers.
    do job = (await (await fetch(`${service.url}/v1/customers/imports/${id}`, { headers: auth })).json()) as typeof job;
    while (job.status === 'running');
    assert.deepEqual({ status: job.status, imported: job.imported }, { status: 'completed', imported: 1 });
    // Neither the service nor the job's threads (writer, parser) fell back to tsx's loader.
    assert.doesNotMatch(service.stderr(), /Could not build/);
  } finally {
    service.child.kill('SIGTERM');
    await service.exited;
  }
});
