// The limits and Idempotency-Key across instances (product.md section 13): two services in this process on one
// PostgreSQL database stand for two instances behind a load balancer. Sign-in failures, MODEL_CALLS_PER_MINUTE and
// CHAT_STREAMS_PER_USER count across both; a stream slot of a dead instance stops counting; the same key sent to both
// at once runs once, replays on the other, and a running key is waited for while its instance lives, taken over once
// its lease has ended.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { canonicalJson } from '../../src/domain/canonical-json.ts';
import { assertProblem, PASSWORD, startService, TestClock, type Reply, type TestService } from '../helpers.ts';
import { audienceOf, briefFor, campaignTotal, copyReply, generate, GOOD_COPY } from '../support/campaigns.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { createDatabase, dropDatabase } from '../support/postgres.ts';
import { openSse, type SseResponse } from '../support/sse-client.ts';

const ENV = {
  ACCESS_TOKEN_TTL: '86400',
  SIGN_IN_MAX_FAILURES: '4',
  MODEL_CALLS_PER_MINUTE: '3',
  CHAT_STREAMS_PER_USER: '2',
  LLM_PROVIDER: 'openai',
  LLM_MODEL: 'test-model',
  LLM_API_KEY: 'k',
  LLM_MAX_RETRIES: '0',
  LLM_TIMEOUT_MS: '60000',
};
/** An instance id no service runs under: its lease ended long ago. */
const DEAD = 'dead-instance-of-the-limits-test';

let url: string;
let fake: FakeProvider;
/** The two instances, on one clock: rate limits count in the callers' time. */
let a: TestService;
let b: TestService;
let keyCounter = 0;
const newKey = () => `limits-key-${++keyCounter}`;

before(async () => {
  url = await createDatabase('limits', { withSchema: true });
  fake = await startFakeProvider();
  fake.defaultReply = copyReply(GOOD_COPY);
  // A chat reply stays open (a generation asks for a JSON object and is answered at once).
  fake.respond = (request) => (request.body?.response_format ? undefined : { hang: true });
  const clock = new TestClock();
  const env = { ...ENV, LLM_BASE_URL: fake.url };
  a = await startService({ databaseUrl: url, clock, env });
  b = await startService({ databaseUrl: url, clock, env });
  await a.query('INSERT INTO service_instances (id, started_at, expires_at) VALUES (?, 0, 1)', DEAD);
});

after(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await fake?.close();
  if (url) await dropDatabase(url);
});

/** Resolves once `check` holds, looking again every 20 ms: for a state another process's connection reaches. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Resolves once a connection of the database has last sent `statement` (a LISTEN or UNLISTEN of a waiting request). */
function untilSent(statement: string): Promise<void> {
  return until(`some connection sent ${statement}`, async () => {
    const found = await a.queryValue<number>('SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND lower(query) = ?', statement);
    return Number(found) > 0;
  });
}

/** A marketer signed in on both instances (one token serves both: the secret is shared). */
async function marketer(): Promise<{ id: string; email: string; token: string }> {
  const user = await a.createUser('lifecycle_marketer');
  return { id: user.id, email: user.email, token: (await b.signIn(user.email)).accessToken };
}

function signIn(service: TestService, email: string, password: string): Promise<Reply> {
  return service.request('POST', '/v1/auth/sign-in', { body: { email, password } });
}

/** Asserts 429 rate_limited with the Retry-After given. */
function assertLimited(reply: Reply, retryAfter: string): void {
  assertProblem(reply, 429, 'rate_limited');
  assert.equal(reply.headers.get('retry-after'), retryAfter);
}

