// Several real instances of the service (`npm start` processes) on one PostgreSQL database answer any request as one
// instance would (product.md section 13, "Several instances on one database"; issue 35): one test per point of that
// list, against three instances A, B and C started at once on an empty database, with the fake model provider.
// Waits are on events (answers, log lines, the receiver's requests, NOTIFY from a trigger this file adds); the one
// polled wait is the rule "visible through every other instance within 1 second", which is itself a deadline.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import postgres from 'postgres';
import { ADMIN_EMAIL, ADMIN_PASSWORD, spawnScript, type ChildService } from '../stress/child-service.ts';
import { briefFor, copyReply, GOOD_COPY } from '../support/campaigns.ts';
import { startCluster, type Cluster } from '../support/cluster.ts';
import { openAiEnvFor, startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { openSse } from '../support/sse-client.ts';
import { startWebhookReceiver, type ReceivedRequest } from '../support/webhook-receiver.ts';
import { money } from '../../src/chat/wording.ts';

const PASSWORD = 'instances-test-password';
/** Small limits, so that counting them across instances shows within a few requests (each test has users of its own). */
const SIGN_IN_MAX_FAILURES = 4;
const MODEL_CALLS_PER_MINUTE = 4;
/** "Within 1 second" (section 13), and how often the other instances are asked meanwhile. */
const VISIBLE_WITHIN_MS = 1_000;
const POLL_MS = 25;
/** The file of the job whose instance is killed: long enough to be killed well before its end. */
const KILLED_ROWS = 50_000;
/** A job whose instance was killed is settled by another within this long (section 13). */
const SETTLED_WITHIN_MS = 30_000;

let cluster: Cluster;
let fake: FakeProvider;
/** A connection of the test's own to the cluster's database: the jobs' notifications, and counting rows. */
let sql: postgres.Sql;
let adminToken: string;
let userCounter = 0;

/** The base URL of instance `i` (0 is A). */
const at = (i: number) => cluster.instances[i]!.url;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

/** One request with a JSON body (or a raw text body) and a bearer token, bounded in time. */
async function request(base: string, method: string, path: string, options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(base + path, {
    method,
    headers,
    body: options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: response.status, headers: response.headers, text, body };
}

/** Asserts a problem answer with this status and code. */
function assertProblem(answer: Answer, status: number, code: string, where = ''): void {
  assert.equal(answer.status, status, `${where} ${answer.text}`);
  assert.equal(answer.body?.code, code, `${where} ${answer.text}`);
}

function signIn(base: string, email: string, password = PASSWORD): Promise<Answer> {
  return request(base, 'POST', '/v1/auth/sign-in', { body: { email, password } });
}

/** Creates a user through A (as the first admin) and signs them in on instance `on`; returns their id, email and session. */
async function newUser(role: 'marketing_lead' | 'lifecycle_marketer' | 'admin' = 'lifecycle_marketer', on = 0) {
  const email = `user${++userCounter}.${Date.now()}@instances.example.com`;
  const created = await request(at(0), 'POST', '/v1/users', { token: adminToken, body: { email, fullName: `User ${userCounter}`, role, password: PASSWORD } });
  assert.equal(created.status, 200, created.text);
  const session = await signIn(at(on), email);
  assert.equal(session.status, 200, session.text);
  return { id: created.body.id as string, email, token: session.body.accessToken as string, refreshToken: session.body.refreshToken as string };
}

before(async () => {
  fake = await startFakeProvider();
  // Campaign copy is asked for as JSON (a response format); every other request (chat) gets text.
  fake.respond = (recorded) => (recorded.body?.response_format ? copyReply(GOOD_COPY) : undefined);
  cluster = await startCluster({
    instances: 3,
    withSchema: true, // an empty database has a test of its own below
    env: {
      ...openAiEnvFor(fake),
      ACCESS_TOKEN_TTL: '86400',
      SIGN_IN_MAX_FAILURES: String(SIGN_IN_MAX_FAILURES),
      MODEL_CALLS_PER_MINUTE: String(MODEL_CALLS_PER_MINUTE),
      CHAT_STREAMS_PER_USER: '1',
    },
  });
  sql = postgres(cluster.databaseUrl, { max: 2, onnotice: () => {} });
  const admin = await signIn(at(0), ADMIN_EMAIL, ADMIN_PASSWORD);
  assert.equal(admin.status, 200, admin.text);
  adminToken = admin.body.accessToken;
});

after(async () => {
  await sql?.end();
  await cluster?.stop();
  await fake?.close();
});

describe('accounts', () => {
  test('a token from one instance is accepted by all', async () => {
    const user = await newUser('lifecycle_marketer', 0);
    for (const i of [0, 1, 2]) {
      const me = await request(at(i), 'GET', '/v1/me', { token: user.token });
      assert.equal(me.status, 200, `instance ${i}: ${me.text}`);
      assert.equal(me.body.id, user.id);
    }
  });

  test('a refresh token exchanged on two instances at once: one 200, the other 401 session_expired, and the family revoked', async () => {
    const user = await newUser('lifecycle_marketer', 0);
    const [onB, onC] = await Promise.all([1, 2].map((i) => request(at(i), 'POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } })));
    const replies = [onB!, onC!];
    const won = replies.filter((r) => r.status === 200);
    assert.equal(won.length, 1, replies.map((r) => `${r.status} ${r.text}`).join(' | '));
    assertProblem(replies.find((r) => r.status !== 200)!, 401, 'session_expired');
    // The loser presented a token already exchanged: the whole family ends, the winner's new token with it.
    for (const i of [0, 1, 2]) {
      assertProblem(await request(at(i), 'POST', '/v1/auth/refresh', { body: { refreshToken: won[0]!.body.refreshToken } }), 401, 'session_expired', `instance ${i}`);
    }
  });

  test('deactivating a user through one instance stops their access token on every other at once', async () => {
    const user = await newUser('lifecycle_marketer', 0);
    assert.equal((await request(at(1), 'GET', '/v1/me', { token: user.token })).status, 200);
    const deactivated = await request(at(0), 'PATCH', `/v1/users/${user.id}`, { token: adminToken, body: { isActive: false } });
    assert.equal(deactivated.status, 200, deactivated.text);
    for (const i of [1, 2]) assertProblem(await request(at(i), 'GET', '/v1/me', { token: user.token }), 401, 'unauthenticated', `instance ${i}`);
    assertProblem(await request(at(2), 'POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } }), 401, 'session_expired');
  });
});

/**
 * The reads a customer write must reach: each names a request and returns the part of its answer compared. (The
 * segment list is not one: it shows the count stored when each segment was last saved or read, by design.)
 */
function customerReads(segmentId: string, conditions: unknown[], marker: string) {
  const get = (path: string) => async (base: string) => {
    const answer = await request(base, 'GET', path, { token: adminToken });
    assert.equal(answer.status, 200, `${base} GET ${path}: ${answer.text}`);
    return answer.body;
  };
  return {
    list: get('/v1/customers?limit=200'),
    search: get(`/v1/customers?search=${encodeURIComponent(marker)}`),
    kpis: get('/v1/customers/kpis'),
    trend: get('/v1/customers/trend?months=3'),
    health: get('/v1/customers/health'),
    top: get('/v1/customers/top?limit=3'),
    segment: async (base: string) => (await get(`/v1/segments/${segmentId}`)(base)).matchCount,
    preview: async (base: string) => {
      const answer = await request(base, 'POST', '/v1/segments/preview', { token: adminToken, body: { conditions } });
      assert.equal(answer.status, 200, answer.text);
      return answer.body.matchCount;
    },
  };
}

type Reads = Record<string, (base: string) => Promise<unknown>>;

async function readAll(base: string, reads: Reads): Promise<Record<string, unknown>> {
  const names = Object.keys(reads);
  const values = await Promise.all(names.map((name) => reads[name]!(base)));
  return Object.fromEntries(names.map((name, i) => [name, values[i]]));
}

/**
 * Asks instance `base` for every read every POLL_MS until each answers `expected`; fails naming the reads still
 * different once `deadline` (performance.now()) has passed.
 */
async function reachesBy(base: string, reads: Reads, expected: Record<string, unknown>, deadline: number): Promise<void> {
  for (;;) {
    const got = await readAll(base, reads);
    const stale = Object.keys(reads).filter((name) => !isDeepStrictEqual(got[name], expected[name]));
    if (stale.length === 0) return;
    if (performance.now() > deadline) {
      const shown = stale.map((name) => `${name}: ${JSON.stringify(got[name])} instead of ${JSON.stringify(expected[name])}`);
      assert.fail(`${base} still answers differently ${VISIBLE_WITHIN_MS} ms after the write: ${shown.join('; ')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * Runs `write` through instance `writer`; then the writer answers every read at once with a new value (each read
 * differs from before the write), and every other instance answers the same within VISIBLE_WITHIN_MS of the write's
 * answer.
 */
async function assertWriteSpreads(reads: Reads, writer: number, write: (base: string) => Promise<void>): Promise<void> {
  const before = await readAll(at(writer), reads);
  await write(at(writer));
  const deadline = performance.now() + VISIBLE_WITHIN_MS;
  const after = await readAll(at(writer), reads);
  const unchanged = Object.keys(reads).filter((name) => isDeepStrictEqual(before[name], after[name]));
  const shown = unchanged.map((name) => `${name}: ${JSON.stringify(after[name])}`).join('; ');
  assert.deepEqual(unchanged, [], `reads of the writer (instance ${writer}) that did not change at once: ${shown}`);
  await Promise.all([0, 1, 2].filter((i) => i !== writer).map((i) => reachesBy(at(i), reads, after, deadline)));
}

describe('a write through one instance is visible through every other within 1 second', () => {
  const today = () => new Date().toISOString().slice(0, 10);
  const customer = (n: number, status: string, fields: Record<string, unknown> = {}) => ({
    name: `Baseline ${n}`,
    email: `baseline.${n}@visible.example.com`,
    country: 'Baseland',
    totalTransactions: 2,
    totalAmountSpent: 50 + n,
    lastActivityDate: today(),
    status,
    ...fields,
  });

  test('customer lists and search, KPIs, trend, health, top, segment counts and previews: created on A, changed on B, deleted on C', { timeout: 30_000 }, async () => {
    // A base of other statuses, so that every aggregate moves with the customer below.
    for (const [n, status] of [[1, 'inactive'], [2, 'churned'], [3, 'active']] as const) {
      assert.equal((await request(at(0), 'POST', '/v1/customers', { token: adminToken, body: customer(n, status) })).status, 200);
    }
    const country = 'Visibleland';
    const conditions = [{ field: 'country', operator: 'eq', value: country }];
    const segment = await request(at(0), 'POST', '/v1/segments', { token: adminToken, body: { name: 'Visible customers', conditions } });
    assert.equal(segment.status, 200, segment.text);
    const marker = 'Zephyrine Visible';
    const reads = customerReads(segment.body.id, conditions, marker);
    let id = '';

    await assertWriteSpreads(reads, 0, async (base) => {
      const body = { ...customer(10, 'active'), name: `${marker} Customer`, email: 'zephyrine@visible.example.com', country, totalTransactions: 9, totalAmountSpent: 987654.32 };
      const created = await request(base, 'POST', '/v1/customers', { token: adminToken, body });
      assert.equal(created.status, 200, created.text);
      id = created.body.id;
    });
    await assertWriteSpreads(reads, 1, async (base) => {
      const changed = await request(base, 'PATCH', `/v1/customers/${id}`, { token: adminToken, body: { country: 'Elsewhere', status: 'churned', totalAmountSpent: 876543.21 } });
      assert.equal(changed.status, 200, changed.text);
    });
    // Back into the segment on another instance, so that its count moves again before the delete.
    await assertWriteSpreads(reads, 2, async (base) => {
      const changed = await request(base, 'PATCH', `/v1/customers/${id}`, { token: adminToken, body: { country, status: 'inactive' } });
      assert.equal(changed.status, 200, changed.text);
    });
    await assertWriteSpreads(reads, 2, async (base) => {
      assert.equal((await request(base, 'DELETE', `/v1/customers/${id}`, { token: adminToken })).status, 200);
    });
  });

  test('the campaign list: a campaign generated on A is listed by B and C within 1 second', { timeout: 15_000 }, async () => {
    const segment = await request(at(0), 'POST', '/v1/segments', { token: adminToken, body: { name: 'Campaign list segment', conditions: [{ field: 'country', operator: 'eq', value: 'Baseland' }] } });
    assert.equal(segment.status, 200, segment.text);
    const list = async (base: string) => {
      const answer = await request(base, 'GET', '/v1/campaigns', { token: adminToken });
      assert.equal(answer.status, 200, answer.text);
      return answer.body;
    };
    await assertWriteSpreads({ list }, 0, async (base) => {
      const generated = await request(base, 'POST', '/v1/campaigns/generate', { token: adminToken, body: briefFor(segment.body.id) });
      assert.equal(generated.status, 200, generated.text);
    });
  });
});

describe('chat grounding follows writes on other instances', () => {
  test('a customer created on A is among the facts B and C give the model, on a message sent right after A answered', { timeout: 15_000 }, async () => {
    const amount = 765432.1;
    const shown = money(amount);
    // Users of their own: the model-call budget of the admin belongs to the limit tests.
    const askers = [await newUser('lifecycle_marketer', 1), await newUser('lifecycle_marketer', 2)];
    const threads = await Promise.all(askers.map(async (user, i) => (await request(at(i + 1), 'POST', '/v1/chat/threads', { token: user.token, body: {} })).body.id as string));
    const created = await request(at(0), 'POST', '/v1/customers', {
      token: adminToken,
      body: { name: 'Grounded Spender', email: `grounded.${Date.now()}@visible.example.com`, country: 'Groundland', totalTransactions: 3, totalAmountSpent: amount, lastActivityDate: new Date().toISOString().slice(0, 10), status: 'active' },
    });
    assert.equal(created.status, 200, created.text);
    const deadline = performance.now() + VISIBLE_WITHIN_MS;
    // One message per instance, each polled until its prompt shows the customer: a message costs a model call, so
    // each asker may send up to MODEL_CALLS_PER_MINUTE of them.
    await Promise.all(
      askers.map(async (user, i) => {
        for (let sent = 1; ; sent++) {
          const asked = fake.requests.length;
          const reply = await request(at(i + 1), 'POST', `/v1/chat/threads/${threads[i]}/messages`, { token: user.token, body: { content: 'Who are our best customers?' } });
          assert.equal(reply.status, 200, reply.text);
          const prompt = JSON.stringify(fake.requests.slice(asked).map((r) => r.body?.messages));
          if (prompt.includes(shown)) return;
          assert.ok(performance.now() < deadline && sent < MODEL_CALLS_PER_MINUTE, `instance ${i + 1}'s prompt lacks the customer (${shown}) ${VISIBLE_WITHIN_MS} ms after the write`);
        }
      }),
    );
  });
});

describe('webhooks', () => {
  test('each event is delivered once to each subscribed endpoint, with one webhook-id, whichever instance made the change', { timeout: 30_000 }, async () => {
    const one = await startWebhookReceiver({ name: 'one' });
    const two = await startWebhookReceiver({ name: 'two' });
    try {
      for (const [receiver, events] of [[one, ['campaign.status_changed']], [two, ['campaign.status_changed', 'campaign.approved']]] as const) {
        const created = await request(at(0), 'POST', '/v1/webhooks', { token: adminToken, body: { url: receiver.url, events } });
        assert.equal(created.status, 200, created.text);
      }
      const author = await newUser('lifecycle_marketer', 1);
      const segment = await request(at(1), 'POST', '/v1/segments', { token: author.token, body: { name: 'Webhook segment', conditions: [{ field: 'country', operator: 'eq', value: 'Baseland' }] } });
      assert.equal(segment.status, 200, segment.text);
      const move = async (on: number, token: string, campaign: string, status: string) => {
        const moved = await request(at(on), 'PATCH', `/v1/campaigns/${campaign}/status`, { token, body: { status } });
        assert.equal(moved.status, 200, moved.text);
      };
      // Two campaigns, each written, submitted and approved through three different instances: 4 moves, 2 approvals.
      const campaigns: string[] = [];
      for (const [made, submitted, approved] of [[0, 1, 2], [1, 2, 0]]) {
        const generated = await request(at(made!), 'POST', '/v1/campaigns/generate', { token: author.token, body: briefFor(segment.body.id) });
        assert.equal(generated.status, 200, generated.text);
        campaigns.push(generated.body.id);
        await move(submitted!, author.token, generated.body.id, 'in_review');
        await move(approved!, adminToken, generated.body.id, 'approved');
      }
      await one.until((requests) => requests.length >= 4);
      await two.until((requests) => requests.length >= 6);
      // A last move: once its event has arrived, a second copy of an earlier one would have too.
      await move(1, adminToken, campaigns[0]!, 'sent');
      const isLast = (r: ReceivedRequest) => JSON.parse(r.body).data?.to === 'sent';
      await Promise.all([one.until((requests) => requests.some(isLast)), two.until((requests) => requests.some(isLast))]);

      const types = (requests: ReceivedRequest[]) => requests.map((r) => JSON.parse(r.body).type as string).sort();
      assert.deepEqual(types(one.requests), Array(5).fill('campaign.status_changed'));
      assert.deepEqual(types(two.requests), [...Array(2).fill('campaign.approved'), ...Array(5).fill('campaign.status_changed')]);
      assert.equal(one.distinctIds(), one.requests.length, 'an event reached the first endpoint twice');
      assert.equal(two.distinctIds(), two.requests.length, 'an event reached the second endpoint twice');
      // One webhook-id per event: the status changes the two endpoints received carry the same ids.
      const ids = (requests: ReceivedRequest[], type: string) => requests.filter((r) => JSON.parse(r.body).type === type).map((r) => r.headers['webhook-id']).sort();
      assert.deepEqual(ids(one.requests, 'campaign.status_changed'), ids(two.requests, 'campaign.status_changed'));
    } finally {
      await one.close();
      await two.close();
    }
  });
});

describe('one-runner loops', () => {
  test('the webhook dispatcher passes to another instance when its leader is killed: a change made afterwards is delivered', { timeout: 60_000 }, async () => {
    const receiver = await startWebhookReceiver({ name: 'handover' });
    // Alone at first, so it leads the dispatcher (the local generator writes the copy: no provider needed).
    const small = await startCluster({ instances: 1, withSchema: true });
    try {
      const [leader] = small.instances;
      const token = (await signIn(leader!.url, ADMIN_EMAIL, ADMIN_PASSWORD)).body.accessToken as string;
      const hook = await request(leader!.url, 'POST', '/v1/webhooks', { token, body: { url: receiver.url, events: ['campaign.status_changed'] } });
      assert.equal(hook.status, 200, hook.text);
      const segment = await request(leader!.url, 'POST', '/v1/segments', { token, body: { name: 'Handover', conditions: [{ field: 'totalTransactions', operator: 'gte', value: 0 }] } });
      const campaign = await request(leader!.url, 'POST', '/v1/campaigns/generate', { token, body: briefFor(segment.body.id) });
      assert.equal(campaign.status, 200, campaign.text);
      const moveOn = async (base: string, status: string) => assert.equal((await request(base, 'PATCH', `/v1/campaigns/${campaign.body.id}/status`, { token, body: { status } })).status, 200);
      await moveOn(leader!.url, 'in_review');
      await receiver.until((requests) => requests.length === 1);
      const successor = await small.add();
      await leader!.kill(); // its lock session ends with it
      await moveOn(successor.url, 'approved');
      const to = (r: ReceivedRequest) => JSON.parse(r.body).data?.to as string;
      await receiver.until((requests) => requests.some((r) => to(r) === 'approved'));
      assert.deepEqual(receiver.requests.map(to), ['in_review', 'approved']);
    } finally {
      await small.stop();
      await receiver.close();
    }
  });
});

describe('limits counted across instances', () => {
  test(`the sign-in failure limit: ${SIGN_IN_MAX_FAILURES} failures spread over A and B, then 429 on every instance`, async () => {
    const user = await newUser('lifecycle_marketer', 0);
    for (let i = 0; i < SIGN_IN_MAX_FAILURES; i++) assertProblem(await signIn(at(i % 2), user.email, 'wrong password!'), 401, 'invalid_credentials', `failure ${i + 1}`);
    for (const i of [0, 1, 2]) {
      const refused = await signIn(at(i), user.email);
      assertProblem(refused, 429, 'rate_limited', `instance ${i}`);
      assert.match(refused.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    }
  });

  test(`MODEL_CALLS_PER_MINUTE (${MODEL_CALLS_PER_MINUTE}) spread over the instances, then 429 on any`, async () => {
    const user = await newUser('lifecycle_marketer', 0);
    const thread = await request(at(0), 'POST', '/v1/chat/threads', { token: user.token, body: {} });
    assert.equal(thread.status, 200, thread.text);
    const send = (i: number) => request(at(i), 'POST', `/v1/chat/threads/${thread.body.id}/messages`, { token: user.token, body: { content: 'How are we doing?' } });
    for (let n = 0; n < MODEL_CALLS_PER_MINUTE; n++) {
      const sent = await send(n % 3);
      assert.equal(sent.status, 200, `call ${n + 1} on instance ${n % 3}: ${sent.text}`);
    }
    for (const i of [0, 1, 2]) assertProblem(await send(i), 429, 'rate_limited', `instance ${i}`);
  });

  test('CHAT_STREAMS_PER_USER (1): a stream held open on A refuses the user\'s next on B and C; closed, it frees the slot for B', { timeout: 15_000 }, async () => {
    const user = await newUser('lifecycle_marketer', 0);
    const thread = await request(at(0), 'POST', '/v1/chat/threads', { token: user.token, body: {} });
    const stream = (i: number) => openSse(`${at(i)}/v1/chat/threads/${thread.body.id}/messages/stream`, { token: user.token, body: { content: 'Tell me more' } });
    const asked = fake.requests.length;
    const aborted = fake.requests.filter((r) => r.aborted).length;
    fake.enqueue({ hang: true });
    const held = await stream(0);
    assert.equal(held.status, 200);
    assert.equal((await held.nextEvent()).type, 'start');
    await fake.waitForRequests(asked + 1);
    for (const i of [1, 2]) {
      const refused = await stream(i);
      assert.equal(refused.status, 429, `instance ${i}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.code, 'rate_limited');
    }
    held.abort();
    await fake.waitForAborts(aborted + 1);
    // The slot is given back once A has seen the client go; asked again until then, within a bound.
    const deadline = performance.now() + 2_000;
    for (;;) {
      const again = await stream(1);
      if (again.status === 200) {
        assert.deepEqual((await again.rest()).map((frame) => frame.type).at(-1), 'done');
        break;
      }
      assert.equal(again.status, 429, JSON.stringify(again.body));
      assert.ok(performance.now() < deadline, 'the slot of the closed stream was not given back within 2 s');
    }
  });
});

describe('Idempotency-Key across instances', () => {
  test('a key replayed on another instance answers the stored reply with Idempotency-Replayed: true', async () => {
    const user = await newUser('lifecycle_marketer', 0);
    const segment = await request(at(0), 'POST', '/v1/segments', { token: user.token, body: { name: 'Replay segment', conditions: [{ field: 'country', operator: 'eq', value: 'Baseland' }] } });
    const key = `replay-${Date.now()}`;
    const generate = (i: number) => request(at(i), 'POST', '/v1/campaigns/generate', { token: user.token, body: briefFor(segment.body.id), headers: { 'idempotency-key': key } });
    const first = await generate(0);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers.get('idempotency-replayed'), null);
    const asked = fake.requests.length;
    for (const i of [1, 2]) {
      const again = await generate(i);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.headers.get('idempotency-replayed'), 'true');
      assert.equal(again.text, first.text);
    }
    assert.equal(fake.requests.length, asked, 'a replay asked the model');
  });

  test('the same key sent to A and B at once runs once: one model call, one campaign, the same reply to both', { timeout: 15_000 }, async () => {
    const user = await newUser('lifecycle_marketer', 0);
    const segment = await request(at(0), 'POST', '/v1/segments', { token: user.token, body: { name: 'At once segment', conditions: [{ field: 'country', operator: 'eq', value: 'Baseland' }] } });
    const key = `at-once-${Date.now()}`;
    const generate = (i: number) => request(at(i), 'POST', '/v1/campaigns/generate', { token: user.token, body: briefFor(segment.body.id), headers: { 'idempotency-key': key } });
    const total = async () => (await request(at(2), 'GET', '/v1/campaigns', { token: adminToken })).body.total as number;
    const before = await total();
    const asked = fake.requests.length;
    fake.enqueue(copyReply(GOOD_COPY, 500));
    const onA = generate(0);
    await fake.waitForRequests(asked + 1); // A is inside the model call, holding the key
    const [a, b] = await Promise.all([onA, generate(1)]);
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    assert.equal(b.text, a.text);
    assert.equal(a.headers.get('idempotency-replayed'), null);
    assert.equal(b.headers.get('idempotency-replayed'), 'true');
    assert.equal(fake.requests.length, asked + 1);
    assert.equal(await total(), before + 1);
  });

  test('an instance stopping (SIGTERM) with a keyed request in flight keeps the key until it answered: the same key elsewhere waits, then replays', { timeout: 30_000 }, async () => {
    const stopping: ChildService = await cluster.add();
    const user = await newUser('lifecycle_marketer', 0);
    const segment = await request(at(0), 'POST', '/v1/segments', { token: user.token, body: { name: 'Stopping segment', conditions: [{ field: 'country', operator: 'eq', value: 'Baseland' }] } });
    const key = `stopping-${Date.now()}`;
    const generate = (base: string) => request(base, 'POST', '/v1/campaigns/generate', { token: user.token, body: briefFor(segment.body.id), headers: { 'idempotency-key': key } });
    const asked = fake.requests.length;
    fake.enqueue(copyReply(GOOD_COPY, 1_500));
    const first = generate(stopping.url);
    await fake.waitForRequests(asked + 1); // inside the model call, holding the key
    const stopped = stopping.stop(); // its grace lets the request finish
    const again = await generate(at(1));
    const [answered] = await Promise.all([first, stopped]);
    assert.equal(answered.status, 200, answered.text);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers.get('idempotency-replayed'), 'true', 'the second request ran again instead of waiting for the stopping instance');
    assert.equal(again.text, answered.text);
    assert.equal(fake.requests.length, asked + 1, 'the model was asked twice');
  });
});

/** A CSV of `rows` valid customers whose emails start with `prefix`. */
function csvOf(prefix: string, rows: number): string {
  const lines = ['name,email,country,total_transactions,total_amount_spent,last_activity_date,status'];
  for (let i = 0; i < rows; i++) lines.push(`${prefix} Customer ${i},${prefix}.${i}@jobs.example.com,Jobland,${i % 7},${(i % 500) + 0.5},2026-01-${String((i % 28) + 1).padStart(2, '0')},active`);
  return `${lines.join('\n')}\n`;
}

interface JobChange {
  id: string;
  status: string;
  rowsRead: number;
  imported: number;
  skipped: number;
}

/**
 * Calls `seen` with every committed change of an import job, in commit order (NOTIFY from a trigger of the test's
 * own); returns the function that stops listening.
 */
async function watchJobs(seen: (change: JobChange) => void): Promise<() => Promise<void>> {
  const listener = await sql.listen('test_import_jobs', (payload) => seen(JSON.parse(payload) as JobChange));
  return () => listener.unlisten();
}

/** Resolves with the first change that `holds`, watching from now; rejects naming `what` after `timeoutMs`. */
async function jobChange(holds: (change: JobChange) => boolean, what: string, timeoutMs: number): Promise<JobChange> {
  let stop: () => Promise<void> = async () => {};
  try {
    return await new Promise<JobChange>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting until ${what}`)), timeoutMs);
      void watchJobs((change) => {
        if (!holds(change)) return;
        clearTimeout(timer);
        resolve(change);
      }).then((unlisten) => (stop = unlisten), reject);
    });
  } finally {
    await stop();
  }
}

/** How many stored customers have an email like `pattern`. */
async function countEmails(pattern: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM customers WHERE email LIKE ${pattern}`;
  return row!.n;
}

/** Posts `csv` as an import job through `base`; returns the job's id. */
async function upload(base: string, token: string, csv: string, fileName: string): Promise<string> {
  const posted = await request(base, 'POST', `/v1/customers/imports?fileName=${fileName}`, { token, raw: csv, headers: { 'content-type': 'text/csv' } });
  assert.equal(posted.status, 202, posted.text);
  return posted.body.id;
}

describe('import jobs', () => {
  before(async () => {
    // The test's instrument, not the service's: each commit that changes a job says how it stands.
    await sql.unsafe(`
      CREATE OR REPLACE FUNCTION test_job_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM pg_notify('test_import_jobs', json_build_object('id', NEW.id, 'status', NEW.status, 'rowsRead', NEW.rows_read,
            'imported', NEW.imported, 'skipped', NEW.skipped)::text);
          RETURN NULL;
        END $$;
      CREATE TRIGGER test_job_changed AFTER INSERT OR UPDATE ON import_jobs FOR EACH ROW EXECUTE FUNCTION test_job_changed();`);
  });

  test('two jobs posted to A and B run one at a time in arrival order, and each is read the same from every instance', { timeout: 60_000 }, async () => {
    const changes: JobChange[] = [];
    const unlisten = await watchJobs((change) => changes.push(change));
    try {
      const first = await upload(at(0), adminToken, csvOf('queue-first', 20_000), 'first.csv');
      const second = await upload(at(1), adminToken, csvOf('queue-second', 2_000), 'second.csv');
      const ended = (id: string) => (change: JobChange) => change.id === id && change.status !== 'running';
      await Promise.all([
        jobChange(ended(first), 'the first job ended', 45_000),
        jobChange(ended(second), 'the second job ended', 45_000),
      ].map((wait) => wait.catch((error: unknown) => assert.fail(`${String(error)}; changes seen: ${JSON.stringify(changes.slice(-5))}`))));
      // The second made no progress before the first had ended (notifications come in commit order).
      const firstEnd = changes.findIndex(ended(first));
      const secondStart = changes.findIndex((c) => c.id === second && c.rowsRead > 0);
      assert.ok(firstEnd >= 0 && secondStart > firstEnd, `the second job read rows before the first ended: ${JSON.stringify(changes.filter((c) => c.rowsRead > 0).slice(0, 6))}`);
      for (const id of [first, second]) {
        const seen = await Promise.all([0, 1, 2].map((i) => request(at(i), 'GET', `/v1/customers/imports/${id}`, { token: adminToken })));
        for (const answer of seen) assert.equal(answer.status, 200, answer.text);
        assert.equal(seen[0]!.body.status, 'completed', seen[0]!.text);
        assert.deepEqual(seen[1]!.body, seen[0]!.body);
        assert.deepEqual(seen[2]!.body, seen[0]!.body);
      }
    } finally {
      await unlisten();
    }
  });

  test('a job whose instance is killed with kill -9 is settled by another within 30 s, with the committed counts', { timeout: 120_000 }, async () => {
    const doomed: ChildService = await cluster.add();
    const csv = csvOf('killed', KILLED_ROWS);
    const committed = jobChange((c) => c.imported >= 5_000, 'the job committed 5,000 customers', 60_000);
    const id = await upload(doomed.url, adminToken, csv, 'killed.csv');
    const progress = await committed;
    assert.equal(progress.id, id);
    const settled = jobChange((c) => c.id === id && c.status !== 'running', 'another instance settled the job', SETTLED_WITHIN_MS);
    await doomed.kill();
    await settled;
    const job = await request(at(0), 'GET', `/v1/customers/imports/${id}`, { token: adminToken });
    assert.equal(job.status, 200, job.text);
    // Killed a tenth of the way in (the rest takes seconds): nobody carries it on, another instance marks it.
    assert.equal(job.body.status, 'interrupted', job.text);
    const stored = await countEmails('killed.%');
    // Its counts are what was committed: every stored row of the file, nothing more.
    assert.equal(job.body.imported, stored, job.text);
    assert.equal(job.body.rowsRead, job.body.imported + job.body.updated + job.body.skipped, job.text);
    // Importing the same file again stores only the rest.
    const again = await upload(at(1), adminToken, csv, 'killed-again.csv');
    const done = await jobChange((c) => c.id === again && c.status !== 'running', 'the second import ended', 60_000);
    assert.equal(done.status, 'completed');
    assert.equal(done.imported, KILLED_ROWS - stored);
    assert.equal(await countEmails('killed.%'), KILLED_ROWS);
  });
});

describe('start-up and tools on the shared database', () => {
  test('three instances started at once on an empty database: one schema, one first admin, all answer', { timeout: 60_000 }, async () => {
    const fresh = await startCluster({ instances: 3 });
    const db = postgres(fresh.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      for (const [i, service] of fresh.instances.entries()) {
        const health = await request(service.url, 'GET', '/health');
        assert.equal(health.status, 200, `instance ${i}: ${health.text}`);
        assert.equal((await signIn(service.url, ADMIN_EMAIL, ADMIN_PASSWORD)).status, 200, `instance ${i}`);
      }
      const users = await db<{ email: string; role: string }[]>`SELECT email, role FROM users`;
      assert.deepEqual([...users], [{ email: ADMIN_EMAIL, role: 'admin' }]);
      const versions = await db<{ version: number }[]>`SELECT version FROM schema_version`;
      assert.equal(versions.length, 1);
      for (const [i, service] of fresh.instances.entries()) assert.deepEqual(service.log.problems, [], `instance ${i} logged problems`);
    } finally {
      await db.end();
      await fresh.stop();
    }
  });

  test('npm run user against the shared database while instances run: the new user signs in through every instance, and deactivation reaches all', { timeout: 30_000 }, async () => {
    const email = `cli.${Date.now()}@instances.example.com`;
    const run = async (args: string[]) => {
      const child = spawnScript('scripts/user.ts', args, { DATABASE_URL: cluster.databaseUrl });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      assert.equal(code, 0, `npm run user -- ${args.join(' ')}: ${output}`);
    };
    await run(['create', '--email', email, '--name', 'Cli User', '--role', 'marketing_lead', '--password', PASSWORD]);
    const tokens: string[] = [];
    for (const i of [0, 1, 2]) {
      const session = await signIn(at(i), email);
      assert.equal(session.status, 200, `instance ${i}: ${session.text}`);
      tokens.push(session.body.accessToken);
    }
    await run(['deactivate', '--email', email]);
    for (const i of [0, 1, 2]) assertProblem(await request(at(i), 'GET', '/v1/me', { token: tokens[i] }), 401, 'unauthenticated', `instance ${i}`);
  });

  test('npm run seed against the shared database while instances run: every instance counts the new customers within 1 second', { timeout: 60_000 }, async () => {
    const total = async (base: string) => (await request(base, 'GET', '/v1/customers/kpis', { token: adminToken })).body.totalCustomers as number;
    const before = await total(at(0));
    const child = spawnScript('scripts/seed.ts', ['--customers', '200', '--database-url', cluster.databaseUrl]);
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0, output);
    const deadline = performance.now() + VISIBLE_WITHIN_MS;
    await Promise.all([0, 1, 2].map((i) => reachesBy(at(i), { total }, { total: before + 200 }, deadline)));
  });
});
