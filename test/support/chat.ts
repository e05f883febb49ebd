// Builders shared by the assistant chat tests: a thread, one streamed turn collected frame by frame, the stored
// messages, confirm and reject, and readers of what a provider request carried (tools, tool results, system text)
// in either wire format.
import assert from 'node:assert/strict';
import type { Reply, TestService } from '../helpers.ts';
import type { FakeToolCall, RecordedRequest } from './fake-provider.ts';
import { openSse } from './sse-client.ts';

export type Format = 'openai' | 'anthropic';
export const FORMATS: readonly Format[] = ['openai', 'anthropic'];

/** The tools every chat request offers, in order. */
export const TOOL_NAMES = ['count_audience', 'list_segments', 'customer_summary', 'list_campaigns', 'save_segment', 'draft_campaign'];

export interface ChatAction {
  id: string;
  kind: 'save_segment' | 'draft_campaign';
  input: any;
  summary: string;
  status: 'proposed' | 'confirmed' | 'rejected';
  resultId?: string;
}

export interface ChatMessage {
  id: string;
  threadId: string;
  role: 'user' | 'assistant';
  content: string;
  model?: string;
  truncated?: true;
  actions?: ChatAction[];
  createdAt: string;
}

/** Creates a thread for the token's user (asserting 200) and returns it. */
export async function openThread(service: TestService, token: string): Promise<{ id: string; title: string }> {
  const reply = await service.request('POST', '/v1/chat/threads', { token, body: {} });
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

/** One streamed turn: every frame until the server ended the stream, and the pieces of it. */
export interface Turn {
  frames: any[];
  /** The `delta` texts joined. */
  text: string;
  /** The `action` frames' proposals, in order. */
  actions: ChatAction[];
  /** The last frame (`done` or `error`). */
  last: any;
}

/** Streams `content` into the thread, asserts the stream opened (200, event stream), and collects every frame. */
export async function streamTurn(service: TestService, token: string, threadId: string, content: string): Promise<Turn> {
  const stream = await openSse(`${service.url}/v1/chat/threads/${threadId}/messages/stream`, { token, body: { content } });
  assert.equal(stream.status, 200, JSON.stringify(stream.body));
  assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
  const frames = await stream.rest();
  return {
    frames,
    text: frames.filter((f) => f.type === 'delta').map((f) => f.text as string).join(''),
    actions: frames.filter((f) => f.type === 'action').map((f) => f.action as ChatAction),
    last: frames.at(-1),
  };
}

/** The thread's stored messages (asserting 200), oldest first. */
export async function listMessages(service: TestService, token: string, threadId: string): Promise<ChatMessage[]> {
  const reply = await service.request('GET', `/v1/chat/threads/${threadId}/messages`, { token });
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

/** The proposal as the thread's message listing shows it now. */
export async function storedAction(service: TestService, token: string, threadId: string, actionId: string): Promise<ChatAction | undefined> {
  return (await listMessages(service, token, threadId)).flatMap((m) => m.actions ?? []).find((a) => a.id === actionId);
}

/** POSTs confirm for a proposal; `token` undefined sends none. */
export function confirmAction(service: TestService, token: string | undefined, threadId: string, actionId: string): Promise<Reply> {
  return service.request('POST', `/v1/chat/threads/${threadId}/actions/${actionId}/confirm`, token === undefined ? {} : { token });
}

/** POSTs reject for a proposal; `token` undefined sends none. */
export function rejectAction(service: TestService, token: string | undefined, threadId: string, actionId: string): Promise<Reply> {
  return service.request('POST', `/v1/chat/threads/${threadId}/actions/${actionId}/reject`, token === undefined ? {} : { token });
}

/** How many segments GET /v1/segments lists. */
export async function segmentCount(service: TestService, token: string): Promise<number> {
  const reply = await service.request('GET', '/v1/segments', { token });
  assert.equal(reply.status, 200, reply.text);
  return (reply.body as unknown[]).length;
}

/** How many proposals the database holds in all. */
export async function storedActionCount(service: TestService): Promise<number | undefined> {
  return service.queryValue<number>('SELECT count(*) AS n FROM chat_actions');
}

/** The live count of customers matching the conditions, as POST /v1/segments/preview answers it. */
export async function previewCount(service: TestService, token: string, conditions: unknown): Promise<number> {
  const reply = await service.request('POST', '/v1/segments/preview', { token, body: { conditions } });
  assert.equal(reply.status, 200, reply.text);
  return reply.body.matchCount;
}

/** A tool call the fake provider makes, its arguments the JSON of `input` (or the text as given, to break it). */
export function call(id: string, name: string, input: unknown): FakeToolCall {
  return { id, name, arguments: typeof input === 'string' ? input : JSON.stringify(input) };
}

/** The tools a provider request offered, read in its own wire format: name and input schema. */
export function toolsOf(format: Format, recorded: RecordedRequest): { name: string; schema: any }[] {
  const tools = recorded.body.tools as any[];
  assert.ok(Array.isArray(tools), 'the request offers no tools');
  return format === 'openai'
    ? tools.map((t) => {
        assert.equal(t.type, 'function');
        return { name: t.function.name, schema: t.function.parameters };
      })
    : tools.map((t) => ({ name: t.name, schema: t.input_schema }));
}

/** The system text of a provider request, in either wire format. */
export function systemOf(format: Format, recorded: RecordedRequest): string {
  if (format === 'anthropic') return recorded.body.system;
  const [first] = recorded.body.messages;
  assert.equal(first.role, 'system');
  return first.content;
}

/** A tool result as sent back to the provider: the call it answers, its text, and the error flag (Anthropic only). */
export interface SentResult {
  callId: string;
  content: string;
  isError?: boolean;
}

/**
 * The tool results a provider request carried, in order, read strictly in the format's shape: OpenAI `role: "tool"`
 * messages with `tool_call_id`; Anthropic `tool_result` blocks with `tool_use_id` in user messages.
 */
export function toolResultsOf(format: Format, recorded: RecordedRequest): SentResult[] {
  const messages = recorded.body.messages as any[];
  if (format === 'openai') {
    return messages
      .filter((m) => m.role === 'tool')
      .map((m) => {
        assert.equal(typeof m.tool_call_id, 'string', JSON.stringify(m));
        assert.equal(typeof m.content, 'string', JSON.stringify(m));
        return { callId: m.tool_call_id, content: m.content };
      });
  }
  return messages
    .filter((m) => m.role === 'user' && Array.isArray(m.content))
    .flatMap((m) => (m.content as any[]).filter((b) => b.type === 'tool_result'))
    .map((b) => {
      assert.equal(typeof b.tool_use_id, 'string', JSON.stringify(b));
      assert.equal(typeof b.content, 'string', JSON.stringify(b));
      return { callId: b.tool_use_id, content: b.content, ...(b.is_error === undefined ? {} : { isError: b.is_error }) };
    });
}

/** The ids of the tool calls the assistant turns of a provider request carry, in order, in either wire format. */
export function toolCallIdsOf(format: Format, recorded: RecordedRequest): string[] {
  const assistant = (recorded.body.messages as any[]).filter((m) => m.role === 'assistant');
  return format === 'openai'
    ? assistant.flatMap((m) => (m.tool_calls ?? []).map((c: any) => c.id))
    : assistant.flatMap((m) => (Array.isArray(m.content) ? m.content : []).filter((b: any) => b.type === 'tool_use').map((b: any) => b.id));
}
