// The Chat Completions wire format, spoken by OpenAI and by most self-hosted servers (vLLM, llama.cpp, Ollama, LiteLLM).
import type { LlmJsonMode } from '../config.ts';
import { AppError } from '../domain/errors.ts';
import type { LanguageModel, ModelRequest } from './model.ts';
import { at, errorReason, postJson, postStream, type ProviderDeps } from './provider-request.ts';
import { AttemptFailed } from './retry.ts';
import type { SseEvent } from './sse.ts';
import { stripControlCharacters } from './untrusted-text.ts';

/** The llm configuration an OpenAI-compatible server needs, the model name required. */
export interface OpenAiSettings {
  /** Ends before `/chat/completions`, for example `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey: string | undefined;
  model: string;
  jsonMode: LlmJsonMode;
  maxTokens: number;
  timeoutMs: number;
  maxRetries: number;
}

/** Returns a language model that POSTs to `{baseUrl}/chat/completions`; its calls throw as `LanguageModel` says. */
export function createOpenAiModel(settings: OpenAiSettings, deps: ProviderDeps): LanguageModel {
  const endpoint = {
    provider: 'openai',
    url: `${settings.baseUrl}/chat/completions`,
    // Self-hosted servers often need no key; an empty Bearer would be refused by some of them.
    headers: { 'content-type': 'application/json', ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}) },
    apiKey: settings.apiKey,
    timeoutMs: settings.timeoutMs,
    maxRetries: settings.maxRetries,
  };

  return {
    provider: 'openai',
    model: settings.model,
    async complete(request) {
      const reply = await postJson(endpoint, requestBody(settings, request, false), deps, request.signal);
      const content = at(reply, 'choices', 0, 'message', 'content');
      if (typeof content !== 'string') throw new AppError('llm_error', 'The model provider replied without message content.');
      return stripControlCharacters(content);
    },
    stream(request) {
      return postStream(endpoint, requestBody(settings, request, true), deps, request.signal, readDeltas);
    },
  };
}

function requestBody(settings: OpenAiSettings, request: ModelRequest, stream: boolean): Record<string, unknown> {
  return {
    model: settings.model,
    messages: [{ role: 'system', content: request.system }, ...request.messages.map(({ role, content }) => ({ role, content }))],
    max_tokens: request.maxTokens ?? settings.maxTokens,
    ...(request.json ? responseFormat(settings.jsonMode, request.json) : {}),
    ...(stream ? { stream: true } : {}),
  };
}

function responseFormat(mode: LlmJsonMode, json: NonNullable<ModelRequest['json']>): Record<string, unknown> {
  switch (mode) {
    case 'json_schema':
      return { response_format: { type: 'json_schema', json_schema: { name: json.name, strict: true, schema: json.schema } } };
    case 'json_object':
      return { response_format: { type: 'json_object' } };
    case 'none':
      // The feature's prompt asks for JSON and the feature repairs what comes back.
      return {};
  }
}

/** Yields `choices[0].delta.content` pieces until `data: [DONE]`; an error object or an early end fails the attempt. */
async function* readDeltas(events: AsyncIterable<SseEvent>): AsyncGenerator<string> {
  for await (const { data } of events) {
    if (data === '[DONE]') return;
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new AppError('llm_error', 'The model provider streamed something that is not JSON.');
    }
    if (at(chunk, 'error') !== undefined) throw new AttemptFailed(`error in stream: ${errorReason(chunk, 'no message')}`);
    const piece = at(chunk, 'choices', 0, 'delta', 'content');
    if (typeof piece === 'string' && piece) yield piece;
  }
  throw new AttemptFailed('stream ended before [DONE]');
}
