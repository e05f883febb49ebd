// Idempotency-Key on campaign generation and the per-user model-call limit (product.md sections 3 and 6): replays
// with `Idempotency-Replayed: true` that create nothing, canonical JSON, per-user scope, 409 on another body, failures
// not stored, concurrent duplicates, replays after a restart, malformed keys; 429 with Retry-After, replays free.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createIdempotencyKeyRepository, type IdempotencyKeyRepository } from '../src/db/idempotency-keys.ts';
import { createPgIdempotencyKeyRepository } from '../src/db/postgres/idempotency-keys.ts';
import type { Context } from '../src/http/context.ts';
import { idempotentRequests } from '../src/http/idempotency.ts';
import { LocalInFlightRequests } from '../src/http/in-flight.ts';
import type { ServiceEngine } from '../src/storage.ts';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { audienceOf, briefFor, campaignTotal, copyReply, generate, GOOD_COPY, NO_RATE_LIMIT, withProvider } from './support/campaigns.ts';
import { startFakeProvider } from './support/fake-provider.ts';
import { keptDatabase } from './support/kept-database.ts';

let keyCounter = 0;
const newKey = () => `key-${++keyCounter}-${Date.now()}`;

describe('Idempotency-Key with the local generator', () => {
  let service: TestService;
  let token: string;
  let segmentId: string;

  before(async () => {
    service = await startService({ env: NO_RATE_LIMIT });
    token = await service.tokenFor('lifecycle_marketer');
    segmentId = (await audienceOf(service, token, 2)).id;
  });
  after(() => service.close());

  test('a replay returns the identical body with Idempotency-Replayed: true and creates nothing', async () => {
    const key = newKey();
    const first = await generate(service, token, briefFor(segmentId), key);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers.get('idempotency-replayed'), null);
    const total = await campaignTotal(service, token);
    for (let i = 0; i < 2; i++) {
      const again = await generate(service, token, briefFor(segmentId), key);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.headers.get('idempotency-replayed'), 'true');
      assert.equal(again.text, first.text);
      assert.equal(again.headers.get('x-api-version'), 'v1');
    }
    assert.equal(await campaignTotal(service, token), total);
  });

  test('without a key the same body creates a new campaign each time', async () => {
    const first = await generate(service, token, briefFor(segmentId));
    const second = await generate(service, token, briefFor(segmentId));
    assert.notEqual(first.body.id, second.body.id);
    assert.equal(second.headers.get('idempotency-replayed'), null);
  });

  test('bodies are compared as canonical JSON: the same fields in another order, spaced differently, replay', async () => {
    const key = newKey();
    const body = briefFor(segmentId);
    const first = await generate(service, token, body, key);
    assert.equal(first.status, 200, first.text);
    const reordered = `{ "tone": ${JSON.stringify(body.tone)},\n "channel": ${JSON.stringify(body.channel)}, "objective": ${JSON.stringify(body.objective)}, "segmentId": ${JSON.stringify(body.segmentId)} }`;
    const again = await service.request('POST', '/v1/campaigns/generate', {
      token,
      raw: reordered,
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
    });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.equal(again.text, first.text);
  });

  test('keys are scoped to the user: another user with the same key gets their own campaign', async () => {
    const key = newKey();
    const other = await service.createUser('lifecycle_marketer');
    const otherToken = (await service.signIn(other.email)).accessToken;
    const mine = await generate(service, token, briefFor(segmentId), key);
    const theirs = await generate(service, otherToken, briefFor(segmentId), key);
    assert.equal(theirs.status, 200, theirs.text);
    assert.equal(theirs.headers.get('idempotency-replayed'), null);
    assert.notEqual(theirs.body.id, mine.body.id);
    assert.equal(theirs.body.createdBy, other.id);
    // Each user's key still replays their own reply.
    assert.equal((await generate(service, otherToken, briefFor(segmentId), key)).text, theirs.text);
    assert.equal((await generate(service, token, briefFor(segmentId), key)).text, mine.text);
  });

  test('the same key with a different body is 409 conflict and creates nothing; the first reply still replays', async () => {
    const key = newKey();
    const first = await generate(service, token, briefFor(segmentId, { tone: 'friendly' }), key);
    assert.equal(first.status, 200, first.text);
    const total = await campaignTotal(service, token);
    assertProblem(await generate(service, token, briefFor(segmentId, { tone: 'urgent' }), key), 409, 'conflict');
    assertProblem(await generate(service, token, { ...briefFor(segmentId, { tone: 'friendly' }), extra: 1 }, key), 409, 'conflict');
    assert.equal(await campaignTotal(service, token), total);
    assert.equal((await generate(service, token, briefFor(segmentId, { tone: 'friendly' }), key)).text, first.text);
  });

  test('a request that fails validation does not claim the key', async () => {
    const key = newKey();
    assertProblem(await generate(service, token, briefFor(segmentId, { objective: 'short' }), key), 400, 'validation_failed', ['objective']);
    const valid = await generate(service, token, briefFor(segmentId), key);
    assert.equal(valid.status, 200, valid.text);
    assert.equal(valid.headers.get('idempotency-replayed'), null);
  });

  test('a failure inside generation is not stored: the key is free again, even for another body', async () => {
    const key = newKey();
    assertProblem(await generate(service, token, briefFor('no-such-segment'), key), 400, 'validation_failed', ['segmentId']);
    const valid = await generate(service, token, briefFor(segmentId), key);
    assert.equal(valid.status, 200, valid.text);
    assert.equal(valid.headers.get('idempotency-replayed'), null);
  });

  test('a key is kept 24 hours: replayed just before, run again just after', async () => {
    // A service of its own: moving its clock a day ahead expires every access token it issued.
    const own = await startService({ env: NO_RATE_LIMIT });
    try {
      const key = newKey();
      const user = await own.createUser('lifecycle_marketer');
      const signIn = async () => (await own.signIn(user.email)).accessToken;
      const ownSegment = (await audienceOf(own, await signIn(), 1)).id;
      const first = await generate(own, await signIn(), briefFor(ownSegment), key);
      assert.equal(first.status, 200, first.text);
      own.clock.advance(24 * 3600_000 - 1000);
      const replay = await generate(own, await signIn(), briefFor(ownSegment), key);
      assert.equal(replay.headers.get('idempotency-replayed'), 'true');
      assert.equal(replay.text, first.text);
      own.clock.advance(1000);
      const fresh = await generate(own, await signIn(), briefFor(ownSegment), key);
      assert.equal(fresh.status, 200, fresh.text);
      assert.equal(fresh.headers.get('idempotency-replayed'), null);
      assert.notEqual(fresh.body.id, first.body.id);
    } finally {
      await own.close();
    }
  });

  const MALFORMED: [string, string][] = [
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['with a space inside', 'my key'],
    ['with a non-ASCII character', 'clé-1'],
  ];
  for (const [name, key] of MALFORMED) {
    test(`a key ${name} is 400 validation_failed naming Idempotency-Key; nothing is created`, async () => {
      const total = await campaignTotal(service, token);
      assertProblem(await generate(service, token, briefFor(segmentId), key), 400, 'validation_failed', ['Idempotency-Key']);
      assert.equal(await campaignTotal(service, token), total);
    });
  }

  test('a key of 255 visible ASCII characters is accepted', async () => {
    const key = '!~'.repeat(127) + 'z';
    assert.equal(key.length, 255);
    const first = await generate(service, token, briefFor(segmentId), key);
    assert.equal(first.status, 200, first.text);
    assert.equal((await generate(service, token, briefFor(segmentId), key)).headers.get('idempotency-replayed'), 'true');
  });
});

