// Tools in the provider layer (product.md section 12), through the real provider code against the fake provider in
// both wire formats: calls streamed in pieces and yielded whole, the tools and the results sent in each format's
// shape, the `tool_calls` finish, retries around calls, transcripts of real-shaped streams, and the local generator.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { TOOL_SPECS, TOOLS as CHAT_TOOLS } from '../src/chat/tools.ts';
import { ACTION_KINDS } from '../src/domain/chat.ts';
import { loadConfig } from '../src/config.ts';
import { AppError } from '../src/domain/errors.ts';
import { createLogger } from '../src/http/logger.ts';
import { createLanguageModel, type LanguageModel, type ModelRequest, type ReplyPart, type ToolCall, type ToolSpec } from '../src/llm/index.ts';
import { createLocalModel } from '../src/llm/local.ts';
import { startService } from './helpers.ts';
import { startFakeProvider, type FakeProvider, type FakeReply } from './support/fake-provider.ts';

type Format = 'openai' | 'anthropic';
const FORMATS: Format[] = ['openai', 'anthropic'];

const SYSTEM = 'You are a marketing analyst for this customer base.';
const QUESTION = 'How many German customers spent over 500?';
const COUNT_AUDIENCE: ToolSpec = {
  name: 'count_audience',
  description: 'Counts the customers matching all the conditions.',
  inputSchema: { type: 'object', properties: { conditions: { type: 'array' } }, required: ['conditions'] },
};
const LIST_SEGMENTS: ToolSpec = { name: 'list_segments', description: 'Lists the saved segments with their sizes.', inputSchema: { type: 'object', properties: {} } };
const TOOLS = [COUNT_AUDIENCE, LIST_SEGMENTS];
const CONDITIONS = { conditions: [{ field: 'country', operator: 'eq', value: 'DE' }] };
const CONDITIONS_JSON = JSON.stringify(CONDITIONS);

interface Setup {
  fake: FakeProvider;
  model: LanguageModel;
}

/** A fake provider and a model speaking `format` to it, with one retry and no real waits; both close with the test. */
async function setup(t: TestContext, format: Format): Promise<Setup> {
  const fake = await startFakeProvider();
  t.after(() => fake.close());
  fake.defaultReply = { status: 500, body: { error: { message: 'unscripted request' } } };
  const config = loadConfig({
    DATABASE_PATH: ':memory:',
    TOKEN_SECRET: 'test-secret-that-is-at-least-32-bytes-long',
    LLM_PROVIDER: format,
    LLM_BASE_URL: fake.url,
    LLM_API_KEY: 'sk-test-0123456789abcdef',
    LLM_MODEL: 'test-model',
    LLM_TIMEOUT_MS: '5000',
    LLM_MAX_RETRIES: '1',
  });
  const model = createLanguageModel(config.llm, { fetch, sleep: async () => undefined, random: () => 0, logger: createLogger('silent') });
  return { fake, model };
}

function request(fields: Partial<ModelRequest> = {}): ModelRequest {
  return { system: SYSTEM, messages: [{ role: 'user', content: QUESTION }], tools: TOOLS, signal: new AbortController().signal, local: () => 'local reply', ...fields };
}

/** Every part a stream yielded, and what it threw, if anything. */
async function partsOf(stream: AsyncIterable<ReplyPart>): Promise<{ parts: ReplyPart[]; error?: unknown }> {
  const parts: ReplyPart[] = [];
  try {
    for await (const part of stream) parts.push(part);
    return { parts };
  } catch (error) {
    return { parts, error };
  }
}

/** The parts in short: `text:…`, `call:<id>`, `finish:<reason>`. */
const shape = (parts: ReplyPart[]) =>
  parts.map((p) => (p.type === 'text' ? `text:${p.text}` : p.type === 'tool-call' ? `call:${p.call.id}` : `finish:${p.finish.reason}`));
const callsOf = (parts: ReplyPart[]): ToolCall[] => parts.flatMap((p) => (p.type === 'tool-call' ? [p.call] : []));

