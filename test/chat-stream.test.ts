// Assistant chat against a model provider (product.md section 7): the streamed reply in both wire formats through
// the fake provider, failures before and during a stream, whole replies and their failures, client disconnects,
// heartbeats, back-pressure, open-stream caps, and what the prompt carries (grounding, history, budget).
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { startFakeProvider, type FakeProvider, type RecordedRequest } from './support/fake-provider.ts';
import { openSse } from './support/sse-client.ts';

const NOW = '2026-11-20T12:00:00.000Z';
const DAY_MS = 86_400_000;
const BASE_ENV = { ACCESS_TOKEN_TTL: '86400', MODEL_CALLS_PER_MINUTE: '10000', LLM_MODEL: 'test-model', LLM_API_KEY: 'k', LLM_MAX_RETRIES: '0' };

type Format = 'openai' | 'anthropic';

/** The system text and the turns of a recorded provider request, whichever the wire format. */
function promptOf(recorded: RecordedRequest): { system: string; messages: { role: string; content: string }[] } {
  const body = recorded.body;
  if (recorded.path === '/v1/messages') return { system: body.system, messages: body.messages };
  const [system, ...messages] = body.messages;
  assert.equal(system.role, 'system');
  return { system: system.content, messages };
}

interface Setup {
  fake: FakeProvider;
  service: TestService;
  token: string;
  thread(): Promise<{ id: string }>;
  stream(threadId: string, content: string): ReturnType<typeof openSse>;
  messages(threadId: string): Promise<{ id: string; role: string; content: string; model?: string }[]>;
}

async function setup(format: Format, env: Record<string, string> = {}): Promise<Setup> {
  const fake = await startFakeProvider();
  const service = await startService({ env: { ...BASE_ENV, LLM_PROVIDER: format, LLM_BASE_URL: fake.url, ...env } });
  const token = await service.tokenFor('lifecycle_marketer');
  return {
    fake,
    service,
    token,
    thread: async () => (await service.request('POST', '/v1/chat/threads', { token, body: {} })).body,
    stream: (threadId, content) => openSse(`${service.url}/v1/chat/threads/${threadId}/messages/stream`, { token, body: { content } }),
    messages: async (threadId) => (await service.request('GET', `/v1/chat/threads/${threadId}/messages`, { token })).body,
  };
}

