// The provider layer against what real servers send (product.md section 8): every transcript of
// test/fixtures/providers/ replayed by the fake provider, its writes split inside CRLFs and UTF-8 characters, and
// checked over HTTP through the assistant's stream, a whole chat reply and campaign generation: the frames in order,
// the joined deltas, the problem, what is stored, how many provider requests were made and whether any was aborted.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Sleep } from '../src/llm/sleep.ts';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { audienceOf, briefFor, campaignTotal, generate, NO_RATE_LIMIT } from './support/campaigns.ts';
import { readTranscript, replayCuts, startFakeProvider, type FakeProvider, type FakeReply } from './support/fake-provider.ts';
import { openSse } from './support/sse-client.ts';

const API_KEY = 'sk-test-0123456789abcdef';
type Format = 'openai' | 'anthropic';

interface Setup {
  fake: FakeProvider;
  service: TestService;
  token: string;
  /** Every wait the retries asked for, in milliseconds; none is really waited. */
  waits: number[];
  segmentId: string;
  close(): Promise<void>;
}

async function setup(format: Format, env: Record<string, string> = {}): Promise<Setup> {
  const fake = await startFakeProvider();
  fake.defaultReply = { status: 500, body: { error: { message: 'unscripted request' } } };
  const waits: number[] = [];
  const sleep: Sleep = async (ms) => void waits.push(ms);
  const service = await startService({
    random: () => 0,
    sleep,
    env: {
      ...NO_RATE_LIMIT,
      LLM_PROVIDER: format,
      LLM_BASE_URL: fake.url,
      LLM_MODEL: 'test-model',
      LLM_API_KEY: API_KEY,
      LLM_MAX_RETRIES: '1',
      LLM_TIMEOUT_MS: '1000',
      ...env,
    },
  });
  const token = await service.tokenFor('lifecycle_marketer');
  const segment = await audienceOf(service, token, 2, `Replayland ${format}`);
  return {
    fake,
    service,
    token,
    waits,
    segmentId: segment.id,
    async close() {
      await service.close();
      await fake.close();
    },
  };
}

/** What one question to the assistant's stream produced, and what the fake saw meanwhile. */
interface Asked {
  frames: any[];
  types: string[];
  joined: string;
  stored: any[];
  requests: number;
  aborted: number;
  bodies: any[];
}

/** Asks a new thread one question over the stream after queueing `replies`; waits for the stream to end. */
async function ask(s: Setup, ...replies: FakeReply[]): Promise<Asked> {
  const before = s.fake.requests.length;
  s.fake.enqueue(...replies);
  const thread = (await s.service.request('POST', '/v1/chat/threads', { token: s.token, body: {} })).body;
  const stream = await openSse(`${s.service.url}/v1/chat/threads/${thread.id}/messages/stream`, { token: s.token, body: { content: 'How are our customers doing?' } });
  assert.equal(stream.status, 200);
  const frames = await stream.rest();
  const stored = (await s.service.request('GET', `/v1/chat/threads/${thread.id}/messages`, { token: s.token })).body;
  const mine = s.fake.requests.slice(before);
  return {
    frames,
    types: frames.map((f) => f.type),
    joined: frames.filter((f) => f.type === 'delta').map((f) => f.text).join(''),
    stored,
    requests: mine.length,
    aborted: mine.filter((r) => r.aborted).length,
    bodies: mine.map((r) => r.body),
  };
}

const replay = (transcript: string, intervalMs?: number): FakeReply => ({ transcript, split: 'awkward', ...(intervalMs ? { intervalMs } : {}) });

/** Asserts a complete reply: start, deltas, done; the deltas joined are `content`, stored as the assistant message. */
function assertComplete(asked: Asked, content: string, { truncated = false, requests = 1 } = {}): void {
  assert.equal(asked.types[0], 'start');
  assert.equal(asked.types.at(-1), 'done', JSON.stringify(asked.frames.at(-1)));
  assert.ok(asked.types.slice(1, -1).every((t) => t === 'delta'));
  assert.equal(asked.joined, content);
  const done = asked.frames.at(-1);
  assert.equal(done.assistantMessage.content, content);
  assert.equal(done.truncated, truncated ? true : undefined);
  assert.equal(done.assistantMessage.truncated, truncated ? true : undefined);
  assert.equal('truncated' in done.assistantMessage, truncated, 'the key is present only when true');
  assert.deepEqual(asked.stored.map((m: any) => m.role), ['user', 'assistant']);
  assert.deepEqual(asked.stored[1], done.assistantMessage);
  assert.equal(asked.requests, requests);
  assert.equal(asked.aborted, 0);
}