const BOUNDED = { timeout: 10_000 };

for (const format of FORMATS) {
  describe(`${format}: tool calls streamed`, () => {
    test('a call whose arguments arrive over several chunks is yielded once, whole, with its id and parsed input, then finish tool_calls', BOUNDED, async (t) => {
      const { fake, model } = await setup(t, format);
      fake.enqueue({ toolCalls: [{ id: 'call_1', name: 'count_audience', arguments: CONDITIONS_JSON }], splitArguments: 6 });
      const { parts, error } = await partsOf(model.stream(request()));
      assert.equal(error, undefined);
      assert.deepEqual(shape(parts), ['call:call_1', 'finish:tool_calls']);
      assert.deepEqual(callsOf(parts), [{ id: 'call_1', name: 'count_audience', input: CONDITIONS }]);
      assert.equal(fake.requests.length, 1);
    });

    test('two parallel calls are yielded in order, each with its own id and input', BOUNDED, async (t) => {
      const { fake, model } = await setup(t, format);
      fake.enqueue({
        toolCalls: [
          { id: 'call_a', name: 'count_audience', arguments: CONDITIONS_JSON },
          { id: 'call_b', name: 'list_segments', arguments: '{}' },
        ],
        splitArguments: 4,
      });
      const { parts } = await partsOf(model.stream(request()));
      assert.deepEqual(shape(parts), ['call:call_a', 'call:call_b', 'finish:tool_calls']);
      assert.deepEqual(callsOf(parts), [
        { id: 'call_a', name: 'count_audience', input: CONDITIONS },
        { id: 'call_b', name: 'list_segments', input: {} },
      ]);
    });

    test('text before a call comes first, then the call, then the finish', BOUNDED, async (t) => {
      const { fake, model } = await setup(t, format);
      fake.enqueue({ text: 'Let me count them.', toolCalls: [{ id: 'call_1', name: 'count_audience', arguments: CONDITIONS_JSON }] });
      const { parts } = await partsOf(model.stream(request()));
      assert.deepEqual(shape(parts), ['text:Let me count them.', 'call:call_1', 'finish:tool_calls']);
    });

    test('arguments that are not JSON still yield the call, input undefined and the raw text in unparsed', BOUNDED, async (t) => {
      const { fake, model } = await setup(t, format);
      const broken = '{"conditions": [{"field": "country",';
      fake.enqueue({ toolCalls: [{ id: 'call_1', name: 'count_audience', arguments: broken }] });
      const { parts } = await partsOf(model.stream(request()));
      assert.deepEqual(callsOf(parts), [{ id: 'call_1', name: 'count_audience', input: undefined, unparsed: broken }]);
      assert.deepEqual(shape(parts).at(-1), 'finish:tool_calls');
    });

    test('complete() returns the calls with the text and the finish', BOUNDED, async (t) => {
      const { fake, model } = await setup(t, format);
      fake.enqueue({ text: 'Counting.', toolCalls: [{ id: 'call_1', name: 'list_segments', arguments: '' }] });
      const reply = await model.complete(request());
      assert.equal(reply.text, 'Counting.');
      assert.equal(reply.finish.reason, 'tool_calls');
      assert.deepEqual(reply.toolCalls, [{ id: 'call_1', name: 'list_segments', input: {} }]);
    });

    test('a reply without calls to a request with tools finishes stop and has no toolCalls', BOUNDED, async (t) => {
      const { fake, model } = await setup(t, format);
      fake.enqueue({ text: 'You have 12 German customers over 500.' });
      const reply = await model.complete(request());
      assert.deepEqual(reply, { text: 'You have 12 German customers over 500.', finish: reply.finish });
      assert.equal(reply.finish.reason, 'stop');
    });

    test('a break before any part was yielded is retried, and only the second reply is seen', BOUNDED, async (t) => {
      const { fake, model } = await setup(t, format);
      fake.enqueue(
        { toolCalls: [{ id: 'call_1', name: 'count_audience', arguments: CONDITIONS_JSON }], failAfterCalls: 0 },
        { toolCalls: [{ id: 'call_2', name: 'count_audience', arguments: CONDITIONS_JSON }] },
      );
      const { parts, error } = await partsOf(model.stream(request()));
      assert.equal(error, undefined);
      assert.deepEqual(shape(parts), ['call:call_2', 'finish:tool_calls']);
      assert.equal(fake.requests.length, 2);
    });

    test('a request with both json and tools is refused with an Error before anything is sent', BOUNDED, async (t) => {
      const { fake, model } = await setup(t, format);
      const { error } = await partsOf(model.stream(request({ json: { name: 'campaign', schema: { type: 'object' } } })));
      assert.ok(error instanceof Error && !(error instanceof AppError));
      assert.match(error.message, /JSON or offers tools, not both/);
      assert.equal(fake.requests.length, 0);
    });
  });
}

