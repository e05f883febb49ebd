// The model providers against a fake provider speaking both wire formats over real HTTP: what each request carries,
// which failures are retried and how long the waits are, aborts, streams, and the local generator.
// Waits go through a recording sleep, so no test waits for a backoff unless it says it runs in real time.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';
import { AppError, type ErrorCode } from '../src/domain/errors.ts';
import { createLogger } from '../src/http/logger.ts';
import { createLanguageModel, type Finish, type LanguageModel, type ModelRequest, type ReplyPart } from '../src/llm/index.ts';
import type { Sleep } from '../src/llm/sleep.ts';
import { TestClock } from './helpers.ts';
import { startFakeProvider, type FakeProvider } from './support/fake-provider.ts';

const API_KEY = 'sk-test-0123456789abcdef';
const SYSTEM = 'You draft marketing campaigns for a shoe shop.';
const USER_TEXT = 'Write a winter campaign for loyal customers.';
const SCHEMA = { type: 'object', properties: { subject: { type: 'string' } }, required: ['subject'], additionalProperties: false };

interface Setup {
  fake: FakeProvider;
  model: LanguageModel;
  /** Every wait the model asked for, in milliseconds. */
  sleeps: number[];
  logs: Record<string, unknown>[];
  clock: TestClock;
}

const BASE_ENV = { DATABASE_PATH: ':memory:', TOKEN_SECRET: 'test-secret-that-is-at-least-32-bytes-long' };

/** A fake provider and a model pointed at it; `sleep: 'real'` keeps real timers. Both close when the test ends. */
async function setup(t: TestContext, env: Record<string, string> = {}, options: { sleep?: Sleep | 'real'; random?: () => number } = {}): Promise<Setup> {
  const fake = await startFakeProvider();
  t.after(() => fake.close());
  const config = loadConfig({
    ...BASE_ENV,
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: fake.url,
    LLM_API_KEY: API_KEY,
    LLM_MODEL: 'test-model',
    LLM_TIMEOUT_MS: '5000',
    LLM_MAX_RETRIES: '2',
    ...env,
  });
  const sleeps: number[] = [];
  const recordingSleep: Sleep = async (ms, signal) => {
    sleeps.push(ms);
    signal.throwIfAborted();
  };
  const logs: Record<string, unknown>[] = [];
  const clock = new TestClock();
  const logger = createLogger('debug', (line) => logs.push(JSON.parse(line) as Record<string, unknown>), clock.now);
  const sleep = options.sleep === 'real' ? undefined : (options.sleep ?? recordingSleep);
  const model = createLanguageModel(config.llm, { fetch, sleep, random: options.random ?? (() => 0.5), now: clock.now, logger });
  return { fake, model, sleeps, logs, clock };
}

function request(fields: Partial<ModelRequest> = {}): ModelRequest {
  return { system: SYSTEM, messages: [{ role: 'user', content: USER_TEXT }], signal: new AbortController().signal, local: () => 'local reply', ...fields };
}