describe('rate limits count across instances', () => {
  test('SIGN_IN_MAX_FAILURES=4 spread over two instances: the 5th attempt is 429 with Retry-After on both', async () => {
    const { email } = await marketer();
    for (const service of [a, b, a, b]) assertProblem(await signIn(service, email, 'wrong password'), 401, 'invalid_credentials');
    assertLimited(await signIn(a, email, PASSWORD), '900');
    assertLimited(await signIn(b, email, PASSWORD), '900');
  });

  test('a success on one instance resets the failures counted on both', async () => {
    const { email } = await marketer();
    for (const service of [a, b, a]) assertProblem(await signIn(service, email, 'wrong password'), 401, 'invalid_credentials');
    assert.equal((await signIn(b, email, PASSWORD)).status, 200);
    for (const service of [a, b, a, b]) assertProblem(await signIn(service, email, 'wrong password'), 401, 'invalid_credentials');
    assertLimited(await signIn(a, email, PASSWORD), '900');
  });

  test('race: 12 failed sign-ins at once over both instances: exactly 4 are counted as 401, the others are 429', async () => {
    const { email } = await marketer();
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => signIn(i % 2 ? a : b, email, 'wrong password')));
    assert.deepEqual(replies.map((r) => r.status).sort(), [...Array(4).fill(401), ...Array(8).fill(429)]);
  });

  test("expired windows are swept as attempts go on: a quiet key's row does not stay", async () => {
    const now = a.clock.now().getTime();
    await a.query(`INSERT INTO rate_windows (scope, key, events, expires_at) VALUES ('sign_in', 'quiet', ARRAY[?::bigint], ?)`, now - 900_000, now);
    // A sweep comes every 64 attempts of an instance's counter.
    for (let i = 0; i < 64; i++) assertProblem(await signIn(a, `nobody${i}@example.com`, 'wrong password'), 401, 'invalid_credentials');
    assert.equal(await a.queryValue(`SELECT count(*) FROM rate_windows WHERE key = 'quiet'`), 0);
  });

  test('MODEL_CALLS_PER_MINUTE=3 spread over two instances: the 4th call is 429 on both; the minute slides on both', async () => {
    const user = await marketer();
    const segment = await audienceOf(a, user.token, 0);
    for (const service of [a, b, a]) assert.equal((await generate(service, user.token, briefFor(segment.id))).status, 200);
    assertLimited(await generate(b, user.token, briefFor(segment.id)), '60');
    assertLimited(await generate(a, user.token, briefFor(segment.id)), '60');
    a.clock.advance(60_000); // the clock both instances share
    assert.equal((await generate(b, user.token, briefFor(segment.id))).status, 200);
  });
});

describe('reply streams per user count across instances', () => {
  const open: SseResponse[] = [];
  after(() => open.forEach((stream) => stream.abort()));

  /** Opens a reply stream on the instance in a new thread of the user's; the provider holds it open. */
  async function stream(service: TestService, token: string): Promise<SseResponse> {
    const thread = (await service.request('POST', '/v1/chat/threads', { token, body: {} })).body;
    const opened = await openSse(`${service.url}/v1/chat/threads/${thread.id}/messages/stream`, { token, body: { content: 'hello' } });
    open.push(opened);
    return opened;
  }

  const slotsOf = async (holder: string) => Number(await a.queryValue('SELECT count(*) FROM stream_slots WHERE holder = ?', holder));

  test('CHAT_STREAMS_PER_USER=2: one stream on each instance, a third on either is 429; a closed one frees its slot for both', { timeout: 20_000 }, async () => {
    const user = await marketer();
    const calls = fake.requests.length;
    const [first, second] = [await stream(a, user.token), await stream(b, user.token)];
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    await fake.waitForRequests(calls + 2);
    for (const service of [a, b]) {
      const refused = await stream(service, user.token);
      assertLimited({ ...refused, text: JSON.stringify(refused.body) }, '1');
      assert.match(refused.body.detail, /at most 2 at once per user/);
    }
    first.abort();
    await until('the closed stream released its slot', async () => (await slotsOf(user.id)) === 1);
    const again = await stream(b, user.token);
    assert.equal(again.status, 200);
  });

  test("a slot held on an instance whose lease has ended does not count, and is swept; a live instance's does", { timeout: 20_000 }, async () => {
    const user = await marketer();
    const live = await a.queryValue<string>('SELECT id FROM service_instances WHERE expires_at > campaigns_now_ms() LIMIT 1');
    await a.query('INSERT INTO stream_slots (id, holder, instance_id, acquired_at) VALUES (?, ?, ?, 0), (?, ?, ?, 0)', 'dead-slot', user.id, DEAD, 'live-slot', user.id, live);
    const opened = await stream(a, user.token);
    assert.equal(opened.status, 200, 'the dead instance\'s slot was counted');
    const refused = await stream(b, user.token);
    assert.equal(refused.status, 429, "the live instance's slot was not counted");
    assert.equal(await a.queryValue('SELECT count(*) FROM stream_slots WHERE instance_id = ?', DEAD), 0, 'the dead slot was swept');
  });
});

