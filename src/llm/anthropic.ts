// The Anthropic Messages wire format. JSON replies come through one forced tool, whose input is the object; the
// feature's own tools are read in anthropic-tools.ts.
import { AppError } from '../domain/errors.ts';
import { anthropicMessages, anthropicTools, StreamedToolUses, wholeToolUses } from './anthropic-tools.ts';
import type { FinishReason, LanguageModel, ModelRequest, ProviderSettings } from './model.ts';
import { checkRequest, collectReply } from './model.ts';
import { at, errorFacts, errorReason, postStream, type ProviderDeps, type WireFormat, type WirePart } from './provider-request.ts';
import { AttemptFailed } from './retry.ts';
import type { SseEvent } from './sse.ts';

/** The API version every request names; the wire format read here is this version's. */
export const ANTHROPIC_VERSION = '2023-06-01';

/** Returns a language model that POSTs to `{baseUrl}/messages`; its calls throw as `LanguageModel` says. */
export function createAnthropicModel(settings: ProviderSettings, deps: ProviderDeps): LanguageModel {
  const endpoint = {
    provider: 'anthropic',
    url: `${settings.baseUrl}/messages`,
    headers: {
      'content-type': 'application/json',
      'anthropic-version': ANTHROPIC_VERSION,
      // A gateway in front of the API may hold the key itself.
      ...(settings.apiKey ? { 'x-api-key': settings.apiKey } : {}),
    },
    apiKey: settings.apiKey,
    timeoutMs: settings.timeoutMs,
    maxRetries: settings.maxRetries,
    maxDurationMs: settings.maxDurationMs,
    maxTokens: settings.maxTokens,
  };
  const model: LanguageModel = {
    provider: 'anthropic',
    model: settings.model,
    async *stream(request) {
      checkRequest(request);
      yield* postStream(endpoint, () => requestBody(settings, request), wireFor(request), deps, request.signal);
    },
    complete: (request) => collectReply(model.stream(request)),
  };
  return model;
}

function requestBody(settings: ProviderSettings, request: ModelRequest): Record<string, unknown> {
  const json = request.json;
  return {
    model: settings.model,
    system: request.system,
    messages: anthropicMessages(request.messages),
    max_tokens: settings.maxTokens,
    ...(json
      ? {
          tools: [{ name: json.name, description: 'Record the reply as one object matching the input schema.', input_schema: json.schema }],
          tool_choice: { type: 'tool', name: json.name },
        }
      : {}),
    ...(request.tools?.length ? { tools: anthropicTools(request.tools) } : {}),
    stream: true,
  };
}

/**
 * What a `tool_use` block is to a request: the reply itself for a JSON request (the forced tool's input is the
 * object), a call for a request with tools, nothing otherwise.
 */
type ToolUse = 'reply' | 'call' | 'ignore';

function wireFor(request: ModelRequest): WireFormat {
  const toolUse: ToolUse = request.json ? 'reply' : request.tools?.length ? 'call' : 'ignore';
  return { readStream: (events) => readStream(events, toolUse), readWhole: (payload) => readWhole(payload, toolUse) };
}

// `tool_use` after the forced tool of a JSON request is a finished reply: with no calls yielded it becomes `stop` (see
// `reasonWithCalls`). `model_context_window_exceeded` is a cut like `max_tokens`.
const STOP_REASONS: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  refusal: 'refusal',
};

function finishOf(stopReason: string): FinishReason {
  const finish = STOP_REASONS[stopReason];
  if (!finish) throw new AttemptFailed(`stop_reason "${stopReason}"`);
  return finish;
}

/**
 * Yields `text_delta` text (and the forced tool's `input_json_delta` JSON), reasoning for thinking blocks, each tool
 * call at its `content_block_stop`, and the finish at `message_delta`; returns at `message_stop`. An `error` event or
 * an end without a stop reason fails.
 */
async function* readStream(events: AsyncIterable<SseEvent>, toolUse: ToolUse): AsyncGenerator<WirePart> {
  let finished = false;
  let servedBy: string | undefined;
  const calls = new StreamedToolUses();
  for await (const { event, data, field } of events) {
    if (field !== undefined) throw new AttemptFailed(`"${field}" line in the stream: ${data}`);
    let payload: unknown;
    try {
      payload = JSON.parse(data);
    } catch {
      throw new AppError('llm_error', 'The model provider streamed something that is not JSON.');
    }
    const type = event ?? at(payload, 'type');
    if (type === 'error') throw new AttemptFailed(`error event: ${errorReason(payload, 'no message')}`, errorFacts(payload));
    if (finished) {
      if (type === 'message_stop') return;
      continue;
    }
    if (type === 'message_start') servedBy = text(at(payload, 'message', 'model'));
    else if (type === 'content_block_start' && isThinking(at(payload, 'content_block', 'type'))) yield { type: 'reasoning' };
    else if (type === 'content_block_start' && toolUse === 'call') calls.start(payload);
    else if (type === 'content_block_delta' && toolUse === 'call' && calls.add(payload)) continue;
    else if (type === 'content_block_stop' && toolUse === 'call') {
      const call = calls.stop(payload);
      if (call) yield { type: 'tool-call', call };
    } else if (type === 'content_block_delta') {
      const delta = at(payload, 'delta');
      const kind = at(delta, 'type');
      const json = kind === 'input_json_delta' && toolUse !== 'call';
      const piece = kind === 'text_delta' ? text(at(delta, 'text')) : json ? text(at(delta, 'partial_json')) : undefined;
      if (piece) yield { type: 'text', text: piece };
      else if (kind === 'thinking_delta' || kind === 'signature_delta') yield { type: 'reasoning' };
    } else if (type === 'message_delta') {
      const stopReason = text(at(payload, 'delta', 'stop_reason'));
      if (stopReason) {
        const reason = finishOf(stopReason);
        for (const call of calls.rest()) yield { type: 'tool-call', call };
        yield { type: 'finish', reason, ...(servedBy ? { servedBy } : {}) };
        finished = true;
      }
    } else if (type === 'message_stop') throw new AttemptFailed('message_stop came without a stop_reason');
    // `ping`, `content_block_stop` and event types added later carry nothing to read.
  }
  if (!finished) throw new AttemptFailed('the stream ended before a stop_reason');
}

/** The parts of a whole message: text blocks, the forced tool's input as JSON text or the calls, thinking as reasoning. */
function readWhole(payload: unknown, toolUse: ToolUse): WirePart[] {
  const content = at(payload, 'content');
  if (!Array.isArray(content)) throw new AppError('llm_error', 'The model provider replied without content.');
  const parts: WirePart[] = [];
  for (const block of content) {
    const type = at(block, 'type');
    if (isThinking(type)) parts.push({ type: 'reasoning' });
    else if (type === 'text' && text(at(block, 'text'))) parts.push({ type: 'text', text: at(block, 'text') as string });
    else if (type === 'tool_use' && toolUse !== 'call' && typeof at(block, 'input') === 'object') parts.push({ type: 'text', text: JSON.stringify(at(block, 'input')) });
  }
  if (toolUse === 'call') for (const call of wholeToolUses(content)) parts.push({ type: 'tool-call', call });
  const servedBy = text(at(payload, 'model'));
  parts.push({ type: 'finish', reason: finishOf(text(at(payload, 'stop_reason')) ?? 'end_turn'), ...(servedBy ? { servedBy } : {}) });
  return parts;
}

const isThinking = (type: unknown) => type === 'thinking' || type === 'redacted_thinking';
const text = (value: unknown): string | undefined => (typeof value === 'string' && value ? value : undefined);