describe('the request in each format', () => {
  const conversation = (): ModelRequest['messages'] => [
    { role: 'user', content: QUESTION },
    {
      role: 'assistant',
      content: 'Let me look.',
      toolCalls: [
        { id: 'call_a', name: 'count_audience', input: CONDITIONS },
        { id: 'call_b', name: 'list_segments', input: undefined, unparsed: '{"oops' },
      ],
    },
    {
      role: 'tool',
      results: [
        { callId: 'call_a', content: '{"count":12}' },
        { callId: 'call_b', content: 'Error: the arguments were not JSON.', isError: true },
      ],
    },
  ];

  test('openai: tools as function tools; calls back as tool_calls with JSON arguments; one tool message per result', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'openai');
    fake.enqueue({ text: 'There are 12.' });
    assert.equal((await model.complete(request({ messages: conversation() }))).text, 'There are 12.');
    const body = fake.requests[0]!.body;
    assert.deepEqual(body.tools, [
      { type: 'function', function: { name: 'count_audience', description: COUNT_AUDIENCE.description, parameters: COUNT_AUDIENCE.inputSchema } },
      { type: 'function', function: { name: 'list_segments', description: LIST_SEGMENTS.description, parameters: LIST_SEGMENTS.inputSchema } },
    ]);
    assert.deepEqual(body.messages, [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: QUESTION },
      {
        role: 'assistant',
        content: 'Let me look.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'count_audience', arguments: CONDITIONS_JSON } },
          { id: 'call_b', type: 'function', function: { name: 'list_segments', arguments: '{"oops' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"count":12}' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Error: the arguments were not JSON.' },
    ]);
    assert.equal(body.tool_choice, undefined);
  });

  test('openai: an assistant turn of calls only is sent with content null', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'openai');
    fake.enqueue({ text: 'ok' });
    const messages: ModelRequest['messages'] = [
      { role: 'user', content: QUESTION },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_a', name: 'list_segments', input: {} }] },
      { role: 'tool', results: [{ callId: 'call_a', content: '[]' }] },
    ];
    await model.complete(request({ messages }));
    assert.deepEqual(fake.requests[0]!.body.messages[2], {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'list_segments', arguments: '{}' } }],
    });
  });

  test('anthropic: tools with input_schema; calls back as tool_use blocks after the text; results as tool_result blocks of one user message', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'anthropic');
    fake.enqueue({ text: 'There are 12.' });
    const messages = [...conversation(), { role: 'user' as const, content: 'And in France?' }];
    await model.complete(request({ messages }));
    const body = fake.requests[0]!.body;
    assert.deepEqual(body.tools, [
      { name: 'count_audience', description: COUNT_AUDIENCE.description, input_schema: COUNT_AUDIENCE.inputSchema },
      { name: 'list_segments', description: LIST_SEGMENTS.description, input_schema: LIST_SEGMENTS.inputSchema },
    ]);
    assert.equal(body.tool_choice, undefined);
    assert.equal(body.system, SYSTEM);
    assert.deepEqual(body.messages, [
      { role: 'user', content: QUESTION },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me look.' },
          { type: 'tool_use', id: 'call_a', name: 'count_audience', input: CONDITIONS },
          // The API takes only an object as input: arguments that were not JSON go back as {}.
          { type: 'tool_use', id: 'call_b', name: 'list_segments', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_a', content: '{"count":12}' },
          { type: 'tool_result', tool_use_id: 'call_b', content: 'Error: the arguments were not JSON.', is_error: true },
          // A user turn right after the results joins their message, after them.
          { type: 'text', text: 'And in France?' },
        ],
      },
    ]);
  });

  test('anthropic: an assistant turn of calls only has no empty text block', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'anthropic');
    fake.enqueue({ text: 'ok' });
    const messages: ModelRequest['messages'] = [
      { role: 'user', content: QUESTION },
      { role: 'assistant', content: '', toolCalls: [{ id: 'toolu_a', name: 'list_segments', input: {} }] },
      { role: 'tool', results: [{ callId: 'toolu_a', content: '[]' }] },
    ];
    await model.complete(request({ messages }));
    assert.deepEqual(fake.requests[0]!.body.messages[1], { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_a', name: 'list_segments', input: {} }] });
  });

  for (const format of FORMATS) {
    test(`${format}: a request without tools is sent exactly as before, with no tools field`, BOUNDED, async (t) => {
      const { fake, model } = await setup(t, format);
      fake.enqueue({ text: 'hi' });
      await model.complete(request({ tools: undefined, messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }] }));
      const body = fake.requests[0]!.body;
      assert.equal('tools' in body, false);
      const turns = format === 'openai' ? body.messages.slice(1) : body.messages;
      assert.deepEqual(turns, [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }]);
    });
  }
});

