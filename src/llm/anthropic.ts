// The Anthropic Messages wire format. JSON replies come through one forced tool, whose input is the object.
import { AppError } from '../domain/errors.ts';
import type { LanguageModel, ModelRequest } from './model.ts';
import { at, errorReason, postJson, postStream, type ProviderDeps } from './provider-request.ts';
import { AttemptFailed } from './retry.ts';
import type { SseEvent } from './sse.ts';
import { stripControlCharacters } from './untrusted-text.ts';

/** The API version every request names; the wire format read here is this version's. */
export const ANTHROPIC_VERSION = '2023-06-01';

/** The llm configuration the Messages API needs, the model name required. */
export interface AnthropicSettings {
  /** Ends before `/messages`, for example `https://api.anthropic.com/v1`. */
  baseUrl: string;
  apiKey: string | undefined;
  model: string;
  maxTokens: number;
  timeoutMs: number;
  maxRetries: number;
}

/** Returns a language model that POSTs to `{baseUrl}/messages`; its calls throw as `LanguageModel` says. */
export function createAnthropicModel(settings: AnthropicSettings, deps: ProviderDeps): LanguageModel {
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
  };

  return {
    provider: 'anthropic',
    model: settings.model,
    async complete(request) {
      const reply = await postJson(endpoint, requestBody(settings, request, false), deps, request.signal);
      const content = at(reply, 'content');
      if (!Array.isArray(content)) throw new AppError('llm_error', 'The model provider replied without content.');
      return request.json ? toolInput(content) : joinedText(content);
    },
    stream(request) {
      return postStream(endpoint, requestBody(settings, request, true), deps, request.signal, readDeltas);
    },
  };
}

function requestBody(settings: AnthropicSettings, request: ModelRequest, stream: boolean): Record<string, unknown> {
  const json = request.json;
  return {
    model: settings.model,
    system: request.system,
    messages: request.messages.map(({ role, content }) => ({ role, content })),
    max_tokens: request.maxTokens ?? settings.maxTokens,
    ...(json
      ? {
          tools: [{ name: json.name, description: 'Record the reply as one object matching the input schema.', input_schema: json.schema }],
          tool_choice: { type: 'tool', name: json.name },
        }
      : {}),
    ...(stream ? { stream: true } : {}),
  };
}

/** The forced tool's input as JSON text; a reply in text instead is returned as text, for the feature to repair. */
function toolInput(content: unknown[]): string {
  const block = content.find((b) => at(b, 'type') === 'tool_use');
  const input = at(block, 'input');
  if (typeof input !== 'object' || input === null) return joinedText(content);
  // The object's strings are model output like any other text.
  return JSON.stringify(input, (_key, value: unknown) => (typeof value === 'string' ? stripControlCharacters(value) : value));
}

function joinedText(content: unknown[]): string {
  const texts = content.filter((b) => at(b, 'type') === 'text').map((b) => at(b, 'text'));
  if (texts.length === 0 || texts.some((t) => typeof t !== 'string')) throw new AppError('llm_error', 'The model provider replied without text.');
  return stripControlCharacters(texts.join(''));
}

/**
 * Yields `text_delta` text (and, for a JSON request, the forced tool's `input_json_delta` JSON) until `message_stop`;
 * an `error` event or an early end fails the attempt.
 */
async function* readDeltas(events: AsyncIterable<SseEvent>): AsyncGenerator<string> {
  for await (const { event, data } of events) {
    let payload: unknown;
    try {
      payload = JSON.parse(data);
    } catch {
      throw new AppError('llm_error', 'The model provider streamed something that is not JSON.');
    }
    const type = event ?? at(payload, 'type');
    if (type === 'message_stop') return;
    if (type === 'error') throw new AttemptFailed(`error event: ${errorReason(payload, 'no message')}`);
    if (type !== 'content_block_delta') continue;
    const delta = at(payload, 'delta');
    const piece = at(delta, 'type') === 'text_delta' ? at(delta, 'text') : at(delta, 'type') === 'input_json_delta' ? at(delta, 'partial_json') : undefined;
    if (typeof piece === 'string' && piece) yield piece;
  }
  throw new AttemptFailed('stream ended before message_stop');
}