for (const format of ['openai', 'anthropic'] as const) {
  describe(`streamed replies through the ${format} wire format`, () => {
    let s: Setup;
    before(async () => {
      s = await setup(format);
    });
    after(async () => {
      await s.service.close();
      await s.fake.close();
    });

    test('the provider pieces arrive as deltas, in order, and are stored joined', async () => {
      const t = await s.thread();
      s.fake.enqueue({ pieces: ['Your base ', 'is healthy', ': 72/100.', '\nTarget the idle actives.'] });
      const stream = await s.stream(t.id, 'How are we doing?');
      assert.equal(stream.status, 200);
      assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.equal(stream.headers.get('cache-control'), 'no-cache, no-transform');
      assert.equal(stream.headers.get('x-accel-buffering'), 'no');
      const frames = await stream.rest();
      const stored = await s.messages(t.id);
      assert.deepEqual(frames, [
        { type: 'start', threadId: t.id, userMessageId: stored[0]!.id },
        { type: 'delta', text: 'Your base ' },
        { type: 'delta', text: 'is healthy' },
        { type: 'delta', text: ': 72/100.' },
        { type: 'delta', text: '\nTarget the idle actives.' },
        { type: 'done', assistantMessage: stored[1] },
      ]);
      assert.equal(stored[1]!.content, 'Your base is healthy: 72/100.\nTarget the idle actives.');
      assert.equal(stored[1]!.model, 'test-model');
      assert.equal(stored[0]!.content, 'How are we doing?');
      assert.equal(s.fake.requests.at(-1)!.body.stream, true);
    });

    test('a failure before the first piece gives start, then error; only the question is stored', async () => {
      const t = await s.thread();
      s.fake.enqueue({ status: 500 });
      const stream = await s.stream(t.id, 'Anything?');
      assert.equal(stream.status, 200);
      const frames = await stream.rest();
      assert.equal(frames.length, 2);
      assert.equal(frames[0].type, 'start');
      assert.deepEqual(Object.keys(frames[1]), ['type', 'code', 'message']);
      assert.equal(frames[1].type, 'error');
      assert.equal(frames[1].code, 'llm_unavailable');
      assert.deepEqual((await s.messages(t.id)).map((m) => m.role), ['user']);
    });

    test('a failure mid-stream ends with error after the pieces sent; no assistant message is stored', async () => {
      const t = await s.thread();
      s.fake.enqueue({ pieces: ['one ', 'two ', 'three'], failAfter: 2, failWith: 'cut' });
      const frames = await (await s.stream(t.id, 'Count for me')).rest();
      assert.deepEqual(frames.slice(1, 3), [{ type: 'delta', text: 'one ' }, { type: 'delta', text: 'two ' }]);
      assert.equal(frames.length, 4);
      assert.equal(frames[3].type, 'error');
      assert.equal(frames[3].code, 'llm_unavailable');
      const stored = await s.messages(t.id);
      assert.deepEqual(stored.map((m) => m.role), ['user']);
      assert.equal((await s.service.request('GET', `/v1/chat/threads/${t.id}`, { token: s.token })).body.messageCount, 1);
    });

    test('an error event from the provider mid-stream also ends with error', async () => {
      const t = await s.thread();
      s.fake.enqueue({ pieces: ['partial', 'never'], failAfter: 1, failWith: 'error' });
      const frames = await (await s.stream(t.id, 'Go')).rest();
      assert.deepEqual(frames.map((f) => f.type), ['start', 'delta', 'error']);
      assert.deepEqual((await s.messages(t.id)).map((m) => m.role), ['user']);
    });

    test('the whole reply is stored with the question; a provider failure is 503 and stores nothing', async () => {
      const t = await s.thread();
      s.fake.enqueue({ text: 'Send the win-back email.' });
      const ok = await s.service.request('POST', `/v1/chat/threads/${t.id}/messages`, { token: s.token, body: { content: 'What now?' } });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.assistantMessage.content, 'Send the win-back email.');
      assert.equal(ok.body.assistantMessage.model, 'test-model');
      assert.equal(s.fake.requests.at(-1)!.body.stream, true, 'every provider call is streamed, a whole reply too');

      s.fake.enqueue({ status: 500 });
      assertProblem(await s.service.request('POST', `/v1/chat/threads/${t.id}/messages`, { token: s.token, body: { content: 'Again?' } }), 503, 'llm_unavailable');
      assert.deepEqual((await s.messages(t.id)).map((m) => m.content), ['What now?', 'Send the win-back email.']);
    });

    test('an unusable whole reply is 502 llm_error and stores nothing', async () => {
      const t = await s.thread();
      s.fake.enqueue({ status: 200, body: '<html>not json</html>' });
      assertProblem(await s.service.request('POST', `/v1/chat/threads/${t.id}/messages`, { token: s.token, body: { content: 'Hello?' } }), 502, 'llm_error');
      s.fake.enqueue({ text: '   ' });
      assertProblem(await s.service.request('POST', `/v1/chat/threads/${t.id}/messages`, { token: s.token, body: { content: 'Hello?' } }), 502, 'llm_error');
      assert.deepEqual(await s.messages(t.id), []);
      assert.equal((await s.service.request('GET', `/v1/chat/threads/${t.id}`, { token: s.token })).body.title, 'New conversation');
    });

    test('a blank streamed reply ends with an llm_error frame and is not stored', async () => {
      const t = await s.thread();
      s.fake.enqueue({ pieces: [' ', '\n'] });
      const frames = await (await s.stream(t.id, 'Hello?')).rest();
      assert.equal(frames.at(-1).type, 'error');
      assert.equal(frames.at(-1).code, 'llm_error');
      assert.deepEqual((await s.messages(t.id)).map((m) => m.role), ['user']);
    });

    test('a thread deleted while its reply streams ends with a not_found error frame', { timeout: 10_000 }, async () => {
      const t = await s.thread();
      s.fake.enqueue({ pieces: ['before ', 'after'], intervalMs: 500 });
      const stream = await s.stream(t.id, 'Delete me midway');
      assert.equal((await stream.nextEvent()).type, 'start');
      assert.deepEqual(await stream.nextEvent(), { type: 'delta', text: 'before ' });
      assert.equal((await s.service.request('DELETE', `/v1/chat/threads/${t.id}`, { token: s.token })).status, 200);
      const rest = await stream.rest();
      assert.deepEqual(rest.map((f) => f.type), ['delta', 'error']);
      assert.equal(rest[1].code, 'not_found');
      assert.equal(await s.service.queryValue('SELECT count(*) AS n FROM chat_messages WHERE thread_id = ?', t.id), 0);
    });

    test('a client that disconnects aborts the provider request; nothing more is stored', { timeout: 10_000 }, async () => {
      const t = await s.thread();
      const abortsBefore = s.fake.requests.filter((r) => r.aborted).length;
      s.fake.enqueue({ pieces: ['first ', 'never sent'], intervalMs: 60_000 });
      const stream = await s.stream(t.id, 'Start and leave');
      assert.equal((await stream.nextEvent()).type, 'start');
      assert.deepEqual(await stream.nextEvent(), { type: 'delta', text: 'first ' });
      stream.abort();
      const aborted = await s.fake.waitForAborts(abortsBefore + 1);
      assert.equal(aborted.at(-1), s.fake.requests.at(-1));
      assert.deepEqual((await s.messages(t.id)).map((m) => m.role), ['user']);
    });
  });
}