describe('retries around tool calls', () => {
  test('anthropic: a break after a call was yielded is not retried; the stream throws llm_unavailable', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'anthropic');
    fake.enqueue({
      toolCalls: [
        { id: 'toolu_a', name: 'count_audience', arguments: CONDITIONS_JSON },
        { id: 'toolu_b', name: 'list_segments', arguments: '{}' },
      ],
      failAfterCalls: 1,
    });
    const { parts, error } = await partsOf(model.stream(request()));
    assert.deepEqual(shape(parts), ['call:toolu_a']);
    assert.ok(error instanceof AppError && error.code === 'llm_unavailable', String(error));
    assert.match(error.message, /stopped in the middle of its reply/);
    assert.equal(fake.requests.length, 1);
  });

  test('anthropic: an error event after a call was yielded is not retried either', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'anthropic');
    fake.enqueue({ toolCalls: [{ id: 'toolu_a', name: 'count_audience', arguments: CONDITIONS_JSON }, { id: 'toolu_b', name: 'x', arguments: '{}' }], failAfterCalls: 1, failWith: 'error' });
    const { parts, error } = await partsOf(model.stream(request()));
    assert.deepEqual(shape(parts), ['call:toolu_a']);
    assert.ok(error instanceof AppError && error.code === 'llm_unavailable');
    assert.equal(fake.requests.length, 1);
  });

  test('openai: calls are complete only at the finish, so a break after the text before them is not retried', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'openai');
    fake.enqueue({ text: 'Let me count.', toolCalls: [{ id: 'call_a', name: 'count_audience', arguments: CONDITIONS_JSON }], failAfterCalls: 0 });
    const { parts, error } = await partsOf(model.stream(request()));
    assert.deepEqual(shape(parts), ['text:Let me count.']);
    assert.ok(error instanceof AppError && error.code === 'llm_unavailable');
    assert.equal(fake.requests.length, 1);
  });
});