/** Asserts a failed reply: the deltas sent (joined `sent`), then an `error` frame; only the question is stored. */
/**
 * `aborted`: provider requests the service hung up on; `undefined` where the transcript goes on after the failure
 * (`[DONE]` after an error) and hanging up races the fake's last write.
 */
function assertFailed(asked: Asked, code: string, detail: RegExp, { sent = '', requests = 1, aborted = 0 as number | undefined } = {}): void {
  assert.equal(asked.types[0], 'start');
  assert.equal(asked.types.at(-1), 'error');
  assert.equal(asked.joined, sent);
  const error = asked.frames.at(-1);
  assert.equal(error.code, code, error.message);
  assert.match(error.message, detail);
  assert.equal(error.message.includes(API_KEY), false, 'never the key');
  assert.deepEqual(asked.stored.map((m: any) => m.role), ['user']);
  assert.equal(asked.requests, requests);
  if (aborted !== undefined) assert.equal(asked.aborted, aborted, 'provider requests the service hung up on');
}

// The texts below are the transcripts' joined content, written out so the tests can be checked by reading the files.
const TEXT = {
  openaiPlain: 'Your best customers are in Germany — 412 of them spent over €500 in the last 90 days. A loyalty offer aimed at that group is your quickest win.',
  openaiUsage: "Repeat buyers drove 64% of revenue this quarter, mostly café and bakery owners in Lyon. Consider a €10 voucher to win back the 230 who haven't ordered since June.",
  openaiWhole:
    "Your churn risk is concentrated in Spain: 157 customers who spent over €300 last year haven't purchased in 120 days. A personal win-back email with free shipping is a good first step.",
  openaiLength: "Your top segment is small cafés in Austria — 96 accounts averaging €740 per order. They respond best to early-access offers, and last month's",
  openaiRefusal: 'I’m sorry, I can’t help with that request.',
  ollama: 'Customers in Italy grew 23% this month — 58 new accounts, most of them gelaterias spending around €180 per order. A welcome series with a seasonal discount 🍦 would keep that momentum going.',
  vllm: '\n\nYour highest-value segment is Dutch florists: 74 customers with an average basket of €265. They reorder every six weeks, so a reminder timed to that cycle should lift repeat sales.',
  llamacppTimings: 'Most of your revenue comes from Belgium — 311 customers spent over €450 each since January. Brussels café chains are the biggest group, so start your campaign there.',
  llamacppNoDone: "Sales in Portugal doubled since spring: 129 customers placed orders above €200. Lisbon's pastelarias lead the list, so a referral reward could turn them into ambassadors.",
  openrouter: "Across all regions, 1,204 customers spent more than €250 this year. The fastest-growing group is Polish cafés, up 31% — they're worth a dedicated campaign 🚀",
  llamaCppPython: 'Your strongest market is Ireland — 205 customers spent over €350 in the past six months. Dublin coffee shops lead, so a loyalty bonus there is the natural next step.',
  anthropicText: 'Your best customers are in Germany — 412 of them spent over €500 since January. Most are independent cafés in Munich and Hamburg, so a regional loyalty offer should land well.',
  anthropicThinking: 'Customers in the Netherlands are your fastest-growing group: 137 accounts, each spending about €320 per quarter. A referral bonus would likely accelerate that growth.',
  anthropicMaxTokens: 'Your top three regions by revenue are Germany (€184,000), France (€121,500) and Spain (€97,300). Within Germany, the',
};

test('the replay cuts writes inside CRLFs and inside multi-byte characters, and the cuts put back together are the file', () => {
  for (const name of ['llama-cpp-python/stream-crlf-ping.http', 'openai/stream-plain.http']) {
    const { body } = readTranscript(name);
    const cuts = replayCuts(body, 'awkward');
    const pieces = [0, ...cuts].map((from, i) => body.subarray(from, cuts[i] ?? body.length));
    assert.deepEqual(Buffer.concat(pieces), body);
    if (name.startsWith('llama-cpp-python')) assert.ok(pieces.some((p) => p.at(-1) === 0x0d), 'a write ends between CR and LF');
    else assert.ok(pieces.some((p) => p.at(-1)! >= 0xc0), 'a write ends inside a UTF-8 character');
  }
});

