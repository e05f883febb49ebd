// Slow and vanishing clients against the real service process, with its timeouts shortened through
// HEADERS_TIMEOUT_MS and REQUEST_TIMEOUT_MS: hundreds of connections trickling headers or a body one byte a second
// (and some saying nothing) must not slow a normal client, must be cut by the server within their timeout, and
// clients hanging up mid-request or mid-response must leave no socket behind.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { call, launchService, openSockets, signInAdmin, waitUntil, type ChildService } from './child-service.ts';
import { importBatch } from './import-batches.ts';

const HEADERS_MS = 2000;
const REQUEST_MS = 4000;
/** The server looks for expired requests once a second; on top of that, a margin for a busy machine. */
const CHECK_MS = 1000;
const MARGIN_MS = 1500;
const TRICKLING_HEADERS = 500;
const ENDLESS_BODIES = 50;
const SILENT = 50;

const dir = mkdtempSync(join(tmpdir(), 'campaigns-slow-'));
let service: ChildService;
let port = 0;
let token = '';
let baseline = 0;

before(async () => {
  service = await launchService({ DATABASE_PATH: join(dir, 'slow.db'), HEADERS_TIMEOUT_MS: String(HEADERS_MS), REQUEST_TIMEOUT_MS: String(REQUEST_MS) });
  port = Number(new URL(service.url).port);
  baseline = openSockets(service.pid); // no client yet: the listening socket and stdio
  token = await signInAdmin(service.url);
  const imported = await call(service.url, 'POST', '/v1/customers/import', { token, body: { customers: importBatch(1).rows }, close: true });
  assert.equal(imported.status, 200);
  await waitUntil(() => openSockets(service.pid) === baseline, 'the set-up requests closed their connections', 3000);
});
after(async () => {
  await service?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Connection {
  kind: 'headers' | 'body' | 'silent';
  socket: Socket;
  openedAt: number;
  /** Time from connect to close, once closed. */
  lifetime?: number;
  received: string;
  closed: Promise<void>;
}

/** Opens a connection and resolves once it is connected; it records what it receives and when it closes. */
function open(kind: Connection['kind']): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let closedResolve: () => void;
    const connection: Connection = { kind, socket, openedAt: 0, received: '', closed: new Promise((r) => (closedResolve = r)) };
    socket.on('data', (chunk: Buffer) => (connection.received += chunk.toString()));
    socket.on('error', () => {}); // a reset is a close too; the close event follows
    socket.once('close', () => {
      connection.lifetime = performance.now() - connection.openedAt;
      closedResolve();
    });
    socket.once('connect', () => {
      connection.openedAt = performance.now();
      resolve(connection);
    });
    socket.once('error', reject);
  });
}

