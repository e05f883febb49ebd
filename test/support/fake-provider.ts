// A fake model provider: a real HTTP server on loopback speaking both wire formats (OpenAI Chat Completions at
// /v1/chat/completions, Anthropic Messages at /v1/messages), playing scripted replies and recording every request.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the fake answers to one request. `delayMs` waits before answering. */
export type FakeReply = { delayMs?: number } & (
  | { text: string } // the reply text exactly as given, also as a single piece to a streamed request
  | { json: unknown } // Anthropic: the forced tool's input; OpenAI: the object's JSON text as content
  | { status: number; body?: unknown; headers?: Record<string, string> } // `body`: JSON, or a string sent as is; defaults to the format's error object
  | { reset: true } // destroys the socket without answering
  | { hang: true } // never answers; the request is recorded as aborted when the client gives up
  | { pieces: string[]; intervalMs?: number; failAfter?: number; failWith?: 'cut' | 'error' | 'end' }
  | Replay
  | ToolCallsReply
);

/** One tool call the fake makes; `arguments` is the JSON text as the model writes it, so it may be broken on purpose. */
export interface FakeToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * A turn that calls tools, in the format's own streaming: `text` first (as one piece), then every call, its arguments
 * cut into `splitArguments` pieces (default 3). OpenAI: `delta.tool_calls` pieces by index, the first with id, type and
 * name, then `finish_reason` `finishReason` (default "tool_calls") and `[DONE]`. Anthropic: a `tool_use` block per call
 * with `input_json_delta` pieces, then `stop_reason` `finishReason` (default "tool_use"). `failAfterCalls`: the stream
 * breaks (`failWith`, default `cut`) once that many calls were sent whole. Unstreamed, the same as a whole message.
 */
export interface ToolCallsReply {
  toolCalls: FakeToolCall[];
  text?: string;
  splitArguments?: number;
  finishReason?: string;
  intervalMs?: number;
  failAfterCalls?: number;
  failWith?: 'cut' | 'error' | 'end';
}

/**
 * A transcript of `test/fixtures/providers/` (`openai/stream-plain.http`) replayed byte for byte: its status, headers
 * and body. `split`: one write per SSE event as servers send them (`events`, the default), or also inside every
 * CRLF and every multi-byte UTF-8 character (`awkward`). `intervalMs` passes between writes.
 */
export interface Replay {
  transcript: string;
  split?: 'events' | 'awkward';
  intervalMs?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body, or the raw text when it is not JSON. */
  body: any;
  /** `Date.now()` when the request arrived. */
  startedAt: number;
  /** Whether the client closed the connection before the reply was finished. */
  aborted: boolean;
}

export interface FakeProvider {
  /** Base URL ending in `/v1`, for LLM_BASE_URL. */
  url: string;
  requests: RecordedRequest[];
  /** Queues replies, played in order; once the queue is empty every request gets `defaultReply`. */
  enqueue(...replies: FakeReply[]): void;
  defaultReply: FakeReply;
  /** Once the queue is empty, chooses the reply from the request itself (before `defaultReply`, used when it answers undefined). */
  respond?: (request: RecordedRequest) => FakeReply | undefined;
  /** Resolves once `count` requests have arrived. */
  waitForRequests(count: number): Promise<RecordedRequest[]>;
  /** Resolves with the requests the client aborted, once there are `count` of them. */
  waitForAborts(count?: number): Promise<RecordedRequest[]>;
  close(): Promise<void>;
}

type Format = 'openai' | 'anthropic';