async function assertAppError(promise: Promise<unknown>, code: ErrorCode): Promise<AppError> {
  const error = await promise.then(
    () => assert.fail(`expected AppError ${code}`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof AppError, `expected AppError ${code}, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  return error;
}

/** The text pieces a stream yielded, and what it threw, if anything. */
async function collect(stream: AsyncIterable<ReplyPart>): Promise<{ pieces: string[]; finish?: Finish; error?: unknown }> {
  const pieces: string[] = [];
  try {
    for await (const part of stream) {
      if (part.type === 'text') pieces.push(part.text);
      else if (part.type === 'finish') return { pieces, finish: part.finish };
    }
    return { pieces };
  } catch (error) {
    return { pieces, error };
  }
}

/** The whole reply's text. */
const completeText = async (model: LanguageModel, req: ModelRequest) => (await model.complete(req)).text;

/** For tests that wait on events: a broken rule shows as this test failing, not as a hung run. */
const BOUNDED = { timeout: 10_000 };

const warnings = (logs: Record<string, unknown>[]) => logs.filter((l) => l.level === 'warn');

describe('configuration', () => {
  test('a network provider without LLM_MODEL stops start-up naming LLM_MODEL', () => {
    assert.throws(() => loadConfig({ ...BASE_ENV, LLM_BASE_URL: 'http://127.0.0.1:9/v1' }), (e: unknown) => e instanceof ConfigError && /^LLM_MODEL: /.test(e.message));
    assert.throws(() => loadConfig({ ...BASE_ENV, LLM_PROVIDER: 'anthropic' }), (e: unknown) => e instanceof ConfigError && /^LLM_MODEL: /.test(e.message));
    assert.equal(loadConfig({ ...BASE_ENV }).llm.provider, 'local');
  });

  test('LLM_JSON_MODE defaults to json_schema and accepts only the three modes', () => {
    assert.equal(loadConfig(BASE_ENV).llm.jsonMode, 'json_schema');
    assert.equal(loadConfig({ ...BASE_ENV, LLM_JSON_MODE: 'none' }).llm.jsonMode, 'none');
    assert.throws(() => loadConfig({ ...BASE_ENV, LLM_JSON_MODE: 'json' }), /^ConfigError: LLM_JSON_MODE: /);
  });

  test('LLM_MAX_TOKENS defaults to 1024 within 16 to 131072', () => {
    assert.equal(loadConfig(BASE_ENV).llm.maxTokens, 1024);
    assert.equal(loadConfig({ ...BASE_ENV, LLM_MAX_TOKENS: '131072' }).llm.maxTokens, 131072);
    assert.throws(() => loadConfig({ ...BASE_ENV, LLM_MAX_TOKENS: '15' }), /^ConfigError: LLM_MAX_TOKENS: /);
    assert.throws(() => loadConfig({ ...BASE_ENV, LLM_MAX_TOKENS: '131073' }), /^ConfigError: LLM_MAX_TOKENS: /);
  });

  test('LLM_MAX_DURATION_MS defaults to 300000; LLM_TOKEN_PARAMETER is unset or one of the two names', () => {
    assert.equal(loadConfig(BASE_ENV).llm.maxDurationMs, 300_000);
    assert.equal(loadConfig({ ...BASE_ENV, LLM_MAX_DURATION_MS: '1000' }).llm.maxDurationMs, 1000);
    assert.throws(() => loadConfig({ ...BASE_ENV, LLM_MAX_DURATION_MS: '999' }), /^ConfigError: LLM_MAX_DURATION_MS: /);
    assert.equal(loadConfig(BASE_ENV).llm.tokenParameter, undefined);
    assert.equal(loadConfig({ ...BASE_ENV, LLM_TOKEN_PARAMETER: 'max_completion_tokens' }).llm.tokenParameter, 'max_completion_tokens');
    assert.throws(() => loadConfig({ ...BASE_ENV, LLM_TOKEN_PARAMETER: 'max_output_tokens' }), /^ConfigError: LLM_TOKEN_PARAMETER: /);
  });

  test('anthropic defaults to the public API base URL', () => {
    assert.equal(loadConfig({ ...BASE_ENV, LLM_PROVIDER: 'anthropic', LLM_MODEL: 'claude' }).llm.baseUrl, 'https://api.anthropic.com/v1');
  });
});

describe('openai wire format', () => {
  test('POSTs the system message, the conversation, the model, max_tokens and the key to /chat/completions', async (t) => {
    const { fake, model } = await setup(t);
    const messages = [
      { role: 'user' as const, content: 'First question' },
      { role: 'assistant' as const, content: 'First answer' },
      { role: 'user' as const, content: USER_TEXT },
    ];
    assert.equal(await completeText(model, request({ messages })), 'fake reply');
    assert.equal(model.provider, 'openai');
    assert.equal(model.model, 'test-model');
    const [sent] = fake.requests;
    assert.equal(sent?.method, 'POST');
    assert.equal(sent?.path, '/v1/chat/completions');
    assert.equal(sent?.headers.authorization, `Bearer ${API_KEY}`);
    assert.match(String(sent?.headers['content-type']), /^application\/json/);
    assert.deepEqual(sent?.body, { model: 'test-model', messages: [{ role: 'system', content: SYSTEM }, ...messages], max_tokens: 1024, stream: true });
  });

  test('sends no Authorization header without a key', async (t) => {
    const { fake, model } = await setup(t, { LLM_API_KEY: '' });
    await model.complete(request());
    assert.equal(fake.requests[0]?.headers.authorization, undefined);
  });

  test('LLM_MAX_TOKENS is sent as max_tokens to a server other than api.openai.com', async (t) => {
    const { fake, model } = await setup(t, { LLM_MAX_TOKENS: '2000' });
    await model.complete(request());
    assert.equal(fake.requests[0]?.body.max_tokens, 2000);
    assert.equal('max_completion_tokens' in fake.requests[0]!.body, false);
  });

  test("OpenAI's own API gets max_completion_tokens, every other host max_tokens", async (t) => {
    const fake = await startFakeProvider();
    t.after(() => fake.close());
    // The requests meant for api.openai.com land on the fake, so the body can be read.
    const toFake: typeof fetch = (input, init) => fetch(String(input).replace('https://api.openai.com/v1', fake.url), init);
    const logger = createLogger('silent');
    for (const base of ['https://api.openai.com/v1', fake.url]) {
      const config = loadConfig({ ...BASE_ENV, LLM_BASE_URL: base, LLM_MODEL: 'o4-mini', LLM_MAX_TOKENS: '4096' });
      await createLanguageModel(config.llm, { fetch: toFake, logger }).complete(request());
    }
    assert.deepEqual(
      fake.requests.map((r) => [r.body.max_completion_tokens, r.body.max_tokens]),
      [
        [4096, undefined],
        [undefined, 4096],
      ],
    );
  });

  for (const [mode, expected] of [
    ['json_schema', { type: 'json_schema', json_schema: { name: 'campaign', strict: true, schema: SCHEMA } }],
    ['json_object', { type: 'json_object' }],
    ['none', undefined],
  ] as const) {
    test(`LLM_JSON_MODE=${mode} asks for JSON ${expected ? `with response_format ${expected.type}` : 'through the prompt only'}`, async (t) => {
      const { fake, model } = await setup(t, { LLM_JSON_MODE: mode });
      fake.enqueue({ json: { subject: 'Warm feet' } });
      assert.equal(await completeText(model, request({ json: { name: 'campaign', schema: SCHEMA } })), '{"subject":"Warm feet"}');
      await model.complete(request());
      assert.deepEqual(fake.requests[0]?.body.response_format, expected);
      assert.equal('response_format' in (fake.requests[1]?.body ?? {}), false, 'a text request asks for no JSON');
    });
  }

  test('returns the content exactly as sent, whatever it holds, without control characters', async (t) => {
    const { fake, model } = await setup(t);
    const texts = ['{"subject":"Hi"}', '```json\n{"subject":"Hi"}\n```', 'Here it is: {"subject":"Hi"} Enjoy!', '{"Subject":"Hi"}', 'garbage', '', 'x'.repeat(20_000)];
    for (const text of texts) {
      fake.enqueue({ text });
      assert.equal(await completeText(model, request()), text);
    }
    fake.enqueue({ text: 'line\r\none\u0000\u0007\u001b[31m\tend\u009b' });
    assert.equal(await completeText(model, request()), 'line\none[31m\tend');
  });

  test('a 200 whose envelope has no message content is llm_error and not retried', async (t) => {
    const { fake, model } = await setup(t);
    fake.enqueue({ status: 200, body: { choices: [{ message: { role: 'assistant', content: null } }] } });
    await assertAppError(model.complete(request()), 'llm_error');
    fake.enqueue({ status: 200, body: { object: 'list' } });
    await assertAppError(model.complete(request()), 'llm_error');
    fake.enqueue({ status: 200, body: '<html>Gateway login</html>' });
    await assertAppError(model.complete(request()), 'llm_error');
    assert.equal(fake.requests.length, 3);
  });
});

describe('anthropic wire format', () => {
  const ANTHROPIC = { LLM_PROVIDER: 'anthropic' };

  test('POSTs system, messages, model and max_tokens to /messages with x-api-key and anthropic-version', async (t) => {
    const { fake, model } = await setup(t, ANTHROPIC);
    assert.equal(await completeText(model, request()), 'fake reply');
    assert.equal(model.provider, 'anthropic');
    const [sent] = fake.requests;
    assert.equal(sent?.path, '/v1/messages');
    assert.equal(sent?.headers['x-api-key'], API_KEY);
    assert.equal(sent?.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent?.headers['content-type'], 'application/json');
    assert.equal(sent?.headers.authorization, undefined);
    assert.deepEqual(sent?.body, { model: 'test-model', system: SYSTEM, messages: [{ role: 'user', content: USER_TEXT }], max_tokens: 1024, stream: true });
  });

  test('a JSON request forces one tool and returns its streamed input as JSON text', async (t) => {
    const { fake, model } = await setup(t, ANTHROPIC);
    fake.enqueue({ json: { subject: 'Warm feet', lines: ['a', 'b'] } });
    const reply = await model.complete(request({ json: { name: 'campaign', schema: SCHEMA } }));
    assert.deepEqual(JSON.parse(reply.text), { subject: 'Warm feet', lines: ['a', 'b'] });
    assert.equal(reply.finish.reason, 'stop', 'a forced tool ends the turn with tool_use, a normal finish');
    const body = fake.requests[0]?.body;
    assert.equal(body.tools.length, 1);
    assert.equal(body.tools[0].name, 'campaign');
    assert.equal(typeof body.tools[0].description, 'string');
    assert.deepEqual(body.tools[0].input_schema, SCHEMA);
    assert.deepEqual(body.tool_choice, { type: 'tool', name: 'campaign' });
  });

  test('a text reply joins the text blocks; a JSON request answered with text instead of the tool returns the text, for the feature to repair', async (t) => {
    const { fake, model } = await setup(t, ANTHROPIC);
    fake.enqueue({ status: 200, body: { content: [{ type: 'text', text: 'Hello, ' }, { type: 'text', text: 'world' }] } });
    assert.equal(await completeText(model, request()), 'Hello, world');
    fake.enqueue({ text: 'I would rather not use the tool.' });
    assert.equal(await completeText(model, request({ json: { name: 'campaign', schema: SCHEMA } })), 'I would rather not use the tool.');
    fake.enqueue({ status: 200, body: { type: 'message' } });
    await assertAppError(model.complete(request()), 'llm_error');
  });
});

describe('retries', () => {
  test('500 on every attempt is llm_unavailable after exactly 1 + LLM_MAX_RETRIES requests, each logged', async (t) => {
    const { fake, model, sleeps, logs } = await setup(t, { LLM_MAX_RETRIES: '2' });
    fake.defaultReply = { status: 500 };
    await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.equal(fake.requests.length, 3);
    assert.equal(sleeps.length, 2);
    const warned = warnings(logs);
    assert.deepEqual(warned.map((l) => [l.provider, l.status, l.attempt, l.reason]), [1, 2, 3].map((n) => ['openai', 500, n, 'fake failure with status 500']));
  });

  test('LLM_MAX_RETRIES=0 makes one attempt', async (t) => {
    const { fake, model } = await setup(t, { LLM_MAX_RETRIES: '0' });
    fake.defaultReply = { status: 503 };
    await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.equal(fake.requests.length, 1);
  });

  test('503 then a valid reply succeeds on the second request', async (t) => {
    const { fake, model } = await setup(t);
    fake.enqueue({ status: 503 });
    assert.equal(await completeText(model, request()), 'fake reply');
    assert.equal(fake.requests.length, 2);
  });

  test('408, 409, 429 and 5xx are retried', async (t) => {
    const { fake, model } = await setup(t);
    const statuses = [408, 409, 429, 500, 502, 503, 504, 529];
    for (const status of statuses) {
      fake.enqueue({ status });
      assert.equal(await completeText(model, request()), 'fake reply', `after ${status}`);
    }
    assert.equal(fake.requests.length, statuses.length * 2);
  });

  test('an HTML error page is logged by its text', async (t) => {
    const { fake, model, logs } = await setup(t, { LLM_MAX_RETRIES: '0' });
    fake.enqueue({ status: 502, body: '<html>Bad gateway</html>' });
    await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.equal(warnings(logs)[0]?.reason, '<html>Bad gateway</html>');
  });

  test('400, 401, 403, 404 and 422 are llm_unavailable at once, without a retry', async (t) => {
    const { fake, model, sleeps } = await setup(t);
    for (const status of [400, 401, 403, 404, 422]) {
      fake.enqueue({ status });
      const error = await assertAppError(model.complete(request()), 'llm_unavailable');
      assert.match(error.message, new RegExp(`HTTP ${status}`));
    }
    assert.equal(fake.requests.length, 5);
    assert.deepEqual(sleeps, []);
  });

  test('log lines quote the provider but never the key or the prompt', async (t) => {
    const { fake, model, logs } = await setup(t);
    fake.enqueue({ status: 401, body: { error: { message: `Incorrect API key provided: ${API_KEY}.`, type: 'invalid_request_error' } } });
    const error = await assertAppError(model.complete(request()), 'llm_unavailable');
    const [line] = warnings(logs);
    assert.equal(line?.reason, 'Incorrect API key provided: [api key].');
    const everything = JSON.stringify(logs) + error.message;
    for (const secret of [API_KEY, SYSTEM, USER_TEXT]) assert.equal(everything.includes(secret), false, secret);
  });

  test('backoff is exponential from 500 ms with full jitter, capped at 8 s', async (t) => {
    const { fake, model, sleeps } = await setup(t, { LLM_MAX_RETRIES: '6' }, { random: () => 0.9999 });
    fake.defaultReply = { status: 500 };
    await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.deepEqual(sleeps, [499, 999, 1999, 3999, 7999, 7999]);
  });

  test('429 with Retry-After: 1 waits at least 1000 ms', async (t) => {
    const { fake, model, sleeps } = await setup(t);
    fake.enqueue({ status: 429, headers: { 'retry-after': '1' } });
    assert.equal(await completeText(model, request()), 'fake reply');
    assert.deepEqual(sleeps, [1000]);
  });

  test('429 with Retry-After: 1 waits a real second before the next request', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, {}, { sleep: 'real' });
    fake.enqueue({ status: 429, headers: { 'retry-after': '1' } });
    assert.equal(await completeText(model, request()), 'fake reply');
    const [first, second] = fake.requests;
    assert.ok(second!.startedAt - first!.startedAt >= 990, `waited ${second!.startedAt - first!.startedAt} ms`);
  });

  test('retry-after-ms is honoured before Retry-After', async (t) => {
    const { fake, model, sleeps } = await setup(t);
    fake.enqueue({ status: 503, headers: { 'retry-after-ms': '250', 'retry-after': '2' } });
    assert.equal(await completeText(model, request()), 'fake reply');
    assert.deepEqual(sleeps, [250]);
  });

  test('Retry-After as an HTTP date waits until that date', async (t) => {
    const { fake, model, sleeps, clock } = await setup(t);
    fake.enqueue({ status: 503, headers: { 'retry-after': new Date(clock.now().getTime() + 2000).toUTCString() } });
    assert.equal(await completeText(model, request()), 'fake reply');
    assert.deepEqual(sleeps, [2000]);
  });

  test('a Retry-After longer than what is left of LLM_MAX_DURATION_MS gives up at once', async (t) => {
    const { fake, model, sleeps, logs } = await setup(t, { LLM_MAX_DURATION_MS: '3000', LLM_MAX_RETRIES: '2' });
    fake.enqueue({ status: 429, headers: { 'retry-after': '4' } });
    await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.equal(fake.requests.length, 1);
    assert.deepEqual(sleeps, []);
    assert.match(String(warnings(logs)[0]?.giveUp), /asked to wait 4000 ms/);
  });

  test('x-should-retry: true retries a status that is otherwise final; false stops one that is otherwise retried', async (t) => {
    const { fake, model } = await setup(t);
    fake.enqueue({ status: 400, headers: { 'x-should-retry': 'true' } });
    assert.equal(await completeText(model, request()), 'fake reply');
    assert.equal(fake.requests.length, 2);
    fake.enqueue({ status: 503, headers: { 'x-should-retry': 'false' } });
    const error = await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.match(error.message, /^The model provider refused the request \(HTTP 503: "fake failure with status 503"\)\.$/);
    assert.equal(fake.requests.length, 3);
  });

  test('429 insufficient_quota is not retried and says the quota is exhausted', async (t) => {
    const { fake, model, sleeps } = await setup(t);
    fake.enqueue({ status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'You exceeded your current quota.', type: 'insufficient_quota', code: 'insufficient_quota' } } });
    const error = await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.equal(error.message, `The model provider refused the request (HTTP 429, the account's quota is exhausted: "You exceeded your current quota.").`);
    assert.equal(fake.requests.length, 1);
    assert.deepEqual(sleeps, []);
  });

  test('a detail quotes the provider with the key, and anything shaped like a key, removed', async (t) => {
    const { fake, model } = await setup(t);
    fake.enqueue({ status: 401, body: { error: { message: `Bad key ${API_KEY}; did you mean sk-proj-****abcd?` } } });
    const error = await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.equal(error.message, 'The model provider refused the request (HTTP 401, the API key was refused; check LLM_API_KEY: "Bad key [api key]; did you mean [api key]?").');
  });

  test('LLM_MAX_DURATION_MS ends a call whose attempts never fall silent long enough to time out', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, { LLM_TIMEOUT_MS: '600000', LLM_MAX_DURATION_MS: '1000' });
    fake.enqueue({ pieces: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'], intervalMs: 400 });
    const started = Date.now();
    const { pieces, error } = await collect(model.stream(request()));
    assert.ok(error instanceof AppError && error.code === 'llm_unavailable', String(error));
    assert.equal(error.message, 'The model provider did not finish its reply within LLM_MAX_DURATION_MS (1000 ms).');
    assert.ok(pieces.length >= 1 && pieces.length < 10, String(pieces));
    assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
    await fake.waitForAborts(1);
  });

  test('LLM_MAX_DURATION_MS also bounds a provider that never answers, retries included', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, { LLM_TIMEOUT_MS: '600000', LLM_MAX_DURATION_MS: '1000', LLM_MAX_RETRIES: '5' });
    fake.defaultReply = { hang: true };
    const error = await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.match(error.message, /LLM_MAX_DURATION_MS \(1000 ms\)/);
    assert.equal(fake.requests.length, 1);
  });

  test('a reset connection then a valid reply succeeds', async (t) => {
    const { fake, model } = await setup(t);
    fake.enqueue({ reset: true });
    assert.equal(await completeText(model, request()), 'fake reply');
    assert.equal(fake.requests.length, 2);
  });

  test('a refused connection is retried, then llm_unavailable', async (t) => {
    const { fake, model, sleeps } = await setup(t);
    await fake.close();
    await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.equal(sleeps.length, 2);
  });

  test('a provider that never answers is llm_unavailable after each attempt times out', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, { LLM_TIMEOUT_MS: '100', LLM_MAX_RETRIES: '1' });
    fake.defaultReply = { hang: true };
    const started = Date.now();
    await assertAppError(model.complete(request()), 'llm_unavailable');
    assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
    assert.equal((await fake.waitForAborts(2)).length, 2);
    assert.equal(fake.requests.length, 2);
  });

  test('silence before the headers counts against the attempt timeout too', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, { LLM_TIMEOUT_MS: '500', LLM_MAX_RETRIES: '1' });
    fake.enqueue({ delayMs: 3000, text: 'too late' });
    assert.equal(await completeText(model, request()), 'fake reply');
    assert.equal(fake.requests.length, 2);
  });
});

