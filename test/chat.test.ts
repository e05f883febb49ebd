// Assistant chat without a model provider (product.md section 7): threads and their ownership, messages and their
// validation, renaming, the local generator answering from live data, and the model-call rate limit.
// The clock starts at TestClock's default, 2026-11-20T12:00:00.000Z.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertProblem, startService, type Reply, type TestService } from './helpers.ts';
import { openSse } from './support/sse-client.ts';

const NOW = '2026-11-20T12:00:00.000Z';
const DAY_MS = 86_400_000;
/** Tokens live a day, so tests may move the clock forward by minutes without signing in again. */
const ENV = { ACCESS_TOKEN_TTL: '86400', MODEL_CALLS_PER_MINUTE: '1000' };

let seq = 0;
function customer(status: 'active' | 'inactive' | 'churned', totalAmountSpent: number, daysAgo: number, country = 'France') {
  seq++;
  return {
    name: `Chat Customer ${seq}`,
    email: `chat${seq}@chat.test`,
    country,
    totalTransactions: 2,
    totalAmountSpent,
    lastActivityDate: new Date(Date.parse(NOW) - daysAgo * DAY_MS).toISOString(),
    status,
  };
}

describe('chat threads and messages with the local generator', () => {
  let service: TestService;
  let alice: string;
  let bob: string;

  before(async () => {
    service = await startService({ env: ENV });
    alice = await service.tokenFor('lifecycle_marketer');
    bob = await service.tokenFor('marketing_lead');
  });
  after(() => service.close());

  const call = (method: string, path: string, token: string, body?: unknown) => service.request(method, path, { token, body });
  const ok = <T = any>(reply: Reply<T>): T => {
    assert.equal(reply.status, 200, reply.text);
    return reply.body;
  };
  const newThread = async (token = alice, body: unknown = {}) => ok(await call('POST', '/v1/chat/threads', token, body));
  const send = async (threadId: string, content: string, token = alice) => ok(await call('POST', `/v1/chat/threads/${threadId}/messages`, token, { content }));
  const messages = async (threadId: string, token = alice) => ok(await call('GET', `/v1/chat/threads/${threadId}/messages`, token));
  const thread = async (threadId: string, token = alice) => ok(await call('GET', `/v1/chat/threads/${threadId}`, token));

  describe('threads', () => {
    test('a thread created without a title has the default title and no messages', async () => {
      const created = await newThread();
      assert.deepEqual(Object.keys(created), ['id', 'title', 'messageCount', 'createdAt', 'updatedAt']);
      assert.equal(typeof created.id, 'string');
      assert.deepEqual({ ...created, id: undefined }, { id: undefined, title: 'New conversation', messageCount: 0, createdAt: service.clock.now().toISOString(), updatedAt: service.clock.now().toISOString() });
    });

    test('a given title is trimmed and kept', async () => {
      assert.equal((await newThread(alice, { title: '  Q4 planning  ' })).title, 'Q4 planning');
      assert.equal((await newThread(alice, { title: 'x'.repeat(120) })).title, 'x'.repeat(120));
    });

    test('a title must be a string of 1 to 120 characters without control characters', async () => {
      for (const title of ['', '   ', 'x'.repeat(121), 42, null, ['a'], 'tab\there']) {
        assertProblem(await call('POST', '/v1/chat/threads', alice, { title }), 400, 'validation_failed', ['title']);
      }
      assertProblem(await call('POST', '/v1/chat/threads', alice), 400, 'validation_failed', ['body']);
    });

    test('the list holds only your own threads, most recently updated first, in pages', async () => {
      const carol = await service.tokenFor('admin');
      const first = await newThread(carol, { title: 'first' });
      service.clock.advance(1000);
      const second = await newThread(carol, { title: 'second' });
      service.clock.advance(1000);
      await newThread(bob, { title: 'not carol' });
      const page = ok(await call('GET', '/v1/chat/threads', carol));
      assert.deepEqual(page, { items: [second, first], total: 2, page: 1, limit: 50 });

      service.clock.advance(1000);
      await send(first.id, 'How healthy is the base?', carol);
      const again = ok(await call('GET', '/v1/chat/threads?limit=1', carol));
      assert.deepEqual(again.items.map((t: { id: string }) => t.id), [first.id]);
      assert.equal(again.total, 2);
      const secondPage = ok(await call('GET', '/v1/chat/threads?limit=1&page=2', carol));
      assert.deepEqual(secondPage.items, [second]);
      assertProblem(await call('GET', '/v1/chat/threads?limit=201', carol), 400, 'validation_failed', ['limit']);
    });

    test('get returns the thread as created', async () => {
      const created = await newThread(alice, { title: 'Get me' });
      assert.deepEqual(await thread(created.id), created);
    });

    test('an unknown thread is 404 not_found on every operation', async () => {
      const id = 'no-such-thread';
      assertProblem(await call('GET', `/v1/chat/threads/${id}`, alice), 404, 'not_found');
      assertProblem(await call('DELETE', `/v1/chat/threads/${id}`, alice), 404, 'not_found');
      assertProblem(await call('GET', `/v1/chat/threads/${id}/messages`, alice), 404, 'not_found');
      assertProblem(await call('POST', `/v1/chat/threads/${id}/messages`, alice, { content: 'hi' }), 404, 'not_found');
      const stream = await openSse(`${service.url}/v1/chat/threads/${id}/messages/stream`, { token: alice, body: { content: 'hi' } });
      assert.equal(stream.status, 404);
      assert.match(stream.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(stream.body.code, 'not_found');
    });

    test("another user's thread is 404 not_found on every operation, and survives them all", async () => {
      const mine = await newThread(alice, { title: 'Private' });
      await send(mine.id, 'hello');
      const before = await thread(mine.id);
      const storedBefore = await messages(mine.id);
      const path = `/v1/chat/threads/${mine.id}`;
      assertProblem(await call('GET', path, bob), 404, 'not_found');
      assertProblem(await call('GET', `${path}/messages`, bob), 404, 'not_found');
      assertProblem(await call('POST', `${path}/messages`, bob, { content: 'intrusion' }), 404, 'not_found');
      const stream = await openSse(`${service.url}${path}/messages/stream`, { token: bob, body: { content: 'intrusion' } });
      assert.equal(stream.status, 404);
      assert.equal(stream.body.code, 'not_found');
      assertProblem(await call('DELETE', path, bob), 404, 'not_found');
      assert.deepEqual(await thread(mine.id), before);
      assert.deepEqual(await messages(mine.id), storedBefore);
      assert.equal(storedBefore.length, 2);
      assert.equal(ok(await call('GET', '/v1/chat/threads', bob)).items.some((t: { id: string }) => t.id === mine.id), false);
    });

    test('delete answers null and takes the messages with the thread', async () => {
      const doomed = await newThread();
      await send(doomed.id, 'one');
      await send(doomed.id, 'two');
      const stored = () => service.queryValue('SELECT count(*) AS n FROM chat_messages WHERE thread_id = ?', doomed.id);
      assert.equal(await stored(), 4);
      const reply = await call('DELETE', `/v1/chat/threads/${doomed.id}`, alice);
      assert.equal(reply.status, 200);
      assert.equal(reply.text, 'null');
      assert.equal(await stored(), 0);
      assertProblem(await call('GET', `/v1/chat/threads/${doomed.id}`, alice), 404, 'not_found');
      assertProblem(await call('GET', `/v1/chat/threads/${doomed.id}/messages`, alice), 404, 'not_found');
      assertProblem(await call('DELETE', `/v1/chat/threads/${doomed.id}`, alice), 404, 'not_found');
    });
  });

  describe('titles', () => {
    test('the first message renames a default-titled thread to its first line', async () => {
      const t = await newThread();
      await send(t.id, '  Which segment is largest?\nAnd what should we send it?');
      assert.equal((await thread(t.id)).title, 'Which segment is largest?');
    });

    test('a first line longer than 60 characters is cut to 60 with an ellipsis', async () => {
      const t = await newThread();
      const line = `${'a'.repeat(58)}bcdef`;
      await send(t.id, `${line}\nsecond line`);
      assert.equal((await thread(t.id)).title, `${'a'.repeat(58)}b…`);
      // A cut that ends in a space drops it; a character outside the BMP counts as one and is never split.
      const spaced = await newThread();
      await send(spaced.id, `Tell me everything about the customers who bought the most in the autumn`);
      assert.equal((await thread(spaced.id)).title, 'Tell me everything about the customers who bought the most…');
      const emoji = await newThread();
      await send(emoji.id, '🙂'.repeat(61));
      assert.equal((await thread(emoji.id)).title, `${'🙂'.repeat(59)}…`);
      const exact = await newThread();
      await send(exact.id, 'c'.repeat(60));
      assert.equal((await thread(exact.id)).title, 'c'.repeat(60));
    });

    test('only the first message renames', async () => {
      const t = await newThread();
      await send(t.id, 'First question');
      await send(t.id, 'Second question');
      assert.equal((await thread(t.id)).title, 'First question');
    });

    test('an explicit title is kept, even the default text', async () => {
      const named = await newThread(alice, { title: 'Board meeting prep' });
      await send(named.id, 'How healthy is the base?');
      assert.equal((await thread(named.id)).title, 'Board meeting prep');
      const literal = await newThread(alice, { title: 'New conversation' });
      await send(literal.id, 'How healthy is the base?');
      assert.equal((await thread(literal.id)).title, 'New conversation');
    });

    test('the streamed first message renames the thread too', async () => {
      const t = await newThread();
      const stream = await openSse(`${service.url}/v1/chat/threads/${t.id}/messages/stream`, { token: alice, body: { content: 'Streamed title' } });
      await stream.rest();
      assert.equal((await thread(t.id)).title, 'Streamed title');
    });
  });

  describe('messages', () => {
    test('send answers both stored messages; model only on the assistant message', async () => {
      const t = await newThread();
      service.clock.advance(60_000);
      const { userMessage, assistantMessage, ...rest } = await send(t.id, '  How healthy is the base?  ');
      assert.deepEqual(rest, {});
      assert.deepEqual(Object.keys(userMessage), ['id', 'threadId', 'role', 'content', 'createdAt']);
      assert.deepEqual({ ...userMessage, id: 0 }, { id: 0, threadId: t.id, role: 'user', content: 'How healthy is the base?', createdAt: service.clock.now().toISOString() });
      assert.deepEqual(Object.keys(assistantMessage), ['id', 'threadId', 'role', 'content', 'model', 'createdAt']);
      assert.equal(assistantMessage.role, 'assistant');
      assert.equal(assistantMessage.model, 'local');
      assert.ok(assistantMessage.content.length > 0);
      assert.deepEqual(await messages(t.id), [userMessage, assistantMessage]);
      const after = await thread(t.id);
      assert.equal(after.messageCount, 2);
      assert.equal(after.updatedAt, service.clock.now().toISOString());
      assert.notEqual(after.updatedAt, t.updatedAt);
    });

    test('messages are listed oldest first', async () => {
      const t = await newThread();
      for (const content of ['one', 'two', 'three']) {
        service.clock.advance(1000);
        await send(t.id, content);
      }
      const list = await messages(t.id);
      assert.deepEqual(list.map((m: { role: string }) => m.role), ['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
      assert.deepEqual(list.filter((m: { role: string }) => m.role === 'user').map((m: { content: string }) => m.content), ['one', 'two', 'three']);
      assert.deepEqual(list.map((m: { model?: string }) => m.model), [undefined, 'local', undefined, 'local', undefined, 'local']);
      assert.equal(list.some((m: object) => 'model' in m && (m as { model: unknown }).model === null), false);
      assert.equal((await thread(t.id)).messageCount, 6);
    });

    test('content is trimmed and holds 1 to 8000 characters; line breaks are allowed', async () => {
      const t = await newThread();
      const longest = 'y'.repeat(8000);
      assert.equal((await send(t.id, `  ${longest}\n `)).userMessage.content, longest);
      assert.equal((await send(t.id, 'line one\nline two')).userMessage.content, 'line one\nline two');
      for (const content of ['', '  \n ', 'z'.repeat(8001), 7, null, 'bell\u0007']) {
        assertProblem(await call('POST', `/v1/chat/threads/${t.id}/messages`, alice, { content }), 400, 'validation_failed', ['content']);
      }
      assertProblem(await call('POST', `/v1/chat/threads/${t.id}/messages`, alice, {}), 400, 'validation_failed', ['content']);
      assert.equal((await thread(t.id)).messageCount, 4);
    });

    test('8001 characters to the stream is a 400 problem document, not an event stream, and stores nothing', async () => {
      const t = await newThread();
      const stream = await openSse(`${service.url}/v1/chat/threads/${t.id}/messages/stream`, { token: alice, body: { content: 'z'.repeat(8001) } });
      assert.equal(stream.status, 400);
      assert.match(stream.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(stream.body.code, 'validation_failed');
      assert.deepEqual(stream.body.errors.map((e: { field: string }) => e.field), ['content']);
      assert.equal((await thread(t.id)).messageCount, 0);
    });

    test('without a token every chat operation is 401', async () => {
      assertProblem(await service.request('GET', '/v1/chat/threads'), 401, 'unauthenticated');
      assertProblem(await service.request('POST', '/v1/chat/threads', { body: {} }), 401, 'unauthenticated');
      assertProblem(await service.request('DELETE', '/v1/chat/threads/x'), 401, 'unauthenticated');
      assertProblem(await service.request('POST', '/v1/chat/threads/x/messages/stream', { body: { content: 'hi' } }), 401, 'unauthenticated');
    });
  });
});

describe('the local generator', () => {
  let service: TestService;
  let token: string;
  before(async () => {
    service = await startService({ env: ENV });
    token = await service.tokenFor('lifecycle_marketer');
  });
  after(() => service.close());

  const ok = <T = any>(reply: Reply<T>): T => {
    assert.equal(reply.status, 200, reply.text);
    return reply.body;
  };
  const post = async (path: string, body: unknown) => ok(await service.request('POST', path, { token, body }));
  /** Asks in a fresh thread and returns the reply text. */
  const ask = async (content: string): Promise<string> => {
    const t = await post('/v1/chat/threads', {});
    return (await post(`/v1/chat/threads/${t.id}/messages`, { content })).assistantMessage.content;
  };

  test('streams its reply in small pieces that join to the stored message', async () => {
    const t = await post('/v1/chat/threads', {});
    const stream = await openSse(`${service.url}/v1/chat/threads/${t.id}/messages/stream`, { token, body: { content: 'How healthy is the base overall?' } });
    assert.equal(stream.status, 200);
    const [start, ...others] = await stream.rest();
    const done = others.pop();
    const stored = ok(await service.request('GET', `/v1/chat/threads/${t.id}/messages`, { token }));
    assert.deepEqual(start, { type: 'start', threadId: t.id, userMessageId: stored[0].id });
    assert.ok(others.length > 3, `only ${others.length} deltas`);
    assert.ok(others.every((f: { type: string; text: string }) => f.type === 'delta' && f.text.length > 0));
    assert.equal(done.type, 'done');
    assert.deepEqual(done.assistantMessage, stored[1]);
    assert.equal(others.map((f: { text: string }) => f.text).join(''), stored[1].content);
    assert.equal(stored[1].model, 'local');
  });

  // The tests below build on each other's data, in order: an empty base, then four customers, then six, then seven.
  test('answers from live data: the answer follows the customers', async () => {
    const atRisk = () => ask('How many customers are at risk or churned?');
    assert.match(await atRisk(), /no customers yet/);

    for (const c of [customer('active', 100, 5), customer('active', 50, 90), customer('inactive', 20, 30), customer('churned', 10, 200)]) {
      await post('/v1/customers', c);
    }
    const first = await atRisk();
    assert.match(first, /^2 customers are at risk: 1 inactive and 1 marked active but idle for more than 60 days \(50% of the base\)\.\n1 customer has already churned \(25%\)\./);

    await post('/v1/customers', customer('inactive', 5, 10));
    await post('/v1/customers', customer('churned', 5, 10));
    const second = await atRisk();
    assert.notEqual(second, first);
    assert.match(second, /^3 customers are at risk: 2 inactive and 1 marked active but idle for more than 60 days \(50% of the base\)\.\n2 customers have already churned \(33\.3%\)\./);
  });

  test('answers from live data: the largest segment follows the saved segments', async () => {
    const largest = () => ask('Which segment is largest?');
    assert.match(await largest(), /no saved segments/i);
    await post('/v1/segments', { name: 'French buyers', conditions: [{ field: 'country', operator: 'eq', value: 'France' }] });
    await post('/v1/segments', { name: 'Big spenders', conditions: [{ field: 'totalAmountSpent', operator: 'gte', value: 50 }] });
    assert.match(await largest(), /^The largest saved segment is “French buyers” \(customers in France, 6 customers\), 100% of the base\.\nNext largest:\n- “Big spenders” \(customers who spent at least 50 in total, 2 customers\)/);
    await post('/v1/customers', customer('active', 500, 1, 'Spain'));
    await post('/v1/segments', { name: 'Everyone active lately', conditions: [{ field: 'lastActivityDays', operator: 'lt', value: 365 }] });
    assert.match(await largest(), /^The largest saved segment is “Everyone active lately” \(customers active in the last 365 days, 7 customers\)/);
  });

  test('suggests what to send to a named segment, from its conditions', async () => {
    assert.match(await ask('What should we send to Big spenders?'), /^For “Big spenders” \(customers who spent at least 50 in total, 2 customers\): an email that rewards loyalty/);
    assert.match(await ask('Send an SMS to french buyers?'), /^For “French buyers” \(customers in France, 6 customers\): an SMS with your current best offer[^\n]*\nWrite it for readers in France/);
    assert.match(await ask('What campaign for customers at risk?'), /^For the 3 customers at risk \(2 inactive, 1 idle but marked active\): a win-back email/);
  });

  test("reports the top customers' value without names or emails", async () => {
    const reply = await ask('Who are our top customers by value?');
    assert.match(reply, /^Your top 5 customers spent 680\.00 together, 98\.6% of the base's lifetime value of 690\.00\.\n1\. 500\.00 over 2 purchases \(Spain, active\)\n/);
    assert.match(reply, /spent at least 10\.00/);
    assert.doesNotMatch(reply, /Chat Customer|@chat\.test/);
  });

  test('reports health with its parts', async () => {
    // 7 customers: 3 active (one idle for 90 days), 2 inactive, 2 churned.
    const health = ok(await service.request('GET', '/v1/customers/health', { token }));
    const reply = await ask('How are we doing overall?');
    assert.ok(reply.startsWith(`Health score: ${health.score}/100 (${health.level}). Active share ${health.activeShare}%, churned share ${health.churnedShare}%, 2 inactive`), reply);
    assert.match(reply, /Customers: 7 in total — 3 active, 2 inactive, 2 churned\./);
    assert.match(reply, /1 marked active but idle for more than 60 days/);
  });

  test('is deterministic: the same question on the same data gives the same reply', async () => {
    assert.equal(await ask('Give me an overview'), await ask('Give me an overview'));
  });

  test('an unknown question gets a summary with what to ask, not an apology', async () => {
    const reply = await ask('Tell me a joke about penguins');
    assert.match(reply, /^Here is where the base stands\.\nCustomers: 7 in total/);
    assert.match(reply, /You can ask me about/);
    assert.doesNotMatch(reply, /sorry|cannot|can't/i);
  });
});

describe('chat rate limit', () => {
  let service: TestService;
  let token: string;
  before(async () => {
    service = await startService({ env: { MODEL_CALLS_PER_MINUTE: '2' } });
    token = await service.tokenFor('lifecycle_marketer');
  });
  after(() => service.close());

  test('send and stream share the model-call limit; past it both are 429 problems before any stream opens', async () => {
    const t = (await service.request('POST', '/v1/chat/threads', { token, body: {} })).body;
    assert.equal((await service.request('POST', `/v1/chat/threads/${t.id}/messages`, { token, body: { content: 'one' } })).status, 200);
    const first = await openSse(`${service.url}/v1/chat/threads/${t.id}/messages/stream`, { token, body: { content: 'two' } });
    assert.equal(first.status, 200);
    await first.rest();

    const refused = await service.request('POST', `/v1/chat/threads/${t.id}/messages`, { token, body: { content: 'three' } });
    assertProblem(refused, 429, 'rate_limited');
    assert.match(refused.headers.get('retry-after') ?? '', /^\d+$/);
    const stream = await openSse(`${service.url}/v1/chat/threads/${t.id}/messages/stream`, { token, body: { content: 'four' } });
    assert.equal(stream.status, 429);
    assert.match(stream.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(stream.body.code, 'rate_limited');
    assert.ok(Number(stream.headers.get('retry-after')) >= 1);
    assert.equal((await service.request('GET', `/v1/chat/threads/${t.id}`, { token })).body.messageCount, 4);

    service.clock.advance(60_001);
    assert.equal((await service.request('POST', `/v1/chat/threads/${t.id}/messages`, { token, body: { content: 'five' } })).status, 200);
  });
});

describe('chat in the machine description', () => {
  test('every chat operation has its id and the chat tag; the stream is text/event-stream with its five frames', async () => {
    const service = await startService();
    try {
      const doc = (await service.request('GET', '/v1/openapi.json')).body;
      const ops = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, op]) => ({ path, method, ...op })),
      );
      const chat = ops.filter((op) => op.tags.includes('chat'));
      assert.deepEqual(chat.map((op) => `${op.method} ${op.path} ${op.operationId}`), [
        'post /v1/chat/threads chat.threads.create',
        'get /v1/chat/threads chat.threads.list',
        'get /v1/chat/threads/{id} chat.threads.get',
        'delete /v1/chat/threads/{id} chat.threads.delete',
        'get /v1/chat/threads/{id}/messages chat.messages.list',
        'post /v1/chat/threads/{id}/messages chat.messages.send',
        'post /v1/chat/threads/{id}/messages/stream chat.messages.stream',
        'post /v1/chat/threads/{id}/actions/{actionId}/confirm chat.actions.confirm',
        'post /v1/chat/threads/{id}/actions/{actionId}/reject chat.actions.reject',
      ]);
      const byId = (id: string) => chat.find((op) => op.operationId === id);
      assert.deepEqual(Object.keys(byId('chat.threads.delete').responses), ['200', '401', '404', '500', '503']);
      assert.deepEqual(Object.keys(byId('chat.messages.send').responses), ['200', '400', '401', '404', '413', '415', '429', '500', '502', '503']);
      const stream = byId('chat.messages.stream');
      assert.ok(stream.responses['429'], 'the stream documents rate_limited');
      const content = stream.responses['200'].content;
      assert.deepEqual(Object.keys(content), ['text/event-stream']);
      const frames = content['text/event-stream']['x-sse-data'].oneOf;
      assert.deepEqual(frames.map((f: any) => f.properties.type.const), ['start', 'delta', 'action', 'done', 'error']);
      assert.deepEqual(frames[4].properties.code.enum.slice(0, 2), ['llm_unavailable', 'llm_error']);
    } finally {
      await service.close();
    }
  });
});