/** The bytes each trickling connection sends, one a second; far more than the test lasts. */
function trickle(kind: Connection['kind']): string {
  if (kind === 'headers') return `GET /v1/customers/kpis HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nX-Padding: ${'a'.repeat(200)}`;
  if (kind === 'body') return `{"customers":[${JSON.stringify(importBatch(2).rows[0])}`;
  return '';
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

test(`${TRICKLING_HEADERS} slowloris connections, ${ENDLESS_BODIES} endless bodies and ${SILENT} silent ones: a normal client is served within a second, the slow ones are cut in time`, async () => {
  const connections: Connection[] = [];
  const kinds: Connection['kind'][] = [
    ...Array<Connection['kind']>(TRICKLING_HEADERS).fill('headers'),
    ...Array<Connection['kind']>(ENDLESS_BODIES).fill('body'),
    ...Array<Connection['kind']>(SILENT).fill('silent'),
  ];
  // In groups, so the listen backlog never overflows into SYN retries.
  for (let at = 0; at < kinds.length; at += 100) connections.push(...(await Promise.all(kinds.slice(at, at + 100).map(open))));
  const sent = new Map<Connection, number>();
  const texts = { headers: trickle('headers'), body: trickle('body'), silent: '' };
  const tick = () => {
    for (const c of connections) {
      if (c.socket.destroyed || c.kind === 'silent') continue;
      const text = texts[c.kind];
      const at = sent.get(c) ?? 0;
      if (at < text.length) c.socket.write(text[at]!);
      sent.set(c, at + 1);
    }
  };
  // An endless body is announced in full headers at once; the body then trickles.
  for (const c of connections) {
    if (c.kind === 'body') {
      c.socket.write(
        `POST /v1/customers/import HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n',
      );
    }
  }
  tick(); // the first byte at once, so a connection's timeout starts when it opens
  const ticker = setInterval(tick, 1000);
  const allClosed = Promise.all(connections.map((c) => c.closed));
  let done = false;
  void allClosed.then(() => (done = true));

  try {
    await waitUntil(() => openSockets(service.pid) >= baseline + connections.length, `the service holds all ${connections.length} connections`, 5000);

    // A normal client meanwhile: fresh connections each time, so it queues behind nothing of its own.
    const latencies: { health: number[]; kpis: number[] } = { health: [], kpis: [] };
    for (let i = 0; i < 200 && !done; i++) {
      for (const [name, path] of [['health', '/health'], ['kpis', '/v1/customers/kpis']] as const) {
        const started = performance.now();
        const reply = await call(service.url, 'GET', path, { token, close: true, timeoutMs: 5000 });
        latencies[name].push(performance.now() - started);
        assert.equal(reply.status, 200);
      }
      await new Promise((resolve) => setTimeout(resolve, 50)); // a pace for the probe, not a wait for an event
    }
    await Promise.race([allClosed, new Promise((_, reject) => setTimeout(() => reject(new Error('slow connections still open')), REQUEST_MS + CHECK_MS + MARGIN_MS + 2000))]);

    const report = (name: 'health' | 'kpis') =>
      `${name} p50 ${percentile(latencies[name], 50).toFixed(1)} ms, max ${Math.max(...latencies[name]).toFixed(1)} ms over ${latencies[name].length}`;
    process.stderr.write(`# while slow clients were open: ${report('health')}; ${report('kpis')}\n`);
    assert.ok(latencies.health.length >= 10, 'the normal client was measured while the slow connections were open');
    assert.ok(Math.max(...latencies.health) < 1000, report('health'));
    assert.ok(Math.max(...latencies.kpis) < 1000, report('kpis'));

    for (const [kind, limit] of [['headers', HEADERS_MS], ['body', REQUEST_MS], ['silent', HEADERS_MS]] as const) {
      const group = connections.filter((c) => c.kind === kind);
      const lifetimes = group.map((c) => c.lifetime!);
      process.stderr.write(`# ${kind}: ${group.length} cut after ${Math.round(Math.min(...lifetimes))}-${Math.round(Math.max(...lifetimes))} ms (limit ${limit} ms)\n`);
      for (const c of group) {
        assert.match(c.received, /^HTTP\/1\.1 408 Request Timeout\r\n/, `a ${kind} connection is answered 408`);
        assert.ok(c.lifetime! >= limit - 50, `a ${kind} connection lived ${Math.round(c.lifetime!)} ms: not cut before its ${limit} ms`);
        assert.ok(c.lifetime! <= limit + CHECK_MS + MARGIN_MS, `a ${kind} connection lived ${Math.round(c.lifetime!)} ms: cut within ${limit} ms + ${CHECK_MS + MARGIN_MS}`);
      }
    }
    await waitUntil(() => openSockets(service.pid) === baseline, `the service's sockets are back to ${baseline} (now ${openSockets(service.pid)})`, 3000);
  } finally {
    clearInterval(ticker);
    for (const c of connections) c.socket.destroy();
  }
});

test('clients hanging up mid-response, mid-request or while the handler runs leave no socket behind and no error', async () => {
  const problemsBefore = service.log.problems.length;
  const hangUps: Promise<void>[] = [];
  const send = async (request: string, when: 'written' | 'first-data') => {
    const c = await open('silent');
    if (when === 'first-data') {
      c.socket.once('data', () => {
        c.socket.pause();
        c.socket.destroy();
      });
      c.socket.write(request);
    } else {
      c.socket.write(request, () => c.socket.destroy());
    }
    hangUps.push(c.closed);
  };
  const auth = `Authorization: Bearer ${token}\r\n`;
  const json = 'Content-Type: application/json\r\n';
  const signIn = JSON.stringify({ email: 'admin@example.com', password: 'stress-admin-password' });
  for (let i = 0; i < 20; i++) {
    // 40 pipelined 95 KB documents: the service is still writing (and held up by a full socket buffer) when the client goes.
    await send('GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(40), 'first-data');
    await send(`GET /v1/customers?limit=200 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 'first-data');
    // Gone while scrypt runs, while the body is half sent, while the import is parsed.
    await send(`POST /v1/auth/sign-in HTTP/1.1\r\nHost: x\r\n${json}Content-Length: ${signIn.length}\r\n\r\n${signIn}`, 'written');
    await send(`POST /v1/customers/import HTTP/1.1\r\nHost: x\r\n${auth}${json}Content-Length: 5000\r\n\r\n{"customers":[`, 'written');
    const batch = JSON.stringify({ customers: importBatch(100 + i).rows });
    await send(`POST /v1/customers/import HTTP/1.1\r\nHost: x\r\n${auth}${json}Content-Length: ${Buffer.byteLength(batch)}\r\n\r\n${batch}`, 'written');
  }
  await Promise.all(hangUps);
  await waitUntil(() => openSockets(service.pid) === baseline, `the service's sockets are back to ${baseline} (now ${openSockets(service.pid)})`, 5000);
  const health = await call(service.url, 'GET', '/health', { close: true });
  assert.equal(health.status, 200);
  await waitUntil(() => openSockets(service.pid) === baseline, 'the last probe closed', 2000);
  assert.deepEqual(service.log.problems.slice(problemsBefore), [], 'no warning or error logged');
  process.stderr.write(`# hang-ups: ${hangUps.length}; request log statuses ${JSON.stringify([...service.log.statuses])}\n`);
});

test('a request that reaches a kept-alive connection while the event loop is busy past the keep-alive time is answered, not reset', async () => {
  // In process, so the test can block the service's event loop the way a long run of large imports does.
  const { startService } = await import('../../src/server.ts');
  const { loadConfig } = await import('../../src/config.ts');
  const inProcess = await startService(loadConfig({ DATABASE_PATH: join(dir, 'keep-alive.db'), LOG_LEVEL: 'silent', ADMIN_PASSWORD: 'keep-alive-password' }));
  const KEEP_ALIVE_MS = 100;
  const NODE_KEEP_ALIVE_BUFFER_MS = 1000; // node:http waits this much longer than keepAliveTimeout (Node 20.19+)
  inProcess.server.keepAliveTimeout = KEEP_ALIVE_MS; // the property node:http reads after each answer
  try {
    const c = await new Promise<Socket>((resolve) => {
      const socket = connect(Number(new URL(inProcess.url).port), '127.0.0.1', () => resolve(socket));
    });
    let received = '';
    let closed = false;
    let second = false;
    const probe = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n';
    const answers = (n: number) => (received.match(/HTTP\/1\.1 200 OK/g) ?? []).length >= n && received.endsWith('{"status":"ok"}');
    c.on('data', (chunk: Buffer) => {
      received += chunk.toString();
      if (second || !answers(1)) return;
      second = true;
      // The first answer is in and the keep-alive timer runs. The second request reaches the kernel at once; then,
      // inside this I/O callback as inside a large import, the loop stays busy past the keep-alive time. The timer is
      // due before the loop comes back to read the request.
      c.write(probe);
      const busyUntil = performance.now() + KEEP_ALIVE_MS + NODE_KEEP_ALIVE_BUFFER_MS + 500;
      while (performance.now() < busyUntil) {
        // synchronous work
      }
    });
    c.on('error', () => {});
    c.on('close', () => (closed = true));
    c.write(probe);
    await waitUntil(() => answers(2) || closed, 'the second answer or a close', 3000, 5);
    assert.ok(answers(2), `the request was answered, not dropped with the connection (received ${JSON.stringify(received.slice(-80))})`);
    c.destroy();
  } finally {
    await inProcess.stop(100);
  }
});