describe('aborts', () => {
  test("aborting the caller's signal aborts the request in flight and makes no retry", BOUNDED, async (t) => {
    const { fake, model, logs } = await setup(t);
    fake.defaultReply = { hang: true };
    const controller = new AbortController();
    const call = model.complete(request({ signal: controller.signal }));
    await fake.waitForRequests(1);
    const reason = new Error('client left');
    controller.abort(reason);
    await assert.rejects(call, (e: unknown) => e === reason);
    await fake.waitForAborts(1);
    assert.equal(fake.requests.length, 1);
    assert.deepEqual(warnings(logs), [], 'a caller leaving is not a provider failure');
  });

  test('aborting during a backoff wait stops at once, even if the sleep ignores the signal', BOUNDED, async (t) => {
    let sleeping!: () => void;
    const asleep = new Promise<void>((resolve) => (sleeping = resolve));
    const { fake, model } = await setup(t, {}, { sleep: () => (sleeping(), new Promise<void>(() => undefined)) });
    fake.defaultReply = { status: 500 };
    const controller = new AbortController();
    const call = model.complete(request({ signal: controller.signal }));
    await asleep;
    controller.abort(new Error('shutting down'));
    await assert.rejects(call, /shutting down/);
    assert.equal(fake.requests.length, 1);
  });

  test('an already aborted signal sends nothing', async (t) => {
    const { fake, model } = await setup(t);
    await assert.rejects(model.complete(request({ signal: AbortSignal.abort(new Error('gone')) })), /gone/);
    assert.equal(fake.requests.length, 0);
  });

  test('aborting mid-stream stops the stream and the request', BOUNDED, async (t) => {
    const { fake, model } = await setup(t);
    fake.enqueue({ pieces: ['one ', 'two ', 'three'], intervalMs: 60_000 });
    const controller = new AbortController();
    const pieces: string[] = [];
    const reason = new Error('client left');
    await assert.rejects(async () => {
      for await (const part of model.stream(request({ signal: controller.signal }))) {
        if (part.type === 'text') pieces.push(part.text);
        controller.abort(reason);
      }
    }, (e: unknown) => e === reason);
    assert.deepEqual(pieces, ['one ']);
    await fake.waitForAborts(1);
    assert.equal(fake.requests.length, 1);
  });
});

