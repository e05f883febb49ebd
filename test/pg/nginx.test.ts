// Two real instances of the service on one PostgreSQL database behind a real nginx (Debian's, issue 35) running the
// site configuration the README shows (its nginx code block): requests are spread round robin, a client signs in
// and reads through it, the console's files pass through it, a chat reply streams through it as it is written (not
// held back by the proxy), and a CSV upload as large as IMPORT_MAX_BYTES passes while a larger one does not.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { ADMIN_EMAIL, ADMIN_PASSWORD, call } from '../stress/child-service.ts';
import { DEPLOYMENT, README_FILE, readmeSiteConfig, siteConfig, startCluster, type Cluster } from '../support/cluster.ts';
import { openAiEnvFor, startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { openSse } from '../support/sse-client.ts';

/** IMPORT_MAX_BYTES of the instances, and so nginx's client_max_body_size: above nginx's own default of 1 MiB. */
const MAX_BODY = 3 * 1024 * 1024;
/** The wait between the two pieces of the streamed reply: a proxy that held the reply back would hold the first this long. */
const PIECE_GAP_MS = 2_500;

let cluster: Cluster;
let fake: FakeProvider;
let proxy: string;
let token: string;

before(async () => {
  fake = await startFakeProvider();
  cluster = await startCluster({
    instances: 2,
    withSchema: true,
    proxy: true,
    env: {
      ...openAiEnvFor(fake),
      ACCESS_TOKEN_TTL: '86400',
      IMPORT_MAX_BYTES: String(MAX_BODY),
    },
  });
  proxy = cluster.proxy!.url;
  const session = await call(proxy, 'POST', '/v1/auth/sign-in', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
  assert.equal(session.status, 200, JSON.stringify(session.body));
  token = session.body.accessToken;
});

after(async () => {
  await cluster?.stop();
  await fake?.close();
});

/** Sends a request through nginx; resolves with its answer and the index of the instance that served it. */
async function through(method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(proxy + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  const traceId = response.headers.get('x-trace-id');
  assert.ok(traceId, `no x-trace-id: the answer to ${method} ${path} did not come from the service: ${response.status} ${text}`);
  return { status: response.status, headers: response.headers, text, instance: await cluster.servedBy(traceId) };
}

test('the README\'s nginx configuration is the one these tests run, with the deployment\'s addresses', () => {
  assert.equal(readmeSiteConfig(readFileSync(README_FILE, 'utf8')), siteConfig(DEPLOYMENT), "write siteConfig(DEPLOYMENT) of test/support/cluster.ts into the README's nginx code block");
});

test('requests through nginx are spread round robin: consecutive requests go to the instances in turn', async () => {
  const served: number[] = [];
  for (let i = 0; i < 8; i++) {
    const reply = await through('GET', '/health');
    assert.equal(reply.status, 200, reply.text);
    served.push(reply.instance);
  }
  assert.deepEqual(served.filter((index) => index === 0).length, 4, served.join(','));
  for (let i = 1; i < served.length; i++) assert.notEqual(served[i], served[i - 1], `two in a row on one instance: ${served.join(',')}`);
});

test('through nginx a client signs in, writes on one instance and reads it back on the other', async () => {
  const me = await through('GET', '/v1/me');
  assert.equal(me.status, 200, me.text);
  assert.equal(JSON.parse(me.text).email, ADMIN_EMAIL);
  const customer = { name: 'Proxied Customer', email: 'proxied@shop.example.com', country: 'Proxyland', totalTransactions: 2, totalAmountSpent: 80, lastActivityDate: new Date().toISOString().slice(0, 10), status: 'active' };
  const created = await through('POST', '/v1/customers', { body: customer });
  assert.equal(created.status, 200, created.text);
  const id = JSON.parse(created.text).id as string;
  // Round robin: the next two requests are served by both instances, the writer and the other one.
  const reads = [await through('GET', `/v1/customers/${id}`), await through('GET', `/v1/customers?search=${encodeURIComponent('Proxied Customer')}`)];
  assert.deepEqual(new Set(reads.map((r) => r.instance)).size, 2);
  assert.equal(reads[0]!.status, 200, reads[0]!.text);
  assert.equal(JSON.parse(reads[0]!.text).email, customer.email);
  assert.equal(reads[1]!.status, 200, reads[1]!.text);
  assert.deepEqual(JSON.parse(reads[1]!.text).items.map((c: { id: string }) => c.id), [id]);
});

test('behind nginx (TRUSTED_PROXIES) the sign-in limit counts per client: one client locked out, another not, whichever instance answers', async () => {
  const email = `proxied.${Date.now()}@instances.example.com`;
  const created = await through('POST', '/v1/users', { body: { email, fullName: 'Proxied', role: 'lifecycle_marketer', password: 'proxied-password-1' } });
  assert.equal(created.status, 200, created.text);
  // What nginx forwards is what the client said plus the address nginx saw (127.0.0.1, trusted): the service takes
  // the client's own address from the left of it. The failures spread over both instances, counted together.
  const signIn = (client: string, password: string) => through('POST', '/v1/auth/sign-in', { body: { email, password }, headers: { 'x-forwarded-for': client } });
  const failures = [];
  for (let i = 0; i < 8; i++) failures.push(await signIn('203.0.113.7', 'not the password'));
  assert.deepEqual(failures.map((f) => f.status), Array(8).fill(401));
  assert.deepEqual(new Set(failures.map((f) => f.instance)), new Set([0, 1]), 'the failures went to both instances');
  const locked = await signIn('203.0.113.7', 'proxied-password-1');
  assert.equal(locked.status, 429, locked.text);
  const other = await signIn('203.0.113.8', 'proxied-password-1');
  assert.equal(other.status, 200, other.text);
});

test('the console\'s page and its script pass through nginx unchanged', async () => {
  const page = await fetch(`${proxy}/`, { headers: { accept: 'text/html' } });
  const html = await page.text();
  assert.equal(page.status, 200, html);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  const script = /<script[^>]*\bsrc="([^"]+)"/.exec(html)?.[1];
  assert.ok(script, 'the page loads no script');
  const viaProxy = await fetch(proxy + script);
  const direct = await fetch(cluster.instances[0]!.url + script);
  assert.equal(viaProxy.status, 200);
  assert.match(viaProxy.headers.get('content-type') ?? '', /javascript/);
  const body = await viaProxy.text();
  assert.ok(body.length > 0);
  assert.equal(body, await direct.text());
});

test('a chat reply streams through nginx as it is written: its first piece arrives before the provider sends the next', { timeout: 20_000 }, async () => {
  const thread = await through('POST', '/v1/chat/threads', { body: {} });
  assert.equal(thread.status, 200, thread.text);
  fake.enqueue({ pieces: ['First piece. ', 'Second piece.'], intervalMs: PIECE_GAP_MS });
  const requestsBefore = fake.requests.length;
  const stream = await openSse(`${proxy}/v1/chat/threads/${JSON.parse(thread.text).id}/messages/stream`, { token, body: { content: 'How are we doing?' } });
  assert.equal(stream.status, 200, JSON.stringify(stream.body));
  assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
  assert.equal((await stream.nextEvent()).type, 'start');
  assert.deepEqual(await stream.nextEvent(), { type: 'delta', text: 'First piece. ' });
  const firstArrived = Date.now();
  const asked = fake.requests[requestsBefore];
  assert.ok(asked, 'the provider was not asked');
  // The provider writes the second piece PIECE_GAP_MS after it was asked: a proxy that buffered would have held the
  // first until then (or until the end of the reply).
  assert.ok(firstArrived < asked.startedAt + PIECE_GAP_MS, `the first piece arrived ${firstArrived - asked.startedAt} ms after the provider was asked`);
  const rest = await stream.rest();
  assert.deepEqual(rest.map((frame) => frame.type), ['delta', 'done']);
  assert.deepEqual(rest[0], { type: 'delta', text: 'Second piece.' });
  assert.equal(rest[1].assistantMessage.content, 'First piece. Second piece.');
});

test('a CSV upload of IMPORT_MAX_BYTES passes nginx (above its default limit of 1 MiB); one byte more is 413', { timeout: 30_000 }, async () => {
  const header = 'name,email,country,total_transactions,total_amount_spent,last_activity_date,status\n';
  const row = (i: number, name = `Upload Customer ${i}`) => `${name},upload.${i}@shop.example.com,Uploadland,1,10.00,2026-01-15,active\n`;
  let csv = header;
  let i = 0;
  for (; csv.length + 2 * row(i).length < MAX_BODY; i++) csv += row(i);
  // The last row's name is padded (to under 200 characters) so that the file is exactly MAX_BODY bytes.
  const rest = MAX_BODY - csv.length - row(i, '').length;
  csv += row(i, 'U'.repeat(rest));
  assert.equal(Buffer.byteLength(csv), MAX_BODY);
  const send = (body: string) =>
    fetch(`${proxy}/v1/customers/imports?fileName=upload.csv`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
      body,
      signal: AbortSignal.timeout(20_000),
    });
  const accepted = await send(csv);
  if (accepted.status !== 202) {
    // The instance logs the cause of a 5xx before the request's own line: waited for, it is in the report.
    await cluster.servedBy(accepted.headers.get('x-trace-id') ?? '').catch(() => {});
    assert.fail(`${accepted.status}: ${await accepted.text()}\n${cluster.problems().join('\n')}`);
  }
  const refused = await send(`${csv}x`);
  assert.equal(refused.status, 413);
  await refused.text();
});