describe('stream transport', () => {
  let s: Setup;
  before(async () => {
    s = await setup('openai', { CHAT_HEARTBEAT_MS: '40' });
  });
  after(async () => {
    await s.service.close();
    await s.fake.close();
  });

  test('headers come at once and a keep-alive comment arrives while the provider is silent', { timeout: 10_000 }, async () => {
    const t = await s.thread();
    s.fake.enqueue({ hang: true });
    // The provider has not answered at all: the headers and the start frame still arrive.
    const stream = await s.stream(t.id, 'Take your time');
    assert.equal(stream.status, 200);
    const start = await stream.next();
    assert.equal(start?.kind === 'event' && start.json.type, 'start');
    assert.deepEqual(await stream.next(), { kind: 'comment', text: 'keep-alive' });
    assert.deepEqual(await stream.next(), { kind: 'comment', text: 'keep-alive' });
    stream.abort();
    await s.fake.waitForAborts(1);
  });
});

describe('open stream caps', () => {
  let s: Setup;
  before(async () => {
    s = await setup('openai', { CHAT_STREAMS_PER_USER: '2', CHAT_STREAMS_TOTAL: '3' });
  });
  after(async () => {
    await s.service.close();
    await s.fake.close();
  });

  test('a user may hold 2 streams and the service 3; more are 429 problems before any stream opens', { timeout: 10_000 }, async () => {
    s.fake.defaultReply = { hang: true };
    const other = await s.service.tokenFor('marketing_lead');
    const third = await s.service.tokenFor('admin');
    const t = await s.thread();
    const open = [await s.stream(t.id, 'one'), await s.stream(t.id, 'two')];
    await s.fake.waitForRequests(2);

    const refused = await s.stream(t.id, 'three');
    assert.equal(refused.status, 429);
    assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(refused.body.code, 'rate_limited');
    assert.equal(refused.headers.get('retry-after'), '1');

    const otherThread = (await s.service.request('POST', '/v1/chat/threads', { token: other, body: {} })).body;
    const path = (id: string) => `${s.service.url}/v1/chat/threads/${id}/messages/stream`;
    open.push(await openSse(path(otherThread.id), { token: other, body: { content: 'mine' } }));
    assert.equal(open[2]!.status, 200);
    await s.fake.waitForRequests(3);

    const thirdThread = (await s.service.request('POST', '/v1/chat/threads', { token: third, body: {} })).body;
    const full = await openSse(path(thirdThread.id), { token: third, body: { content: 'full' } });
    assert.equal(full.status, 429);
    assert.equal(full.body.code, 'rate_limited');
    assert.match(full.body.detail, /the service has 3 open/);
    // The refused requests stored no question.
    assert.equal((await s.service.request('GET', `/v1/chat/threads/${thirdThread.id}`, { token: third })).body.messageCount, 0);
    assert.equal((await s.service.request('GET', `/v1/chat/threads/${t.id}`, { token: s.token })).body.messageCount, 2);

    // A closed stream frees its slot.
    open[0]!.abort();
    await s.fake.waitForAborts(1);
    const again = await s.stream(t.id, 'three again');
    assert.equal(again.status, 200);
    for (const stream of [...open, again]) stream.abort();
    await s.fake.waitForAborts(4);
    s.fake.defaultReply = { text: 'fake reply' };
  });
});