describe('Idempotency-Key across instances', () => {
  let user: { id: string; token: string };
  let segmentId: string;
  before(async () => {
    user = await marketer();
    segmentId = (await audienceOf(a, user.token, 0)).id;
  });
  beforeEach(() => a.clock.advance(60_000)); // a fresh minute of model calls for each test

  test('the same key sent to both instances at once runs once: both get the same reply, one of them replayed', { timeout: 20_000 }, async () => {
    const key = newKey();
    const [calls, total] = [fake.requests.length, await campaignTotal(a, user.token)];
    fake.enqueue(copyReply(GOOD_COPY, 300)); // whichever claims first is still in the model call when the other arrives
    const [fromA, fromB] = await Promise.all([generate(a, user.token, briefFor(segmentId), key), generate(b, user.token, briefFor(segmentId), key)]);
    assert.equal(fromA.status, 200, fromA.text);
    assert.equal(fromB.status, 200, fromB.text);
    assert.equal(fromA.text, fromB.text);
    assert.deepEqual([fromA, fromB].map((r) => r.headers.get('idempotency-replayed')).sort(), ['true', null].sort());
    assert.equal(fake.requests.length, calls + 1, 'one model call');
    assert.equal(await campaignTotal(b, user.token), total + 1, 'one campaign');
  });

  test('a reply stored on one instance is replayed by the other later', async () => {
    const key = newKey();
    const first = await generate(a, user.token, briefFor(segmentId), key);
    assert.equal(first.status, 200, first.text);
    const calls = fake.requests.length;
    const replay = await generate(b, user.token, briefFor(segmentId), key);
    assert.equal(replay.headers.get('idempotency-replayed'), 'true');
    assert.equal(replay.text, first.text);
    assert.equal(fake.requests.length, calls);
  });

  test('a key running on a live instance is waited for, not taken over: the duplicate runs once the first gives it up', { timeout: 20_000 }, async () => {
    const key = newKey();
    const calls = fake.requests.length;
    fake.enqueue({ hang: true });
    const client = new AbortController();
    const stuck = fetch(`${a.url}/v1/campaigns/generate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(briefFor(segmentId)),
      signal: client.signal,
    }).catch((error: unknown) => error);
    await fake.waitForRequests(calls + 1); // the first holds the key, stuck in the model call
    const duplicate = generate(b, user.token, briefFor(segmentId), key);
    await untilSent('listen "idempotency_keys"'); // the duplicate waits for the first's instance
    assert.equal(fake.requests.length, calls + 1, 'the duplicate did not run');
    client.abort(); // the first fails: its instance releases the key and says so
    assert.ok((await stuck) instanceof Error);
    const reply = await duplicate;
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.headers.get('idempotency-replayed'), null);
    assert.equal(fake.requests.length, calls + 2);
  });

  test('a duplicate whose client leaves stops waiting', { timeout: 20_000 }, async () => {
    const key = newKey();
    const calls = fake.requests.length;
    fake.enqueue({ hang: true });
    const send = (service: TestService, client: AbortController) =>
      fetch(`${service.url}/v1/campaigns/generate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(briefFor(segmentId)),
        signal: client.signal,
      }).catch((error: unknown) => error);
    const [first, second] = [new AbortController(), new AbortController()];
    const stuck = send(a, first);
    await fake.waitForRequests(calls + 1);
    const waiting = send(b, second);
    await untilSent('listen "idempotency_keys"');
    second.abort();
    assert.ok((await waiting) instanceof Error);
    await untilSent('unlisten "idempotency_keys"'); // the wait ended with its client
    first.abort();
    assert.ok((await stuck) instanceof Error);
  });

  test('a key left running by an instance whose lease has ended is taken over', { timeout: 20_000 }, async () => {
    const key = newKey();
    const body = briefFor(segmentId);
    const hash = createHash('sha256').update(canonicalJson(body)).digest('hex');
    const now = a.clock.now().getTime();
    await a.query(
      `INSERT INTO idempotency_keys (user_id, key, operation, request_hash, owner, created_at, expires_at) VALUES (?, ?, 'campaigns.generate', ?, ?, ?, ?)`,
      user.id, key, hash, DEAD, now, now + 86_400_000,
    );
    const calls = fake.requests.length;
    const taken = await generate(b, user.token, body, key);
    assert.equal(taken.status, 200, taken.text);
    assert.equal(taken.headers.get('idempotency-replayed'), null);
    assert.equal(fake.requests.length, calls + 1);
    assert.equal((await generate(a, user.token, body, key)).text, taken.text, 'then replayed by the other');
  });
});