describe('Idempotency-Key with a model provider', () => {
  test('a failure is not stored: after a 502 the same key and body run again and succeed', async (t) => {
    const { service, fake, token, segment } = await withProvider(t, 'openai');
    const key = newKey();
    fake.enqueue({ text: 'no campaign here' }, { text: 'still nothing' });
    assertProblem(await generate(service, token, briefFor(segment.id), key), 502, 'llm_error');
    fake.enqueue(copyReply(GOOD_COPY));
    const retry = await generate(service, token, briefFor(segment.id), key);
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.headers.get('idempotency-replayed'), null);
    assert.equal(retry.body.title, GOOD_COPY.title);
    assert.equal(fake.requests.length, 3);
    const replay = await generate(service, token, briefFor(segment.id), key);
    assert.equal(replay.text, retry.text);
    assert.equal(fake.requests.length, 3);
  });

  test('two concurrent identical requests create one campaign, make one model call, and get the same body', async (t) => {
    const { service, fake, token, segment } = await withProvider(t, 'openai');
    const key = newKey();
    const total = await campaignTotal(service, token);
    fake.enqueue(copyReply(GOOD_COPY, 500));
    const first = generate(service, token, briefFor(segment.id), key);
    await fake.waitForRequests(1); // the first is inside the model call, holding the key
    const second = generate(service, token, briefFor(segment.id), key);
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    assert.equal(b.text, a.text);
    assert.equal(a.headers.get('idempotency-replayed'), null);
    assert.equal(b.headers.get('idempotency-replayed'), 'true');
    assert.equal(fake.requests.length, 1);
    assert.equal(await campaignTotal(service, token), total + 1);
  });

  test('a duplicate waiting on a request that fails runs itself once the first has failed', async (t) => {
    const { service, fake, token, segment } = await withProvider(t, 'openai', { LLM_MAX_RETRIES: '0' });
    const key = newKey();
    fake.enqueue({ status: 500, delayMs: 300 }, copyReply(GOOD_COPY));
    const first = generate(service, token, briefFor(segment.id), key);
    await fake.waitForRequests(1);
    const second = generate(service, token, briefFor(segment.id), key);
    const [a, b] = await Promise.all([first, second]);
    assertProblem(a, 503, 'llm_unavailable');
    assert.equal(b.status, 200, b.text);
    assert.equal(b.headers.get('idempotency-replayed'), null);
    assert.equal(fake.requests.length, 2);
  });
});