describe('servers\' habits', () => {
  const sse = (chunks: unknown[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
  const raw = (body: string): FakeReply => ({ status: 200, body, headers: { 'content-type': 'text/event-stream' } });

  test('openai: calls that all come at index 0, told apart by new ids, and finish_reason stop (Ollama) are two calls, finish tool_calls', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'openai');
    const call = (id: string, name: string, args: string) => ({
      choices: [{ index: 0, delta: { role: 'assistant', content: '', tool_calls: [{ id, index: 0, type: 'function', function: { name, arguments: args } }] }, finish_reason: null }],
    });
    fake.enqueue(
      raw(
        sse([
          call('call_x1', 'count_audience', CONDITIONS_JSON),
          call('call_x2', 'list_segments', '{}'),
          { choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: 'stop' }] },
        ]),
      ),
    );
    const { parts } = await partsOf(model.stream(request()));
    assert.deepEqual(callsOf(parts), [
      { id: 'call_x1', name: 'count_audience', input: CONDITIONS },
      { id: 'call_x2', name: 'list_segments', input: {} },
    ]);
    assert.equal(shape(parts).at(-1), 'finish:tool_calls');
  });

  test('openai: a stream that ends in the middle of a call\'s arguments, nothing yielded yet, is retried', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'openai');
    const piece = (args: string) => ({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_a', function: { name: 'count_audience', arguments: args } }] }, finish_reason: null }] });
    fake.enqueue(raw(sse([piece('{"condi'), piece('tions": [')]).replace('data: [DONE]\n\n', '')), {
      toolCalls: [{ id: 'call_b', name: 'count_audience', arguments: CONDITIONS_JSON }],
    });
    const { parts } = await partsOf(model.stream(request()));
    assert.deepEqual(shape(parts), ['call:call_b', 'finish:tool_calls']);
    assert.equal(fake.requests.length, 2);
  });

  test('anthropic: a tool_use block the server never closed is still yielded before the finish', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'anthropic');
    const events = [
      ['message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [] } }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_a', name: 'list_segments', input: {} } }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use' } }],
      ['message_stop', { type: 'message_stop' }],
    ] as const;
    fake.enqueue(raw(events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join('')));
    const { parts } = await partsOf(model.stream(request()));
    assert.deepEqual(callsOf(parts), [{ id: 'toolu_a', name: 'list_segments', input: {} }]);
    assert.equal(shape(parts).at(-1), 'finish:tool_calls');
  });

  test('openai: empty arguments are {} and a call without an id gets call_<n>', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'openai');
    fake.enqueue(raw(sse([{ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { name: 'list_segments', arguments: '' } }] }, finish_reason: 'tool_calls' }] }])));
    const { parts } = await partsOf(model.stream(request()));
    assert.deepEqual(callsOf(parts), [{ id: 'call_0', name: 'list_segments', input: {} }]);
  });

  test('openai: tool_calls in a reply to a request without tools are not calls; the finish is stop', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'openai');
    fake.enqueue({ text: 'Hello.', toolCalls: [{ id: 'call_a', name: 'list_segments', arguments: '{}' }] });
    const { parts } = await partsOf(model.stream(request({ tools: undefined })));
    assert.deepEqual(shape(parts), ['text:Hello.', 'finish:stop']);
  });

  test('anthropic: the forced tool of a json request is still the reply text, finish stop, with no call', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'anthropic');
    fake.enqueue({ json: { subject: 'Winter boots' } });
    const reply = await model.complete(request({ tools: undefined, json: { name: 'campaign', schema: { type: 'object' } } }));
    assert.deepEqual(JSON.parse(reply.text), { subject: 'Winter boots' });
    assert.equal(reply.finish.reason, 'stop');
    assert.equal(reply.toolCalls, undefined);
    assert.equal(fake.requests[0]!.body.tool_choice.name, 'campaign');
  });
});

