// Campaign generation through a model provider over HTTP (interface.md section 4, product.md section 6), for the
// OpenAI Chat Completions and Anthropic Messages wire formats: what the provider is asked, replies repaired or asked
// for once more, 502 llm_error and 503 llm_unavailable with nothing stored, retries and their waits, timeouts,
// validation before any model call. The provider is the fake on loopback; jitter is 0, so only demanded waits wait.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assertProblem } from './helpers.ts';
import {
  briefFor,
  campaignTotal,
  conversation,
  copyReply,
  generate,
  generateOk,
  GOOD_COPY,
  promptText,
  withProvider,
} from './support/campaigns.ts';

const PROVIDERS = ['openai', 'anthropic'] as const;
const copyOf = (c: { title: string; message: string; callToAction: string }) => ({ title: c.title, message: c.message, callToAction: c.callToAction });
/** GOOD_COPY as stored for an email (nothing appended to the message). */
const EMAIL = { channel: 'email' } as const;

describe('reply repair of a text reply (openai; anthropic answering in text instead of the tool)', () => {
  const json = JSON.stringify(GOOD_COPY);
  const cases: [string, string][] = [
    ['JSON in a ```json code fence', `\`\`\`json\n${json}\n\`\`\``],
    ['JSON in a bare ``` code fence', `\`\`\`\n${json}\n\`\`\``],
    ['JSON amid prose', `Sure! Here is the campaign you asked for:\n${json}\nLet me know if you want changes.`],
    ['keys in the wrong case (Title, MESSAGE, CALLTOACTION)', JSON.stringify({ Title: GOOD_COPY.title, MESSAGE: GOOD_COPY.message, CALLTOACTION: GOOD_COPY.callToAction })],
    ['call_to_action for callToAction', JSON.stringify({ title: GOOD_COPY.title, message: GOOD_COPY.message, call_to_action: GOOD_COPY.callToAction })],
    ['cta for callToAction', JSON.stringify({ title: GOOD_COPY.title, message: GOOD_COPY.message, cta: GOOD_COPY.callToAction })],
    ['the object wrapped as { "campaign": { ... } }', JSON.stringify({ campaign: GOOD_COPY })],
  ];
  for (const provider of PROVIDERS) {
    for (const [name, text] of cases) {
      test(`${provider}: ${name} is repaired with one provider request`, async (t) => {
        const { service, fake, token, segment } = await withProvider(t, provider);
        fake.enqueue({ text });
        const campaign = await generateOk(service, token, briefFor(segment.id, EMAIL));
        assert.deepEqual(copyOf(campaign), GOOD_COPY);
        assert.equal(fake.requests.length, 1);
      });
    }
  }
});

describe('reply repair (anthropic: the reply is the forced tool input)', () => {
  const cases: [string, Record<string, unknown>][] = [
    ['keys in the wrong case (Title, MESSAGE, CALLTOACTION)', { Title: GOOD_COPY.title, MESSAGE: GOOD_COPY.message, CALLTOACTION: GOOD_COPY.callToAction }],
    ['call_to_action for callToAction', { title: GOOD_COPY.title, message: GOOD_COPY.message, call_to_action: GOOD_COPY.callToAction }],
    ['cta for callToAction', { title: GOOD_COPY.title, message: GOOD_COPY.message, cta: GOOD_COPY.callToAction }],
    ['the object wrapped as { "campaign": { ... } }', { campaign: GOOD_COPY }],
  ];
  for (const [name, input] of cases) {
    test(`${name} is repaired with one provider request`, async (t) => {
      const { service, fake, token, segment } = await withProvider(t, 'anthropic');
      fake.enqueue({ json: input });
      const campaign = await generateOk(service, token, briefFor(segment.id, EMAIL));
      assert.deepEqual(copyOf(campaign), GOOD_COPY);
      assert.equal(fake.requests.length, 1);
    });
  }
});

