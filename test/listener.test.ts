// The top of every request (src/http/listener.ts) when the database's connection resets: that is no client hanging
// up, whatever stage the request is at. Before its body is read (authentication reads the user first) a database
// reset was taken for the client leaving, and the connection was cut instead of answered (found in the failover test).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { createListener } from '../src/http/listener.ts';
import { createLogger } from '../src/http/logger.ts';

const servers: Server[] = [];
after(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

/** Serves `handle` through the listener on a free port; resolves to its URL. */
async function serve(handle: () => Promise<void>): Promise<string> {
  const server = createServer(createListener(handle, createLogger('silent'), new AbortController().signal, (req) => req.socket.remoteAddress ?? 'unknown'));
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A failure as postgres.js reports a reset of its connection to the database. */
const databaseReset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });

test('a database reset before the request body was read answers 503 unavailable with Retry-After, not a cut connection', async () => {
  const url = await serve(async () => {
    throw databaseReset();
  });
  const body = JSON.stringify({ name: 'x'.repeat(100_000) }); // more than one read: not yet read when the handler fails
  const response = await fetch(`${url}/v1/customers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  assert.equal(response.status, 503);
  assert.equal(response.headers.get('retry-after'), '2');
  assert.equal(((await response.json()) as { code: string }).code, 'unavailable');
});

test('a database reset on a request without a body answers the same', async () => {
  const url = await serve(async () => {
    throw databaseReset();
  });
  const response = await fetch(`${url}/v1/me`);
  assert.equal(response.status, 503);
  assert.equal(((await response.json()) as { code: string }).code, 'unavailable');
});