describe('transcripts of streamed tool calls', () => {
  for (const split of ['events', 'awkward'] as const) {
    test(`openai/stream-tool-calls.http (${split}): two parallel calls, arguments over 25 chunks, finish tool_calls`, BOUNDED, async (t) => {
      const { fake, model } = await setup(t, 'openai');
      fake.enqueue({ transcript: 'openai/stream-tool-calls.http', split });
      const { parts, error } = await partsOf(model.stream(request()));
      assert.equal(error, undefined);
      assert.deepEqual(callsOf(parts), [
        {
          id: 'call_Xq4mB7vTnE2kR9sLpW1cZd8H',
          name: 'count_audience',
          input: { conditions: [{ field: 'country', operator: 'eq', value: 'DE' }, { field: 'totalAmountSpent', operator: 'gt', value: 500 }] },
        },
        { id: 'call_Jd3sVa6nHq0wYb5tKe7uRg2M', name: 'list_segments', input: {} },
      ]);
      const finish = parts.at(-1);
      assert.ok(finish?.type === 'finish');
      assert.deepEqual(finish.finish, { reason: 'tool_calls', reasoned: false, maxTokens: 1024, servedBy: 'gpt-4o-mini-2024-07-18' });
    });

    test(`anthropic/stream-tool-use.http (${split}): the text, then the call at its content_block_stop, finish tool_calls`, BOUNDED, async (t) => {
      const { fake, model } = await setup(t, 'anthropic');
      fake.enqueue({ transcript: 'anthropic/stream-tool-use.http', split });
      const { parts, error } = await partsOf(model.stream(request()));
      assert.equal(error, undefined);
      const text = parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
      assert.equal(text, "I'll count the German customers who spent over €500.");
      assert.deepEqual(shape(parts).slice(-2), ['call:toolu_01D7FmR2qXc9WvZt4KbN8sHj', 'finish:tool_calls']);
      assert.deepEqual(callsOf(parts)[0]!.input, {
        conditions: [{ field: 'country', operator: 'eq', value: 'DE' }, { field: 'totalAmountSpent', operator: 'gt', value: 500 }],
      });
      const finish = parts.at(-1);
      assert.ok(finish?.type === 'finish');
      assert.equal(finish.finish.servedBy, 'claude-sonnet-4-5-20250929');
    });
  }

  test('openai/whole-tool-calls.http: a whole JSON answer with message.tool_calls (content null) is read the same way', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'openai');
    fake.enqueue({ transcript: 'openai/whole-tool-calls.http' });
    const reply = await model.complete(request());
    assert.equal(reply.text, '');
    assert.equal(reply.finish.reason, 'tool_calls');
    assert.deepEqual(reply.toolCalls, [
      { id: 'call_R6tYp1LqNw8eKd3vXc5mBz0S', name: 'count_audience', input: { conditions: [{ field: 'lastActivityDays', operator: 'gt', value: 120 }] } },
    ]);
  });
});

describe('local generator', () => {
  const local = () => createLocalModel({ sleep: async () => undefined, wordsPerPiece: 2 });

  test('a scripted turn streams its text, then its calls (given ids kept, missing ones local_…), then finish tool_calls', BOUNDED, async () => {
    const { parts } = await partsOf(
      local().stream(
        request({
          local: () => ({
            text: 'Counting them now.',
            toolCalls: [
              { name: 'count_audience', input: CONDITIONS },
              { id: 'mine', name: 'list_segments', input: {} },
            ],
          }),
        }),
      ),
    );
    assert.deepEqual(shape(parts).slice(0, 2), ['text:Counting them ', 'text:now.']);
    const [first, second] = callsOf(parts);
    assert.match(first!.id, /^local_[0-9a-f]{32}$/);
    assert.deepEqual({ ...first, id: 'x' }, { id: 'x', name: 'count_audience', input: CONDITIONS });
    assert.deepEqual(second, { id: 'mine', name: 'list_segments', input: {} });
    assert.deepEqual(shape(parts).at(-1), 'finish:tool_calls');
  });

  test('the generator sees the conversation, so after the results it can answer with text and finish stop', BOUNDED, async () => {
    const script: ModelRequest['local'] = (messages) => {
      const last = messages.at(-1);
      if (last?.role === 'tool') return `There are ${last.results[0]!.content} of them.`;
      return { toolCalls: [{ id: 'local_1', name: 'count_audience', input: CONDITIONS }] };
    };
    const model = local();
    const first = await model.complete(request({ local: script }));
    assert.deepEqual(first, {
      text: '',
      finish: { reason: 'tool_calls', reasoned: false, maxTokens: 0 },
      toolCalls: [{ id: 'local_1', name: 'count_audience', input: CONDITIONS }],
    });
    const messages: ModelRequest['messages'] = [
      { role: 'user', content: QUESTION },
      { role: 'assistant', content: first.text, toolCalls: first.toolCalls! },
      { role: 'tool', results: [{ callId: 'local_1', content: '12' }] },
    ];
    const second = await model.complete(request({ local: script, messages }));
    assert.deepEqual(second, { text: 'There are 12 of them.', finish: { reason: 'stop', reasoned: false, maxTokens: 0 } });
  });

  test('a plain string is still plain text with finish stop', BOUNDED, async () => {
    const { parts } = await partsOf(local().stream(request({ local: () => 'Just text.' })));
    assert.deepEqual(shape(parts), ['text:Just text.', 'finish:stop']);
  });
});