for (const provider of ['openai', 'anthropic'] as const) {
  describe(`${provider} streams`, () => {
    const env = { LLM_PROVIDER: provider };

    test('yields the pieces in order and asks for a stream', async (t) => {
      const { fake, model } = await setup(t, env);
      fake.enqueue({ pieces: ['Warm ', 'feet, ', 'happy\u0007 ', 'winter.'], intervalMs: 5 });
      const { pieces, finish } = await collect(model.stream(request()));
      assert.deepEqual(pieces, ['Warm ', 'feet, ', 'happy ', 'winter.']);
      assert.deepEqual(finish, { reason: 'stop', reasoned: false, maxTokens: 1024 });
      assert.equal(fake.requests[0]?.body.stream, true);
    });

    test('a failure before the first piece is retried', async (t) => {
      const { fake, model, logs } = await setup(t, { ...env, LLM_MAX_RETRIES: '3' });
      fake.enqueue({ status: 503 }, { pieces: ['a', 'b'], failAfter: 0 }, { pieces: ['a', 'b'], failAfter: 0, failWith: 'error' });
      fake.defaultReply = { pieces: ['a', 'b'] };
      assert.deepEqual((await collect(model.stream(request()))).pieces, ['a', 'b']);
      assert.equal(fake.requests.length, 4);
      const reasons = warnings(logs).map((l) => String(l.reason));
      assert.equal(reasons.length, 3);
      assert.match(reasons[2]!, provider === 'openai' ? /fake stream failure/ : /Overloaded/, 'the error event is read as one');
    });

    for (const failWith of ['cut', 'error', 'end'] as const) {
      test(`a failure after the first piece (${failWith}) throws llm_unavailable without a retry`, async (t) => {
        const { fake, model } = await setup(t, env);
        fake.enqueue({ pieces: ['a', 'b', 'c'], failAfter: 2, failWith });
        const { pieces, error } = await collect(model.stream(request()));
        assert.deepEqual(pieces, ['a', 'b']);
        assert.ok(error instanceof AppError && error.code === 'llm_unavailable', String(error));
        assert.equal(fake.requests.length, 1);
      });
    }

    test('a stream that stalls after the first piece times out', BOUNDED, async (t) => {
      const { fake, model } = await setup(t, { ...env, LLM_TIMEOUT_MS: '300' });
      fake.enqueue({ pieces: ['a', 'b'], intervalMs: 60_000 });
      const { pieces, error } = await collect(model.stream(request()));
      assert.deepEqual(pieces, ['a']);
      assert.ok(error instanceof AppError && error.code === 'llm_unavailable', String(error));
      assert.equal(fake.requests.length, 1);
    });

    test('a slow consumer is not taken for a stalled provider', BOUNDED, async (t) => {
      const { fake, model } = await setup(t, { ...env, LLM_TIMEOUT_MS: '300' });
      // 'b' comes 600 ms after 'a', while the consumer is still busy with 'a' for 800 ms.
      fake.enqueue({ pieces: ['a', 'b'], intervalMs: 600 });
      const pieces: string[] = [];
      for await (const part of model.stream(request())) {
        if (part.type !== 'text') continue;
        pieces.push(part.text);
        await new Promise((resolve) => setTimeout(resolve, 800));
      }
      assert.deepEqual(pieces, ['a', 'b']);
    });
  });
}