/** Starts the fake provider on a free port of 127.0.0.1. */
export async function startFakeProvider(): Promise<FakeProvider> {
  const queue: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  const waiters = new Set<() => boolean>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const changed = () => waiters.forEach((check) => check() && waiters.delete(check));
  const waitUntil = <T>(found: () => T | undefined) =>
    new Promise<T>((resolve) => {
      const check = () => {
        const value = found();
        if (value !== undefined) resolve(value);
        return value !== undefined;
      };
      if (!check()) waiters.add(check);
    });
  const wait = (ms: number) => new Promise<void>((resolve) => timers.add(setTimeout(resolve, ms)));

  const fake: FakeProvider = {
    url: '',
    requests,
    defaultReply: { text: 'fake reply' },
    enqueue: (...replies) => void queue.push(...replies),
    waitForRequests: (count) => waitUntil(() => (requests.length >= count ? requests.slice() : undefined)),
    waitForAborts: (count = 1) => waitUntil(() => {
      const aborted = requests.filter((r) => r.aborted);
      return aborted.length >= count ? aborted : undefined;
    }),
    async close() {
      timers.forEach(clearTimeout);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    const record: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: parse(text), startedAt: Date.now(), aborted: false };
    let closedByUs = false;
    res.on('close', () => {
      if (!res.writableFinished && !closedByUs) record.aborted = true;
      changed();
    });
    requests.push(record);
    changed();

    const format: Format | undefined = record.path === '/v1/chat/completions' ? 'openai' : record.path === '/v1/messages' ? 'anthropic' : undefined;
    if (!format) return sendJson(res, 404, { error: { message: `no route ${record.path}` } });
    const reply = queue.shift() ?? fake.respond?.(record) ?? fake.defaultReply;
    if (reply.delayMs) await wait(reply.delayMs);
    if (res.destroyed) return;
    if ('hang' in reply) return;
    if ('reset' in reply) {
      closedByUs = true;
      return req.socket.destroy();
    }
    if ('status' in reply) return sendJson(res, reply.status, reply.body ?? errorBody(format, reply.status), reply.headers);
    if ('transcript' in reply) return replay(res, reply, wait);
    if ('toolCalls' in reply) {
      if (!record.body?.stream) return sendJson(res, 200, format === 'openai' ? openAiToolCompletion(reply) : anthropicToolMessage(reply));
      closedByUs = reply.failAfterCalls !== undefined && (reply.failWith ?? 'cut') === 'cut';
      return playToolCalls(res, format, reply, wait);
    }
    const content = 'text' in reply ? reply.text : 'json' in reply ? JSON.stringify(reply.json) : reply.pieces.join('');
    if (!record.body?.stream) {
      const toolName = 'json' in reply ? record.body?.tool_choice?.name : undefined;
      return sendJson(res, 200, format === 'openai' ? openAiCompletion(content) : anthropicMessage(content, toolName, 'json' in reply ? reply.json : undefined));
    }

    const script = 'pieces' in reply ? reply : { pieces: [content], intervalMs: 0, failAfter: undefined, failWith: undefined };
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // A JSON request to Anthropic is answered through the forced tool, its input streamed as JSON pieces.
    const events = format === 'openai' ? openAiEvents : record.body?.tool_choice?.name ? anthropicToolEvents(record.body.tool_choice.name) : anthropicEvents;
    res.write(events.start);
    for (const [index, piece] of script.pieces.entries()) {
      if (index === script.failAfter) break;
      if (index > 0 && script.intervalMs) await wait(script.intervalMs);
      if (res.destroyed) return;
      // Flushed before going on, so a cut that follows cannot swallow the pieces sent before it.
      await new Promise((resolve) => res.write(events.piece(piece), resolve));
    }
    if (script.failAfter === undefined || script.failAfter >= script.pieces.length) return res.end(events.end);
    if (script.failWith === 'error') return res.end(events.error);
    if (script.failWith === 'end') return res.end();
    closedByUs = true;
    res.destroy();
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}

const TRANSCRIPTS = new URL('../fixtures/providers/', import.meta.url);

/** The settings of a service whose model provider is `fake`, as an OpenAI-compatible server, without retries. */
export function openAiEnvFor(fake: FakeProvider): Record<string, string> {
  return { LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'test-model', LLM_API_KEY: 'test-key', LLM_MAX_RETRIES: '0' };
}

/** A transcript file: the status line and headers (LF-ended lines up to the first empty one), then the body's bytes. */
export function readTranscript(name: string): { status: number; headers: Record<string, string>; body: Buffer } {
  const file = readFileSync(new URL(name, TRANSCRIPTS));
  const end = file.indexOf('\n\n');
  const [statusLine = '', ...headerLines] = file.subarray(0, end).toString('utf8').split('\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]);
  if (!status) throw new Error(`${name}: no status line`);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status, headers, body: file.subarray(end + 2) };
}

/** Where the replay cuts the body into writes: after every SSE event, and for `awkward` inside CRLFs and characters. */
export function replayCuts(body: Buffer, split: 'events' | 'awkward'): number[] {
  const cuts = new Set<number>();
  for (let i = 0; i < body.length; i++) {
    const eventEnd = (body[i] === 0x0a && body[i - 1] === 0x0a) || (body[i] === 0x0a && body[i - 1] === 0x0d && body[i - 2] === 0x0a);
    if (eventEnd) cuts.add(i + 1);
    if (split !== 'awkward') continue;
    if (body[i] === 0x0d && body[i + 1] === 0x0a) cuts.add(i + 1); // between CR and LF
    if (body[i]! >= 0xc0) cuts.add(i + 1); // after the first byte of a multi-byte character
  }
  return [...cuts].filter((cut) => cut > 0 && cut < body.length).sort((a, b) => a - b);
}

async function replay(res: ServerResponse, { transcript, split = 'events', intervalMs = 0 }: Replay, wait: (ms: number) => Promise<void>): Promise<void> {
  const { status, headers, body } = readTranscript(transcript);
  res.writeHead(status, headers);
  let from = 0;
  for (const cut of [...replayCuts(body, split), body.length]) {
    if (from > 0 && intervalMs) await wait(intervalMs);
    if (res.destroyed) return;
    // Each write is flushed before the next, so the client meets the cuts as separate reads.
    await new Promise((resolve) => res.write(body.subarray(from, cut), resolve));
    from = cut;
  }
  res.end();
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/html' : 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

function errorBody(format: Format, status: number): unknown {
  const message = `fake failure with status ${status}`;
  return format === 'openai' ? { error: { message, type: 'server_error' } } : { type: 'error', error: { type: 'api_error', message } };
}

function openAiCompletion(content: string): unknown {
  return { id: 'chatcmpl-fake', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] };
}

function anthropicMessage(text: string, toolName: string | undefined, input: unknown): unknown {
  const content = toolName ? [{ type: 'tool_use', id: 'toolu_fake', name: toolName, input }] : [{ type: 'text', text }];
  return { id: 'msg_fake', type: 'message', role: 'assistant', content, stop_reason: toolName ? 'tool_use' : 'end_turn' };
}

const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

const openAiEvents = {
  start: sse({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] }),
  piece: (content: string) => sse({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] }),
  end: sse({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) + sse('[DONE]'),
  error: sse({ error: { message: 'fake stream failure', type: 'server_error' } }),
};