describe('openai: a server or model without tool support', () => {
  for (const [server, message] of [
    ['Ollama', 'registry.ollama.ai/library/gemma:2b does not support tools'],
    ['vLLM', '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'],
  ] as const) {
    test(`${server}'s 400 about tools: the same call is sent again at once without tools, and later calls send none`, BOUNDED, async (t) => {
      const { fake, model } = await setup(t, 'openai');
      fake.enqueue({ status: 400, body: { error: { message, type: 'invalid_request_error' } } });
      fake.enqueue({ text: 'I can only talk here.' });
      fake.enqueue({ text: 'Still talking.' });
      const first = await model.complete(request());
      assert.equal(first.text, 'I can only talk here.');
      const second = await model.complete(request());
      assert.equal(second.text, 'Still talking.');
      assert.equal(fake.requests.length, 3);
      assert.ok(Array.isArray(fake.requests[0]!.body.tools), 'the first attempt offered the tools');
      assert.equal(fake.requests[1]!.body.tools, undefined);
      assert.equal(fake.requests[2]!.body.tools, undefined);
    });
  }

  test('a 400 about something else is not taken for a refusal of tools: the call fails, tools are still sent', BOUNDED, async (t) => {
    const { fake, model } = await setup(t, 'openai');
    fake.enqueue({ status: 400, body: { error: { message: 'messages: the conversation is too long', type: 'invalid_request_error' } } });
    fake.enqueue({ text: 'Hello.' });
    await assert.rejects(model.complete(request()), (e: unknown) => e instanceof AppError && e.code === 'llm_unavailable');
    await model.complete(request());
    assert.ok(Array.isArray(fake.requests[1]!.body.tools));
  });
});

describe('the one list of tools', () => {
  test('each write tool is a kind of proposal whose operation is in the route table, taking a body, and every kind has its tool', BOUNDED, async (t) => {
    const service = await startService();
    t.after(() => service.close());
    const doc = (await service.request('GET', '/v1/openapi.json')).body;
    const operations = new Map<string, { method: string; requestBody?: unknown }>(
      Object.values(doc.paths as Record<string, Record<string, { operationId: string; requestBody?: unknown }>>).flatMap((methods) =>
        Object.entries(methods).map(([method, op]) => [op.operationId, { method, requestBody: op.requestBody }] as const),
      ),
    );
    const writeTools = CHAT_TOOLS.filter((tool) => tool.access === 'write');
    assert.deepEqual(ACTION_KINDS, ['save_segment', 'draft_campaign']);
    assert.deepEqual(writeTools.map((tool) => tool.name), ACTION_KINDS);
    assert.deepEqual(doc.components.schemas.ChatAction.properties.kind.enum, ACTION_KINDS);
    for (const tool of writeTools) {
      const operation = operations.get(tool.operationId);
      assert.equal(operation?.method, 'post', `${tool.name} runs ${tool.operationId}`);
      assert.ok(operation.requestBody, `${tool.operationId} takes the proposal's input as its body`);
    }
    assert.deepEqual(TOOL_SPECS.map((spec) => spec.name), CHAT_TOOLS.map((tool) => tool.name));
    assert.equal(new Set(CHAT_TOOLS.map((tool) => tool.name)).size, CHAT_TOOLS.length);
  });
});