describe('local generator', () => {
  const LOCAL_ENV = { LLM_PROVIDER: 'local', LLM_BASE_URL: '', LLM_MODEL: '' };
  const TEXT = 'Dear Ana,\n\twinter boots are\u0007 back in stock for you.';

  test('complete returns the feature text without control characters, the same every time, with no request', async (t) => {
    const { fake, model } = await setup(t, LOCAL_ENV);
    assert.equal(model.provider, 'local');
    assert.equal(model.model, 'local');
    const first = await model.complete(request({ local: () => TEXT }));
    assert.deepEqual(first, { text: 'Dear Ana,\n\twinter boots are back in stock for you.', finish: { reason: 'stop', reasoned: false, maxTokens: 0 } });
    assert.deepEqual(await model.complete(request({ local: () => TEXT })), first);
    assert.equal(fake.requests.length, 0);
  });

  test('stream yields the same text a few words at a time, pausing 15 ms between pieces', async (t) => {
    const { model, sleeps } = await setup(t, LOCAL_ENV);
    const { pieces, finish } = await collect(model.stream(request({ local: () => TEXT })));
    assert.deepEqual(pieces, ['Dear Ana,\n\twinter ', 'boots are back ', 'in stock for ', 'you.']);
    assert.equal(finish?.reason, 'stop');
    assert.deepEqual(sleeps, [15, 15, 15]);
  });

  test('stream stops at once when the signal aborts between pieces', BOUNDED, async (t) => {
    const { model } = await setup(t, LOCAL_ENV, { sleep: 'real' });
    const controller = new AbortController();
    const pieces: string[] = [];
    await assert.rejects(async () => {
      for await (const part of model.stream(request({ local: () => TEXT, signal: controller.signal }))) {
        if (part.type === 'text') pieces.push(part.text);
        controller.abort(new Error('client left'));
      }
    }, /client left/);
    assert.equal(pieces.length, 1);
  });
});