describe('Idempotency-Key across a restart', () => {
  test('a reply stored before the restart replays after it, creating nothing', async () => {
    const database = await keptDatabase('idempotency-restart');
    try {
      const key = newKey();
      const before = await startService(database.at);
      const user = await before.createUser('lifecycle_marketer');
      let token = (await before.signIn(user.email)).accessToken;
      const segmentId = (await audienceOf(before, token, 1)).id;
      const first = await generate(before, token, briefFor(segmentId), key);
      assert.equal(first.status, 200, first.text);
      await before.close();

      const restarted = await startService(database.at);
      try {
        token = (await restarted.signIn(user.email)).accessToken;
        const total = await campaignTotal(restarted, token);
        const replay = await generate(restarted, token, briefFor(segmentId), key);
        assert.equal(replay.status, 200, replay.text);
        assert.equal(replay.headers.get('idempotency-replayed'), 'true');
        assert.equal(replay.text, first.text);
        assert.equal(await campaignTotal(restarted, token), total);
        assertProblem(await generate(restarted, token, briefFor(segmentId, { tone: 'urgent' }), key), 409, 'conflict');
      } finally {
        await restarted.close();
      }
    } finally {
      await database.remove();
    }
  });

  test('a key still running in a process that went away is taken over by the next one, and its late release removes nothing', async (t) => {
    const database = await keptDatabase('idempotency-gone');
    const fake = await startFakeProvider();
    const env = { LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'test-model', LLM_TIMEOUT_MS: '60000' };
    // Two processes on one database: to the second, the first's running marker is one nobody will finish. (On
    // PostgreSQL the first is an instance whose lease is ended below, as a killed one's ends; its heartbeat does not
    // come round again during the test to renew it.)
    const gone = await startService({ ...database.at, env: { ...env, INSTANCE_HEARTBEAT_MS: '300000', INSTANCE_LEASE_MS: '600000' } });
    const next = await startService({ ...database.at, env });
    t.after(async () => {
      await next.close();
      await gone.close();
      await fake.close();
      await database.remove();
    });
    const key = newKey();
    const user = await gone.createUser('lifecycle_marketer');
    const token = (await gone.signIn(user.email)).accessToken;
    const segmentId = (await audienceOf(gone, token, 1)).id;
    fake.enqueue({ hang: true }, copyReply(GOOD_COPY));
    const client = new AbortController();
    const stuck = fetch(`${gone.url}/v1/campaigns/generate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(briefFor(segmentId)),
      signal: client.signal,
    }).catch((error: unknown) => error);
    await fake.waitForRequests(1); // the first process holds the key and is stuck in the model call
    if ('databaseUrl' in database.at) await gone.query('UPDATE service_instances SET expires_at = 0 WHERE id = (SELECT owner FROM idempotency_keys WHERE key = ?)', key);

    const taken = await generate(next, token, briefFor(segmentId), key);
    assert.equal(taken.status, 200, taken.text);
    assert.equal(taken.headers.get('idempotency-replayed'), null);

    // The stuck request ends at last: its process releases the key it no longer holds.
    client.abort();
    assert.ok((await stuck) instanceof Error);
    await fake.waitForAborts(1);
    for (const service of [next, gone]) {
      const replay = await generate(service, token, briefFor(segmentId), key);
      assert.equal(replay.headers.get('idempotency-replayed'), 'true', replay.text);
      assert.equal(replay.text, taken.text);
    }
    assert.equal(fake.requests.length, 2);
  });
});

describe('Idempotency-Key: the guard and its claims', () => {
  test('a duplicate that finds the first one\'s marker before the first has heard back from its claim waits for it and replays', async () => {
    const service = await startService();
    const stored = idempotencyKeysOn(service.anyEngine, 'this-process');
    // The first claim commits, but its answer comes late (as it may over a network): the duplicate's claim runs meanwhile.
    let answerFirst = () => {};
    const firstAnswered = new Promise<void>((resolve) => (answerFirst = resolve));
    const claimed: (() => void)[] = [];
    const claimsDone = [0, 1].map((i) => new Promise<void>((resolve) => (claimed[i] = resolve)));
    let claims = 0;
    const keys: IdempotencyKeyRepository = {
      ...stored,
      async claimKey(...args) {
        const claim = await stored.claimKey(...args);
        const nth = claims++;
        claimed[nth]?.();
        if (nth === 0) await firstAnswered;
        return claim;
      },
    };
    const guard = idempotentRequests(keys, new LocalInFlightRequests(), () => new Date('2026-11-20T12:00:00.000Z'));
    const request = () =>
      ({ req: { headers: { 'idempotency-key': 'guard-key' } }, user: { id: 'user-1', role: 'admin' }, route: { operation: { operationId: 'campaigns.generate' } }, input: { params: {}, rawBody: { objective: 'same' } } }) as unknown as Context;
    let runs = 0;
    const handler = (ctx: Context) => async () => {
      ctx.reply = { status: 200, headers: {}, body: { run: ++runs } };
    };
    try {
      const [a, b] = [request(), request()];
      const first = guard.middleware(a, handler(a));
      await claimsDone[0]; // the first's marker is in the database; the first has not heard back yet
      const second = guard.middleware(b, handler(b));
      await claimsDone[1]; // the duplicate found the marker ...
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); // ... and has decided what to do
      answerFirst();
      await Promise.all([first, second]);
      assert.equal(runs, 1, 'the operation ran twice');
      assert.deepEqual(a.reply?.body, { run: 1 });
      assert.equal(b.reply?.headers['idempotency-replayed'], 'true');
      assert.equal(b.reply?.raw, JSON.stringify({ run: 1 }));
    } finally {
      await service.close();
    }
  });
});

/** The idempotency keys stored on the engine, claimed as the process `owner`. */
function idempotencyKeysOn(engine: ServiceEngine, owner: string): IdempotencyKeyRepository {
  return engine.kind === 'sqlite' ? createIdempotencyKeyRepository(engine, owner) : createPgIdempotencyKeyRepository(engine, owner);
}

describe('model-call rate limit', () => {
  let service: TestService;
  let segmentId: string;
  const ENV = { MODEL_CALLS_PER_MINUTE: '2', ACCESS_TOKEN_TTL: '86400' };

  before(async () => {
    service = await startService({ env: ENV });
    segmentId = (await audienceOf(service, await service.tokenFor('admin'), 1)).id;
  });
  after(() => service.close());

  test('MODEL_CALLS_PER_MINUTE=2: the third generation is 429 rate_limited with Retry-After in whole seconds, nothing created', async () => {
    const token = await service.tokenFor('lifecycle_marketer');
    for (let i = 0; i < 2; i++) assert.equal((await generate(service, token, briefFor(segmentId))).status, 200);
    const total = await campaignTotal(service, token);
    const refused = await generate(service, token, briefFor(segmentId));
    assertProblem(refused, 429, 'rate_limited');
    const retryAfter = refused.headers.get('retry-after') ?? '';
    assert.match(retryAfter, /^\d+$/);
    assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, retryAfter);
    assert.equal(await campaignTotal(service, token), total);
  });

  test('a replay does not count, and is answered even when the limit is reached', async () => {
    const token = await service.tokenFor('lifecycle_marketer');
    const key = newKey();
    const first = await generate(service, token, briefFor(segmentId), key);
    assert.equal(first.status, 200, first.text);
    for (let i = 0; i < 3; i++) assert.equal((await generate(service, token, briefFor(segmentId), key)).headers.get('idempotency-replayed'), 'true');
    assert.equal((await generate(service, token, briefFor(segmentId))).status, 200, 'the second call within the limit');
    assertProblem(await generate(service, token, briefFor(segmentId)), 429, 'rate_limited');
    const replay = await generate(service, token, briefFor(segmentId), key);
    assert.equal(replay.status, 200, replay.text);
    assert.equal(replay.text, first.text);
  });

  test('a request that fails validation does not count', async () => {
    const token = await service.tokenFor('lifecycle_marketer');
    for (let i = 0; i < 3; i++) assertProblem(await generate(service, token, briefFor(segmentId, { channel: 'fax' as never })), 400, 'validation_failed');
    assert.equal((await generate(service, token, briefFor(segmentId))).status, 200);
    assert.equal((await generate(service, token, briefFor(segmentId))).status, 200);
  });

  test('the limit is per user, and frees up as the minute slides', async () => {
    const token = await service.tokenFor('lifecycle_marketer');
    const other = await service.tokenFor('lifecycle_marketer');
    for (let i = 0; i < 2; i++) await generate(service, token, briefFor(segmentId));
    const refused = await generate(service, token, briefFor(segmentId));
    assertProblem(refused, 429, 'rate_limited');
    assert.equal(refused.headers.get('retry-after'), '60');
    assert.equal((await generate(service, other, briefFor(segmentId))).status, 200, 'another user is not limited');
    service.clock.advance(59_000);
    const later = await generate(service, token, briefFor(segmentId));
    assertProblem(later, 429, 'rate_limited');
    assert.equal(later.headers.get('retry-after'), '1');
    service.clock.advance(1000);
    assert.equal((await generate(service, token, briefFor(segmentId))).status, 200);
  });
});