describe('OpenAI-compatible servers, replayed through the assistant', () => {
  let s: Setup;
  before(async () => {
    s = await setup('openai');
  });
  after(() => s.close());

  test('openai/stream-plain: deltas joined are the reply, stored whole; one request, none aborted', async () => {
    assertComplete(await ask(s, replay('openai/stream-plain.http')), TEXT.openaiPlain);
  });

  test('openai/stream-usage: the empty-choices usage chunk after the finish changes nothing', async () => {
    assertComplete(await ask(s, replay('openai/stream-usage.http')), TEXT.openaiUsage);
  });

  test('openai/whole: a server that answers a stream request with one JSON body still gives the reply', async () => {
    assertComplete(await ask(s, { transcript: 'openai/whole.http' }), TEXT.openaiWhole);
  });

  test('openai/stream-length: a reply cut at the token budget is stored and shown with truncated: true', async () => {
    const asked = await ask(s, replay('openai/stream-length.http'));
    assertComplete(asked, TEXT.openaiLength, { truncated: true });
  });

  test('openai/stream-refusal: the refusal is the assistant reply', async () => {
    assertComplete(await ask(s, replay('openai/stream-refusal.http')), TEXT.openaiRefusal);
  });

  test('openai/stream-error-object: an error object after text ends with an error frame quoting it; nothing stored, no retry', async () => {
    const asked = await ask(s, replay('openai/stream-error-object.http'));
    assertFailed(asked, 'llm_unavailable', /The server had an error while processing your request/, { sent: 'Your best café customers are in Lyon' });
  });

  test('ollama/stream-reasoning: reasoning deltas are neither shown nor stored', async () => {
    assertComplete(await ask(s, replay('ollama/stream-reasoning.http')), TEXT.ollama);
  });

  test('ollama/stream-reasoning-length: thinking that spends the whole budget is llm_error naming LLM_MAX_TOKENS and reasoning, one request', async () => {
    assertFailed(await ask(s, replay('ollama/stream-reasoning-length.http')), 'llm_error', /LLM_MAX_TOKENS=1024\b.*reasoning/);
  });

  test('vllm/stream-reasoning-content: reasoning for longer than LLM_TIMEOUT_MS keeps the attempt alive', { timeout: 20_000 }, async () => {
    // About 60 writes 40 ms apart: 2.4 s of a reply, ten times more than any gap, more than twice LLM_TIMEOUT_MS.
    assertComplete(await ask(s, replay('vllm/stream-reasoning-content.http', 40)), TEXT.vllm);
  });

  test('llamacpp/stream-timings: the final timings chunk changes nothing', async () => {
    assertComplete(await ask(s, replay('llamacpp/stream-timings.http')), TEXT.llamacppTimings);
  });

  test('llamacpp/stream-no-done: a stream that ends after its finish without [DONE] is complete', async () => {
    assertComplete(await ask(s, replay('llamacpp/stream-no-done.http')), TEXT.llamacppNoDone);
  });

  test('llamacpp/stream-error-field: an error: line then [DONE] without a finish is a failure quoting the error', async () => {
    const asked = await ask(s, replay('llamacpp/stream-error-field.http'));
    assertFailed(asked, 'llm_unavailable', /Context size has been exceeded/, {
      aborted: undefined,
      sent: 'Your Swiss customers are the most loyal — 88 of them have ordered every month, with an average spend of',
    });
  });

  test('openrouter/stream-comments: PROCESSING comments before the first chunk are progress, not content', async () => {
    assertComplete(await ask(s, replay('openrouter/stream-comments.http')), TEXT.openrouter);
  });

  test('openrouter/stream-comments: comments arriving slower than LLM_TIMEOUT_MS in total keep the attempt alive', { timeout: 20_000 }, async () => {
    // About 32 writes 60 ms apart: 1.9 s in all, nearly twice LLM_TIMEOUT_MS, with no gap near it.
    const asked = await ask(s, { transcript: 'openrouter/stream-comments.http', intervalMs: 60 });
    assertComplete(asked, TEXT.openrouter);
  });

  test('openrouter/stream-error-chunk: an error chunk with finish_reason "error" ends with an error frame quoting it', async () => {
    const asked = await ask(s, replay('openrouter/stream-error-chunk.http'));
    assertFailed(asked, 'llm_unavailable', /Provider disconnected/, {
      aborted: undefined,
      sent: 'Your inactive customers are mostly in France: 342 of them spent over €150 before going quiet, and the largest',
    });
  });

  test('llama-cpp-python/stream-crlf-ping: CRLF framing split between CR and LF, and ping comments', async () => {
    assertComplete(await ask(s, replay('llama-cpp-python/stream-crlf-ping.http')), TEXT.llamaCppPython);
  });

  test('openai/error-401: not retried; the detail says the key was refused, never the key', async () => {
    assertFailed(await ask(s, { transcript: 'openai/error-401.http' }), 'llm_unavailable', /HTTP 401, the API key was refused; check LLM_API_KEY.*Incorrect API key provided/);
  });

  test('openai/error-404-model: not retried; the detail names the model', async () => {
    assertFailed(await ask(s, { transcript: 'openai/error-404-model.http' }), 'llm_unavailable', /check LLM_MODEL.*gpt-9-turbo/);
  });

  test('openai/error-400-context-length: not retried; the detail says the prompt is too long', async () => {
    assertFailed(await ask(s, { transcript: 'openai/error-400-context-length.http' }), 'llm_unavailable', /the prompt is too long for the model.*maximum context length/);
  });

  test('openai/error-429-insufficient-quota: not retried, reported as an exhausted quota, not an outage', async () => {
    const asked = await ask(s, { transcript: 'openai/error-429-insufficient-quota.http' });
    assertFailed(asked, 'llm_unavailable', /refused the request \(HTTP 429, the account's quota is exhausted: "You exceeded your current quota/);
  });

  test('openai/error-429-rate-limit: retried after its Retry-After, then the reply', async () => {
    const waitsBefore = s.waits.length;
    const asked = await ask(s, { transcript: 'openai/error-429-rate-limit.http' }, replay('openai/stream-plain.http'));
    assertComplete(asked, TEXT.openaiPlain, { requests: 2 });
    assert.deepEqual(s.waits.slice(waitsBefore), [1000]);
  });

  test('the whole reply (chat.messages.send) of a cut stream is stored with truncated: true', async () => {
    s.fake.enqueue(replay('openai/stream-length.http'));
    const thread = (await s.service.request('POST', '/v1/chat/threads', { token: s.token, body: {} })).body;
    const reply = await s.service.request('POST', `/v1/chat/threads/${thread.id}/messages`, { token: s.token, body: { content: 'Tell me everything.' } });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.assistantMessage.content, TEXT.openaiLength);
    assert.equal(reply.body.assistantMessage.truncated, true);
    assert.equal('truncated' in reply.body.userMessage, false);
  });
});

test('the OpenAPI document describes truncated on messages and on the done frame, as the constant true', async (t) => {
  const service = await startService();
  t.after(() => service.close());
  const doc = (await service.request('GET', '/v1/openapi.json')).body;
  const listed = doc.paths['/v1/chat/threads/{id}/messages'].get.responses['200'].content['application/json'].schema.items;
  assert.equal(listed.properties.truncated.const, true);
  assert.equal(listed.required.includes('truncated'), false);
  const sent = doc.paths['/v1/chat/threads/{id}/messages'].post.responses['200'].content['application/json'].schema;
  assert.equal(sent.properties.assistantMessage.properties.truncated.const, true);
  const frames = doc.paths['/v1/chat/threads/{id}/messages/stream'].post.responses['200'].content['text/event-stream']['x-sse-data'];
  const done = frames.oneOf.find((f: any) => f.properties.type.const === 'done');
  assert.equal(done.properties.truncated.const, true);
  assert.equal(done.properties.assistantMessage.properties.truncated.const, true);
});

describe('OpenAI reasoning models and the token parameter', () => {
  test('openai/error-400-max-tokens: retried once with max_completion_tokens, and that name is kept until restart', async (t) => {
    const s = await setup('openai');
    t.after(() => s.close());
    const first = await ask(s, { transcript: 'openai/error-400-max-tokens.http' }, replay('openai/stream-plain.http'));
    assertComplete(first, TEXT.openaiPlain, { requests: 2 });
    assert.equal(first.bodies[0].max_tokens, 1024);
    assert.equal(first.bodies[1].max_completion_tokens, 1024);
    assert.equal('max_tokens' in first.bodies[1], false);
    assert.deepEqual(s.waits, [], 'the switch is at once, not a backoff');
    const second = await ask(s, replay('openai/stream-plain.http'));
    assert.equal(second.bodies[0].max_completion_tokens, 1024);
  });

  test('a server refusing both names is asked twice, then llm_unavailable quoting it', async (t) => {
    const s = await setup('openai');
    t.after(() => s.close());
    const refused = (name: string): FakeReply => ({ status: 400, body: { error: { message: `Unsupported parameter: '${name}'.`, type: 'invalid_request_error', param: name, code: 'unsupported_parameter' } } });
    const asked = await ask(s, refused('max_tokens'), refused('max_completion_tokens'));
    assertFailed(asked, 'llm_unavailable', /HTTP 400.*Unsupported parameter: 'max_completion_tokens'/, { requests: 2 });
  });

  test('LLM_TOKEN_PARAMETER=max_completion_tokens is sent from the first request', async (t) => {
    const s = await setup('openai', { LLM_TOKEN_PARAMETER: 'max_completion_tokens', LLM_MAX_TOKENS: '4096' });
    t.after(() => s.close());
    const asked = await ask(s, replay('openai/stream-plain.http'));
    assert.equal(asked.bodies[0].max_completion_tokens, 4096);
    assert.equal('max_tokens' in asked.bodies[0], false);
  });
});

describe('Anthropic, replayed through the assistant', () => {
  let s: Setup;
  before(async () => {
    s = await setup('anthropic');
  });
  after(() => s.close());

  test('anthropic/stream-text: ping events are ignored; the reply is stored whole', async () => {
    assertComplete(await ask(s, replay('anthropic/stream-text.http')), TEXT.anthropicText);
  });

  test('anthropic/stream-thinking: thinking blocks are neither shown nor stored', async () => {
    assertComplete(await ask(s, replay('anthropic/stream-thinking.http')), TEXT.anthropicThinking);
  });

  test('anthropic/stream-max-tokens: stop_reason max_tokens is stored with truncated: true', async () => {
    assertComplete(await ask(s, replay('anthropic/stream-max-tokens.http')), TEXT.anthropicMaxTokens, { truncated: true });
  });

  test('anthropic/stream-thinking-max-tokens: a budget spent thinking is llm_error naming LLM_MAX_TOKENS and reasoning', async () => {
    assertFailed(await ask(s, replay('anthropic/stream-thinking-max-tokens.http')), 'llm_error', /LLM_MAX_TOKENS=1024\b.*reasoning/);
  });

  test('anthropic/stream-refusal: stop_reason refusal is the reply, its words as sent', async () => {
    assertComplete(await ask(s, replay('anthropic/stream-refusal.http')), 'Here’s a');
  });

  test('anthropic/stream-overloaded-after-text: an error event after text ends with an error frame quoting it; no retry', async () => {
    const asked = await ask(s, replay('anthropic/stream-overloaded-after-text.http'));
    assertFailed(asked, 'llm_unavailable', /Overloaded/, {
      sent: 'Your newsletter open rate rose to 41% last month — well above the 25% average. Subject lines that mentioned a €10',
    });
  });

  test('anthropic/error-529-overloaded: retried, then the reply', async () => {
    assertComplete(await ask(s, { transcript: 'anthropic/error-529-overloaded.http' }, replay('anthropic/stream-text.http')), TEXT.anthropicText, { requests: 2 });
  });

  test('anthropic/error-429-retry-after: retried after its retry-after header', async () => {
    const waitsBefore = s.waits.length;
    const asked = await ask(s, { transcript: 'anthropic/error-429-retry-after.http' }, replay('anthropic/stream-text.http'));
    assertComplete(asked, TEXT.anthropicText, { requests: 2 });
    assert.deepEqual(s.waits.slice(waitsBefore), [1000]);
  });

  test('anthropic/error-529-overloaded twice: llm_unavailable saying it is overloaded', async () => {
    const overloaded = { transcript: 'anthropic/error-529-overloaded.http' };
    assertFailed(await ask(s, overloaded, overloaded), 'llm_unavailable', /HTTP 529, overloaded: "Overloaded"; attempt 2 of 2/, { requests: 2 });
  });

  test('anthropic/error-401: not retried; the detail says the key was refused', async () => {
    assertFailed(await ask(s, { transcript: 'anthropic/error-401.http' }), 'llm_unavailable', /the API key was refused.*invalid x-api-key/);
  });
});

/** Generates an sms campaign after queueing `replies`; returns the answer and what the fake saw. */
async function draft(s: Setup, ...replies: FakeReply[]) {
  const before = s.fake.requests.length;
  const campaignsBefore = await campaignTotal(s.service, s.token);
  s.fake.enqueue(...replies);
  const reply = await generate(s.service, s.token, briefFor(s.segmentId));
  const mine = s.fake.requests.slice(before);
  return { reply, requests: mine.length, aborted: mine.filter((r) => r.aborted).length, stored: (await campaignTotal(s.service, s.token)) - campaignsBefore };
}

describe('campaign generation through replayed servers', () => {
  let openai: Setup;
  let anthropic: Setup;
  before(async () => {
    [openai, anthropic] = await Promise.all([setup('openai'), setup('anthropic')]);
  });
  after(() => Promise.all([openai.close(), anthropic.close()]));

  for (const [name, transcript, title, intervalMs] of [
    ['openai/stream-json', 'openai/stream-json.http', 'Germany’s top café owners: thank you!', 0],
    ['ollama/stream-json-reasoning', 'ollama/stream-json-reasoning.http', 'Ciao, gelato lovers 🍦', 0],
    ['vllm/stream-json-reasoning-content, reasoning for longer than LLM_TIMEOUT_MS', 'vllm/stream-json-reasoning-content.http', 'Fresh tulips, fresh savings', 40],
  ] as const) {
    test(`${name}: the campaign is drafted from the streamed JSON with one request`, { timeout: 20_000 }, async () => {
      const { reply, requests, aborted, stored } = await draft(openai, replay(transcript, intervalMs));
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.body.title, title);
      assert.equal(reply.body.model, 'test-model');
      assert.deepEqual([requests, aborted, stored], [1, 0, 1]);
    });
  }

  test('anthropic/stream-tool-json: the forced tool input streamed as input_json_delta is the campaign', async () => {
    const { reply, requests, stored } = await draft(anthropic, replay('anthropic/stream-tool-json.http'));
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.title, 'Danke, Hamburg!');
    assert.equal(reply.body.callToAction, 'Redeem 20% off');
    assert.deepEqual([requests, stored], [1, 1]);
  });

  test('openai/stream-json-length: a cut campaign is 502 llm_error naming LLM_MAX_TOKENS, with no second request', async () => {
    const { reply, requests, stored } = await draft(openai, replay('openai/stream-json-length.http'));
    assertProblem(reply, 502, 'llm_error');
    assert.match(reply.body.detail, /cut at its token budget \(LLM_MAX_TOKENS=1024\) before it finished; raise LLM_MAX_TOKENS/);
    assert.doesNotMatch(reply.body.detail, /reasoning/);
    assert.deepEqual([requests, stored], [1, 0]);
  });

  for (const [setupOf, transcript] of [
    [() => openai, 'ollama/stream-reasoning-length.http'],
    [() => anthropic, 'anthropic/stream-thinking-max-tokens.http'],
  ] as const) {
    test(`${transcript}: a budget spent reasoning is 502 llm_error saying so, with no second request`, async () => {
      const { reply, requests, stored } = await draft(setupOf(), replay(transcript));
      assertProblem(reply, 502, 'llm_error');
      assert.match(reply.body.detail, /spent its whole token budget \(LLM_MAX_TOKENS=1024\) reasoning and wrote no reply/);
      assert.deepEqual([requests, stored], [1, 0]);
    });
  }

  test('openai/stream-refusal: a refused campaign is 502 llm_error quoting the refusal', async () => {
    const { reply, requests, stored } = await draft(openai, replay('openai/stream-refusal.http'));
    assertProblem(reply, 502, 'llm_error');
    assert.equal(reply.body.detail, `The model refused to write this campaign: "${TEXT.openaiRefusal}"`);
    assert.deepEqual([requests, stored], [1, 0]);
  });

  test('anthropic/stream-refusal: stop_reason refusal is 502 llm_error quoting what it wrote', async () => {
    const { reply, stored } = await draft(anthropic, replay('anthropic/stream-refusal.http'));
    assertProblem(reply, 502, 'llm_error');
    assert.equal(reply.body.detail, 'The model refused to write this campaign: "Here’s a"');
    assert.equal(stored, 0);
  });

  test('openai/error-429-insufficient-quota: 503 after one request, saying the quota is exhausted', async () => {
    const { reply, requests, stored } = await draft(openai, { transcript: 'openai/error-429-insufficient-quota.http' });
    assertProblem(reply, 503, 'llm_unavailable');
    assert.match(reply.body.detail, /quota is exhausted/);
    assert.deepEqual([requests, stored], [1, 0]);
  });
});