const anthropicToolEvents = (name: string) => ({
  start:
    sse({ type: 'message_start', message: { id: 'msg_fake', type: 'message', role: 'assistant', content: [] } }, 'message_start') +
    sse({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_fake', name, input: {} } }, 'content_block_start'),
  piece: (json: string) => sse({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: json } }, 'content_block_delta'),
  end:
    sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop') +
    sse({ type: 'message_delta', delta: { stop_reason: 'tool_use' } }, 'message_delta') +
    sse({ type: 'message_stop' }, 'message_stop'),
  error: anthropicEvents.error,
});

const anthropicEvents = {
  start:
    sse({ type: 'message_start', message: { id: 'msg_fake', type: 'message', role: 'assistant', content: [] } }, 'message_start') +
    sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start') +
    sse({ type: 'ping' }, 'ping'),
  piece: (text: string) => sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }, 'content_block_delta'),
  end:
    sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop') +
    sse({ type: 'message_delta', delta: { stop_reason: 'end_turn' } }, 'message_delta') +
    sse({ type: 'message_stop' }, 'message_stop'),
  error: sse({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 'error'),
};

/** Returns `text` cut into `count` pieces of nearly equal length, never inside a character; they join back to `text`. */
export function splitText(text: string, count: number): string[] {
  const characters = Array.from(text);
  const size = Math.max(1, Math.ceil(characters.length / Math.max(1, count)));
  const pieces: string[] = [];
  for (let i = 0; i < characters.length; i += size) pieces.push(characters.slice(i, i + size).join(''));
  return pieces.length ? pieces : [''];
}