describe('caps and the model-call budget', () => {
  test('a stream refused by the open-stream cap costs nothing of the per-user model-call budget', { timeout: 10_000 }, async () => {
    const s = await setup('openai', { CHAT_STREAMS_PER_USER: '1', MODEL_CALLS_PER_MINUTE: '2' });
    try {
      s.fake.defaultReply = { hang: true };
      const t = await s.thread();
      const first = await s.stream(t.id, 'one');
      await s.fake.waitForRequests(1);
      for (let i = 0; i < 3; i++) assert.equal((await s.stream(t.id, 'refused')).status, 429);
      first.abort();
      await s.fake.waitForAborts(1);
      const second = await s.stream(t.id, 'two'); // the second call of the budget: the refusals used none
      assert.equal(second.status, 200);
      second.abort();
      await s.fake.waitForAborts(2);
      const third = await s.stream(t.id, 'three');
      assert.equal(third.status, 429);
      assert.match(third.body.detail, /model requests/i);
    } finally {
      await s.service.close();
      await s.fake.close();
    }
  });
});

describe('back-pressure', () => {
  const PIECE = 'x'.repeat(16 * 1024);
  const PIECES = 4096; // 64 MiB in all
  const TOTAL = PIECE.length * PIECES;

  test('a client that does not read stops the server reading the model: buffered bytes stay bounded', { timeout: 20_000 }, async () => {
    // A provider whose reply is produced only as the service pulls it, so the bytes pulled say how far it read.
    let pulled = 0;
    let cancelled: () => void;
    const wasCancelled = new Promise<void>((resolve) => (cancelled = resolve));
    let firstPull: () => void;
    const started = new Promise<void>((resolve) => (firstPull = resolve));
    const encoder = new TextEncoder();
    const providerFetch: typeof fetch = async (_url, init) => {
      let sent = 0;
      const body = new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            firstPull();
            if (sent === PIECES) {
              controller.enqueue(encoder.encode('data: [DONE]\n\n'));
              controller.close();
              return;
            }
            sent++;
            pulled += PIECE.length;
            controller.enqueue(encoder.encode(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: PIECE } }] })}\n\n`));
          },
          cancel: () => cancelled(),
        },
        { highWaterMark: 0 },
      );
      init?.signal?.addEventListener('abort', () => cancelled());
      return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    };
    const service = await startService({
      env: { ...BASE_ENV, LLM_PROVIDER: 'openai', LLM_BASE_URL: 'http://provider.invalid/v1' },
      fetch: providerFetch,
    });
    try {
      const token = await service.tokenFor('lifecycle_marketer');
      const t = (await service.request('POST', '/v1/chat/threads', { token, body: {} })).body;

      // A client that reads the response head and then nothing: Node stops reading its socket once 16 KiB are buffered.
      const content = JSON.stringify({ content: 'Write me a novel' });
      const client = httpRequest(`${service.url}/v1/chat/threads/${t.id}/messages/stream`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(content) },
      });
      const response = new Promise<IncomingMessage>((resolve, reject) => client.once('response', resolve).once('error', reject));
      client.end(content);
      assert.equal((await response).statusCode, 200);
      await started;

      // Were the server to ignore back-pressure, it would read the whole reply before handling any other request:
      // the pieces come without any I/O between them. Each probe is answered only after the server got to I/O.
      for (let probe = 0; probe < 3; probe++) {
        assert.equal((await service.request('GET', '/health')).status, 200);
        assert.ok(pulled < TOTAL / 4, `the server read ${pulled} of ${TOTAL} bytes for a client that read none`);
      }

      client.destroy();
      await wasCancelled;
      const stored = (await service.request('GET', `/v1/chat/threads/${t.id}/messages`, { token })).body;
      assert.deepEqual(stored.map((m: { role: string }) => m.role), ['user']);
    } finally {
      await service.close();
    }
  });
});

describe('the prompt', () => {
  let s: Setup;
  before(async () => {
    s = await setup('anthropic', { CHAT_PROMPT_BUDGET: '12000' });
  });
  after(async () => {
    await s.service.close();
    await s.fake.close();
  });

  const post = async (path: string, body: unknown) => {
    const reply = await s.service.request('POST', path, { token: s.token, body });
    assert.equal(reply.status, 200, reply.text);
    return reply.body;
  };
  const customer = (n: number, status: string, amount: number, daysAgo: number, country: string) => ({
    name: `Secret Person ${n}`,
    email: `secret.person${n}@private.test`,
    country,
    totalTransactions: n,
    totalAmountSpent: amount,
    lastActivityDate: new Date(Date.parse(NOW) - daysAgo * DAY_MS).toISOString(),
    status,
  });

  test('carries live KPIs, health, top totals and saved segments; no names or emails; earlier turns in order, the new message last', async () => {
    await post('/v1/customers', customer(1, 'active', 1200, 3, 'France'));
    await post('/v1/customers', customer(2, 'active', 300, 80, 'France'));
    await post('/v1/customers', customer(3, 'churned', 40, 200, 'Spain'));
    await post('/v1/segments', { name: 'French customers', conditions: [{ field: 'country', operator: 'eq', value: 'France' }] });
    await post('/v1/segments', { name: 'Big spenders', conditions: [{ field: 'totalAmountSpent', operator: 'gte', value: 1000 }] });

    const t = await s.thread();
    s.fake.enqueue({ text: 'First answer.' }, { text: 'Second answer.' });
    await post(`/v1/chat/threads/${t.id}/messages`, { content: 'First question' });
    await post(`/v1/chat/threads/${t.id}/messages`, { content: 'Second question' });
    s.fake.enqueue({ pieces: ['ok'] });
    await (await s.stream(t.id, 'Third question')).rest();

    const prompt = promptOf(s.fake.requests.at(-1)!);
    assert.deepEqual(prompt.messages, [
      { role: 'user', content: 'First question' },
      { role: 'assistant', content: 'First answer.' },
      { role: 'user', content: 'Second question' },
      { role: 'assistant', content: 'Second answer.' },
      { role: 'user', content: 'Third question' },
    ]);
    const { system } = prompt;
    assert.match(system, /marketing analyst/);
    assert.match(system, /Facts as of 2026-11-20 12:00 UTC/);
    assert.match(system, /Customers: 3 in total — 2 active, 0 inactive, 1 churned\./);
    assert.match(system, /Lifetime value: 1,540\.00 in total, 513\.33 per customer on average\./);
    const health = (await s.service.request('GET', '/v1/customers/health', { token: s.token })).body;
    assert.match(system, new RegExp(`Health score: ${health.score}/100 \\(${health.level}\\)\\. Active share 66\\.7%, churned share 33\\.3%, 0 inactive, 1 marked active but idle`));
    assert.match(system, /- 2026-11: 1 customer last active \(0 of them churned\), lifetime value 1,200\.00/);
    assert.match(system, /1\. active, France: 1,200\.00 spent over 1 purchase\n/);
    assert.match(system, /“French customers” \(customers in France, 2 customers\)/);
    assert.match(system, /“Big spenders” \(customers who spent at least 1,000 in total, 1 customer\)/);
    assert.ok(system.indexOf('French customers') < system.indexOf('Big spenders'), 'largest segment first');
    assert.doesNotMatch(JSON.stringify(s.fake.requests.map((r) => r.body)), /Secret Person|private\.test/);

    // Live: a new customer changes the next prompt.
    await post('/v1/customers', customer(4, 'inactive', 10, 20, 'Spain'));
    await post(`/v1/chat/threads/${t.id}/messages`, { content: 'And now?' });
    assert.match(promptOf(s.fake.requests.at(-1)!).system, /Customers: 4 in total — 2 active, 1 inactive, 1 churned\./);
  });

  test('keeps the last 12 turns, starting with a question', async () => {
    const t = await s.thread();
    for (let i = 1; i <= 8; i++) {
      s.fake.enqueue({ text: `answer ${i}` });
      await post(`/v1/chat/threads/${t.id}/messages`, { content: `question ${i}` });
    }
    s.fake.enqueue({ pieces: ['ok'] });
    await (await s.stream(t.id, 'question 9')).rest();
    const turns = promptOf(s.fake.requests.at(-1)!).messages.map((m) => m.content);
    assert.deepEqual(turns, [
      'question 3', 'answer 3', 'question 4', 'answer 4', 'question 5', 'answer 5',
      'question 6', 'answer 6', 'question 7', 'answer 7', 'question 8', 'answer 8', 'question 9',
    ]);
  });

  test('stays within CHAT_PROMPT_BUDGET with 200 segments and long history: oldest turns go first, then the smallest segments', async () => {
    for (let i = 1; i <= 200; i++) {
      await post('/v1/segments', { name: `Segment number ${String(i).padStart(3, '0')} with a rather long name`, conditions: [{ field: 'totalAmountSpent', operator: 'gte', value: 100_000 + i }] });
    }
    const t = await s.thread();
    for (let i = 1; i <= 7; i++) {
      s.fake.enqueue({ text: `${i}`.repeat(8000) });
      await post(`/v1/chat/threads/${t.id}/messages`, { content: `${i}`.repeat(8000) });
    }
    s.fake.enqueue({ pieces: ['ok'] });
    const question = 'Which segment should we target next?';
    await (await s.stream(t.id, question)).rest();

    const prompt = promptOf(s.fake.requests.at(-1)!);
    const size = prompt.system.length + prompt.messages.reduce((n, m) => n + m.content.length, 0);
    assert.ok(size <= 12000, `the prompt has ${size} characters`);
    assert.ok(size > 9000, `the prompt has only ${size} characters: the budget should be used`);
    assert.deepEqual(prompt.messages.at(-1), { role: 'user', content: question });
    // What history is left is the newest, starts with a question, and each long message is cut.
    const earlier = prompt.messages.slice(0, -1);
    assert.ok(earlier.length >= 2 && earlier.length < 12, `${earlier.length} earlier turns`);
    assert.equal(earlier[0]!.role, 'user');
    assert.equal(earlier.at(-1)!.content[0], '7');
    assert.ok(earlier.every((m) => m.content.length <= 2000 && m.content.endsWith('[…]')));
    // The largest segments are listed, the rest counted.
    assert.match(prompt.system, /“French customers”/);
    assert.match(prompt.system, /- …and \d+ smaller segments not listed here\./);
    assert.match(prompt.system, /Saved segments \(202\), largest first/);
    assert.match(prompt.system, /Customers: 4 in total/);
  });
});