for (const provider of PROVIDERS) {
  describe(`${provider}: what the provider is asked`, () => {
    test('the request carries the key, the model and the JSON output mode', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      fake.enqueue(copyReply(GOOD_COPY));
      await generateOk(service, token, briefFor(segment.id));
      const [request] = fake.requests;
      assert.ok(request);
      assert.equal(request.body.model, 'test-model');
      assert.equal(request.body.stream, true, 'generation is streamed like every provider call');
      assert.equal(request.body.max_tokens, 1024, 'the budget is LLM_MAX_TOKENS, which a cut reply names');
      if (provider === 'openai') {
        assert.equal(request.path, '/v1/chat/completions');
        assert.equal(request.headers.authorization, 'Bearer test-key');
        assert.equal(request.body.response_format.type, 'json_schema');
        assert.equal(request.body.response_format.json_schema.strict, true);
        assert.deepEqual(request.body.response_format.json_schema.schema.required, ['title', 'message', 'callToAction']);
      } else {
        assert.equal(request.path, '/v1/messages');
        assert.equal(request.headers['x-api-key'], 'test-key');
        assert.equal(request.headers['anthropic-version'], '2023-06-01');
        assert.equal(request.headers.authorization, undefined);
        assert.deepEqual(request.body.tool_choice, { type: 'tool', name: 'campaign' });
        assert.equal(request.body.tools[0].name, 'campaign');
        assert.deepEqual(request.body.tools[0].input_schema.required, ['title', 'message', 'callToAction']);
      }
    });

    test('the prompt holds the objective, tone, channel, the three limits and the audience with its size', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      fake.enqueue(copyReply(GOOD_COPY));
      const objective = 'Announce the opening of our Porto store with a 15% welcome voucher.';
      await generateOk(service, token, briefFor(segment.id, { objective, channel: 'push', tone: 'urgent' }));
      const prompt = promptText(fake.requests[0]!.body);
      assert.ok(prompt.includes(objective), prompt);
      assert.match(prompt, /\burgent\b/);
      assert.match(prompt, /\bpush\b/);
      assert.match(prompt, /title at most 60 characters/);
      assert.match(prompt, /message at most 140 characters/);
      assert.match(prompt, /call to action at most 40 characters/);
      assert.ok(prompt.includes(`customers in Fakeland ${provider}`), prompt);
      assert.match(prompt, /\b3 people\b/);
    });

    test('the stored campaign names the configured model and the caller', async (t) => {
      const { service, fake, token, userId, segment } = await withProvider(t, provider);
      fake.enqueue(copyReply(GOOD_COPY));
      const campaign = await generateOk(service, token, briefFor(segment.id, EMAIL));
      assert.equal(campaign.model, 'test-model');
      assert.equal(campaign.createdBy, userId);
      assert.deepEqual(copyOf(campaign), GOOD_COPY);
      const stored = await service.request('GET', `/v1/campaigns/${campaign.id}`, { token });
      assert.deepEqual(stored.body, campaign);
    });
  });

  describe(`${provider}: validation comes before any model call`, () => {
    test('a bad body is 400 with zero provider requests', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      assertProblem(await generate(service, token, briefFor(segment.id, { objective: 'too short' })), 400, 'validation_failed', ['objective']);
      assertProblem(await generate(service, token, { segmentId: segment.id }), 400, 'validation_failed', ['objective', 'channel', 'tone']);
      assert.equal(fake.requests.length, 0);
    });

    test('an unknown segmentId is 400 on segmentId with zero provider requests', async (t) => {
      const { service, fake, token } = await withProvider(t, provider);
      assertProblem(await generate(service, token, briefFor('no-such-segment')), 400, 'validation_failed', ['segmentId']);
      assert.equal(fake.requests.length, 0);
    });
  });

  describe(`${provider}: unusable replies`, () => {
    const garbage = provider === 'openai' ? { text: 'I am sorry, I cannot write that campaign.' } : { json: { answer: 'I am sorry' } };

    test('an empty field, then a valid reply, succeeds; the second request shows the reply and says what was wrong', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      const empty = { ...GOOD_COPY, title: '   ' };
      fake.enqueue(copyReply(empty), copyReply(GOOD_COPY));
      const campaign = await generateOk(service, token, briefFor(segment.id, EMAIL));
      assert.deepEqual(copyOf(campaign), GOOD_COPY);
      assert.equal(fake.requests.length, 2);
      const [first, second] = [conversation(fake.requests[0]!.body), conversation(fake.requests[1]!.body)];
      assert.equal(first.length, 1);
      assert.equal(second.length, 3);
      assert.deepEqual(second[0], first[0]);
      assert.equal(second[1]!.role, 'assistant');
      assert.deepEqual(JSON.parse(second[1]!.content), empty);
      assert.equal(second[2]!.role, 'user');
      assert.match(second[2]!.content, /title: Must not be empty\./);
    });

    test('garbage, then a valid reply, succeeds with exactly 2 provider requests', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      fake.enqueue(garbage, copyReply(GOOD_COPY));
      const campaign = await generateOk(service, token, briefFor(segment.id, EMAIL));
      assert.deepEqual(copyOf(campaign), GOOD_COPY);
      assert.equal(fake.requests.length, 2);
      assert.match(conversation(fake.requests[1]!.body)[2]!.content, /could not be used/);
    });

    test('garbage twice is 502 llm_error after exactly 2 provider requests, nothing stored', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      const total = await campaignTotal(service, token);
      fake.enqueue(garbage, garbage);
      assertProblem(await generate(service, token, briefFor(segment.id)), 502, 'llm_error');
      assert.equal(fake.requests.length, 2);
      assert.equal(await campaignTotal(service, token), total);
    });

    test('a 200 that is not the wire format (an HTML page) is 502 llm_error, nothing stored', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      fake.enqueue({ status: 200, body: '<html>gateway</html>' });
      assertProblem(await generate(service, token, briefFor(segment.id)), 502, 'llm_error');
      assert.equal(await campaignTotal(service, token), 0);
    });
  });

  describe(`${provider}: provider failures and retries`, () => {
    test('500 on every attempt is 503 llm_unavailable after exactly 1 + LLM_MAX_RETRIES requests, nothing stored', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider, { LLM_MAX_RETRIES: '2' });
      fake.defaultReply = { status: 500 };
      assertProblem(await generate(service, token, briefFor(segment.id)), 503, 'llm_unavailable');
      assert.equal(fake.requests.length, 3);
      assert.equal(await campaignTotal(service, token), 0);
    });

    test('LLM_MAX_RETRIES=4 makes 5 attempts', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider, { LLM_MAX_RETRIES: '4' });
      fake.defaultReply = { status: 502 };
      assertProblem(await generate(service, token, briefFor(segment.id)), 503, 'llm_unavailable');
      assert.equal(fake.requests.length, 5);
    });

    test('503, then a valid reply, succeeds', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      fake.enqueue({ status: 503 }, copyReply(GOOD_COPY));
      const campaign = await generateOk(service, token, briefFor(segment.id, EMAIL));
      assert.deepEqual(copyOf(campaign), GOOD_COPY);
      assert.equal(fake.requests.length, 2);
    });

    test('429 with Retry-After: 1 waits at least a second before the next request', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      fake.enqueue({ status: 429, headers: { 'retry-after': '1' } }, copyReply(GOOD_COPY));
      await generateOk(service, token, briefFor(segment.id));
      const [first, second] = fake.requests;
      assert.ok(first && second && fake.requests.length === 2);
      assert.ok(second.startedAt - first.startedAt >= 1000, `waited ${second.startedAt - first.startedAt} ms`);
    });

    test('a reset connection, then a valid reply, succeeds', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      fake.enqueue({ reset: true }, copyReply(GOOD_COPY));
      await generateOk(service, token, briefFor(segment.id));
      assert.equal(fake.requests.length, 2);
    });

    test('a provider that never answers gives 503 llm_unavailable within a few seconds at LLM_TIMEOUT_MS=300', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider, { LLM_TIMEOUT_MS: '300', LLM_MAX_RETRIES: '2' });
      fake.defaultReply = { hang: true };
      const started = Date.now();
      assertProblem(await generate(service, token, briefFor(segment.id)), 503, 'llm_unavailable');
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 900 && elapsed < 4000, `took ${elapsed} ms`);
      assert.equal((await fake.waitForAborts(3)).length, 3);
      assert.equal(fake.requests.length, 3);
      assert.equal(await campaignTotal(service, token), 0);
    });

    test('401 is not retried: exactly one request, 503 llm_unavailable', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      fake.defaultReply = { status: 401 };
      const reply = await generate(service, token, briefFor(segment.id));
      assertProblem(reply, 503, 'llm_unavailable');
      assert.equal(fake.requests.length, 1);
      assert.doesNotMatch(reply.text, /test-key/);
    });

    test('a client that hangs up aborts the model call, and nothing is stored', async (t) => {
      const { service, fake, token, segment } = await withProvider(t, provider);
      fake.defaultReply = { hang: true };
      const client = new AbortController();
      const pending = fetch(`${service.url}/v1/campaigns/generate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(briefFor(segment.id)),
        signal: client.signal,
      }).catch((error: unknown) => error);
      await fake.waitForRequests(1);
      client.abort();
      assert.ok((await pending) instanceof Error);
      assert.equal((await fake.waitForAborts(1)).length, 1);
      assert.equal(fake.requests.length, 1);
      assert.equal(await campaignTotal(service, token), 0);
    });
  });
}

describe('openai JSON modes', () => {
  test('LLM_JSON_MODE=json_object asks for a JSON object without a schema', async (t) => {
    const { service, fake, token, segment } = await withProvider(t, 'openai', { LLM_JSON_MODE: 'json_object' });
    fake.enqueue(copyReply(GOOD_COPY));
    await generateOk(service, token, briefFor(segment.id));
    assert.deepEqual(fake.requests[0]!.body.response_format, { type: 'json_object' });
  });

  test('LLM_JSON_MODE=none asks through the prompt only, and a reply in prose is still repaired', async (t) => {
    const { service, fake, token, segment } = await withProvider(t, 'openai', { LLM_JSON_MODE: 'none' });
    fake.enqueue({ text: `Here it is: ${JSON.stringify(GOOD_COPY)}` });
    const campaign = await generateOk(service, token, briefFor(segment.id, EMAIL));
    assert.equal(fake.requests[0]!.body.response_format, undefined);
    assert.deepEqual(copyOf(campaign), GOOD_COPY);
  });
});