/** The SSE events of a tool-calling turn, grouped per write: the opening, each call, the ending. */
function toolCallEvents(format: Format, reply: ToolCallsReply): { start: string; calls: string[]; end: string; error: string } {
  const split = (call: FakeToolCall) => splitText(call.arguments, reply.splitArguments ?? 3);
  if (format === 'openai') {
    const chunk = (delta: unknown, finish_reason: string | null = null) =>
      sse({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', model: 'fake-model', choices: [{ index: 0, delta, finish_reason }] });
    return {
      start: chunk({ role: 'assistant', content: reply.text ? '' : null }) + (reply.text ? chunk({ content: reply.text }) : ''),
      calls: reply.toolCalls.map(
        (call, index) =>
          chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }) +
          split(call).map((piece) => chunk({ tool_calls: [{ index, function: { arguments: piece } }] })).join(''),
      ),
      end: chunk({}, reply.finishReason ?? 'tool_calls') + sse('[DONE]'),
      error: openAiEvents.error,
    };
  }
  const first = reply.text ? 1 : 0;
  const text = reply.text
    ? sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start') +
      sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: reply.text } }, 'content_block_delta') +
      sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop')
    : '';
  return {
    start: sse({ type: 'message_start', message: { id: 'msg_fake', type: 'message', role: 'assistant', model: 'fake-model', content: [] } }, 'message_start') + text,
    calls: reply.toolCalls.map((call, n) => {
      const index = first + n;
      const pieces = ['', ...split(call)].map((partial_json) =>
        sse({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } }, 'content_block_delta'),
      );
      return (
        sse({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } }, 'content_block_start') +
        pieces.join('') +
        sse({ type: 'content_block_stop', index }, 'content_block_stop')
      );
    }),
    end: sse({ type: 'message_delta', delta: { stop_reason: reply.finishReason ?? 'tool_use' } }, 'message_delta') + sse({ type: 'message_stop' }, 'message_stop'),
    error: anthropicEvents.error,
  };
}

async function playToolCalls(res: ServerResponse, format: Format, reply: ToolCallsReply, wait: (ms: number) => Promise<void>): Promise<void> {
  const events = toolCallEvents(format, reply);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const write = (text: string) => new Promise((resolve) => res.write(text, resolve));
  await write(events.start);
  for (const [index, call] of events.calls.entries()) {
    if (index === reply.failAfterCalls) break;
    if (reply.intervalMs) await wait(reply.intervalMs);
    if (res.destroyed) return;
    await write(call);
  }
  if (reply.failAfterCalls === undefined || reply.failAfterCalls >= events.calls.length) return void res.end(events.end);
  if (reply.failWith === 'error') return void res.end(events.error);
  if (reply.failWith === 'end') return void res.end();
  res.destroy();
}

function openAiToolCompletion(reply: ToolCallsReply): unknown {
  const toolCalls = reply.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  const message = { role: 'assistant', content: reply.text ?? null, tool_calls: toolCalls };
  return { id: 'chatcmpl-fake', object: 'chat.completion', model: 'fake-model', choices: [{ index: 0, message, finish_reason: reply.finishReason ?? 'tool_calls' }] };
}

function anthropicToolMessage(reply: ToolCallsReply): unknown {
  const input = (call: FakeToolCall) => {
    try {
      return JSON.parse(call.arguments) as unknown;
    } catch {
      return {};
    }
  };
  const calls = reply.toolCalls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: input(call) }));
  const content = [...(reply.text ? [{ type: 'text', text: reply.text }] : []), ...calls];
  return { id: 'msg_fake', type: 'message', role: 'assistant', model: 'fake-model', content, stop_reason: reply.finishReason ?? 'tool_use' };
}
