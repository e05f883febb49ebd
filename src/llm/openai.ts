// The Chat Completions wire format, spoken by OpenAI and by most self-hosted servers (Ollama, vLLM, llama.cpp,
// llama-cpp-python, LM Studio, OpenRouter, LiteLLM), each with its own habits: reasoning in `delta.reasoning` or
// `delta.reasoning_content`, comments before the first chunk, errors in a chunk, in a finish reason or in an
// `error:` line, no `[DONE]` after the finish. Tool calls are read in openai-tools.ts.
import type { LlmJsonMode, TokenParameter } from '../config.ts';
import { AppError } from '../domain/errors.ts';
import type { Logger } from '../http/logger.ts';
import type { FinishReason, LanguageModel, ModelRequest, ProviderSettings } from './model.ts';
import { checkRequest, collectReply } from './model.ts';
import { openAiMessages, openAiTools, StreamedToolCalls, wholeToolCalls } from './openai-tools.ts';
import { at, errorFacts, errorReason, postStream, type ProviderDeps, type WireFormat, type WirePart } from './provider-request.ts';
import { AttemptFailed } from './retry.ts';
import type { SseEvent } from './sse.ts';

/** OpenAI's own API refuses `max_tokens` for its reasoning models; other servers mostly know only `max_tokens`. */
export function defaultTokenParameter(baseUrl: string): TokenParameter {
  return new URL(baseUrl).hostname === 'api.openai.com' ? 'max_completion_tokens' : 'max_tokens';
}

/** Returns a language model that POSTs to `{baseUrl}/chat/completions`; its calls throw as `LanguageModel` says. */
export function createOpenAiModel(settings: ProviderSettings, deps: ProviderDeps): LanguageModel {
  const endpoint = {
    provider: 'openai',
    url: `${settings.baseUrl}/chat/completions`,
    // Self-hosted servers often need no key; an empty Bearer would be refused by some of them.
    headers: { 'content-type': 'application/json', ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}) },
    apiKey: settings.apiKey,
    timeoutMs: settings.timeoutMs,
    maxRetries: settings.maxRetries,
    maxDurationMs: settings.maxDurationMs,
    maxTokens: settings.maxTokens,
  };
  // Switched once, and kept until restart, when the server names it as unsupported.
  let tokenParameter = settings.tokenParameter ?? defaultTokenParameter(settings.baseUrl);
  // Dropped once, and kept until restart, when the server says it cannot take tools (a model or server without
  // tool support: Ollama's "does not support tools", vLLM without --enable-auto-tool-choice): the chat then talks only.
  let toolsRefused = false;
  // Tool calls are read only when the request offered tools.
  const wireFor = (request: ModelRequest): WireFormat => {
    const tools = Boolean(request.tools?.length);
    return {
      readStream: (events) => readStream(events, tools),
      readWhole: (payload) => readWhole(payload, tools),
      adapt(failed) {
        if (tools && !toolsRefused && refusesTools(failed)) {
          toolsRefused = true;
          deps.logger.warn('the model provider refused tools; the assistant answers without tools (no counts or proposals) until restart. Use a model that supports tool calls to get them.');
          return true;
        }
        if (!refusesParameter(failed, tokenParameter)) return false;
        tokenParameter = tokenParameter === 'max_tokens' ? 'max_completion_tokens' : 'max_tokens';
        logSwitch(deps.logger, tokenParameter);
        return true;
      },
    };
  };

  const model: LanguageModel = {
    provider: 'openai',
    model: settings.model,
    async *stream(request) {
      checkRequest(request);
      const body = () => requestBody(settings, tokenParameter, toolsRefused ? { ...request, tools: undefined } : request);
      yield* postStream(endpoint, body, wireFor(request), deps, request.signal);
    },
    complete: (request) => collectReply(model.stream(request)),
  };
  return model;
}

function requestBody(settings: ProviderSettings, tokenParameter: TokenParameter, request: ModelRequest): Record<string, unknown> {
  return {
    model: settings.model,
    messages: [{ role: 'system', content: request.system }, ...openAiMessages(request.messages)],
    [tokenParameter]: settings.maxTokens,
    ...(request.json ? responseFormat(settings.jsonMode, request.json) : {}),
    ...(request.tools?.length ? { tools: openAiTools(request.tools) } : {}),
    stream: true,
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

/** Whether a 400 says the token parameter we sent is not supported (OpenAI's reasoning models on `max_tokens`). */
function refusesParameter(failed: AttemptFailed, name: TokenParameter): boolean {
  const { status, param, code } = failed.failure;
  if (status !== 400) return false;
  const named = param === name || failed.reason.includes(name);
  return named && (code === 'unsupported_parameter' || /unsupported|not supported|unrecognized|unknown|not allowed|not permitted|extra/i.test(failed.reason));
}

/** Whether a 400 (or 422) says the server or model cannot take the `tools` we sent. */
function refusesTools(failed: AttemptFailed): boolean {
  const { status, param } = failed.failure;
  if (status !== 400 && status !== 422) return false;
  return param === 'tools' || param === 'tool_choice' || /\btools?\b|tool[ _-]?choice|tool[ _-]call/i.test(failed.reason);
}

function logSwitch(logger: Logger, now: TokenParameter): void {
  logger.warn(`the model provider refused the token parameter; sending ${now} from now until restart (set LLM_TOKEN_PARAMETER=${now} to start with it)`);
}

// `content_filter` is the provider declining on the model's behalf. Whether a turn that called tools says so is settled
// by the calls themselves (see `reasonWithCalls`): some servers say `stop` after a call.
const FINISH_REASONS: Record<string, FinishReason> = {
  stop: 'stop',
  eos: 'stop',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  length: 'length',
  content_filter: 'refusal',
};

/** Returns the finish a `finish_reason` means; throws AttemptFailed for `error` and reasons that are not a normal end. */
function finishOf(reason: string, refused: boolean, chunk: unknown): FinishReason {
  const finish = FINISH_REASONS[reason];
  if (!finish) {
    const said = at(chunk, 'error') === undefined ? '' : `: ${errorReason(chunk, 'no message')}`;
    throw new AttemptFailed(`finish_reason "${reason}"${said}`, errorFacts(chunk));
  }
  return refused && finish === 'stop' ? 'refusal' : finish;
}

/**
 * Yields text (content and refusal), reasoning, then (with `tools`) the complete tool calls and the finish, until
 * `data: [DONE]` or the end of the body. Only the finish says a call's arguments are complete.
 */
async function* readStream(events: AsyncIterable<SseEvent>, tools: boolean): AsyncGenerator<WirePart> {
  let finished = false;
  let refused = false;
  let servedBy: string | undefined;
  const calls = new StreamedToolCalls();
  for await (const { data, field } of events) {
    if (finished) {
      if (data === '[DONE]' && field === undefined) return;
      continue; // usage and other trailers
    }
    if (field !== undefined) throw new AttemptFailed(`"${field}" line in the stream: ${errorReason(tryJson(data), data)}`, errorFacts(tryJson(data)));
    if (data === '[DONE]') throw new AttemptFailed('[DONE] came without a finish_reason');
    const chunk = parseChunk(data);
    if (at(chunk, 'error') !== undefined && at(chunk, 'choices', 0, 'finish_reason') == null) {
      throw new AttemptFailed(`error in stream: ${errorReason(chunk, 'no message')}`, errorFacts(chunk));
    }
    servedBy ??= text(at(chunk, 'model'));
    const choice = at(chunk, 'choices', 0);
    if (choice === undefined) continue; // the usage chunk has no choices
    const delta = at(choice, 'delta');
    if (text(at(delta, 'reasoning')) || text(at(delta, 'reasoning_content')) || nonEmptyArray(at(delta, 'reasoning_details'))) yield { type: 'reasoning' };
    const content = text(at(delta, 'content'));
    if (content) yield { type: 'text', text: content };
    const refusal = text(at(delta, 'refusal'));
    if (refusal) {
      refused = true;
      yield { type: 'text', text: refusal };
    }
    if (tools) calls.add(at(delta, 'tool_calls'));
    const reason = at(choice, 'finish_reason');
    if (typeof reason === 'string') {
      const finish = finishOf(reason, refused, chunk);
      for (const call of calls.done()) yield { type: 'tool-call', call };
      yield { type: 'finish', reason: finish, ...(servedBy ? { servedBy } : {}) };
      finished = true;
    }
  }
  if (!finished) throw new AttemptFailed('the stream ended without a finish_reason');
}

/** The parts of a whole `chat.completion`, its `tool_calls` with `tools`; throws `llm_error` when it holds no message. */
function readWhole(payload: unknown, tools: boolean): WirePart[] {
  const choice = at(payload, 'choices', 0);
  const message = at(choice, 'message');
  const content = at(message, 'content');
  const refusal = text(at(message, 'refusal'));
  const reason = text(at(choice, 'finish_reason')) ?? 'stop';
  const calls = tools ? wholeToolCalls(message) : [];
  if (typeof content !== 'string' && !refusal && reason !== 'length' && calls.length === 0) {
    throw new AppError('llm_error', 'The model provider replied without message content.');
  }
  const parts: WirePart[] = [];
  if (text(at(message, 'reasoning')) || text(at(message, 'reasoning_content'))) parts.push({ type: 'reasoning' });
  if (typeof content === 'string' && content) parts.push({ type: 'text', text: content });
  if (refusal) parts.push({ type: 'text', text: refusal });
  for (const call of calls) parts.push({ type: 'tool-call', call });
  const servedBy = text(at(payload, 'model'));
  parts.push({ type: 'finish', reason: finishOf(reason, Boolean(refusal), payload), ...(servedBy ? { servedBy } : {}) });
  return parts;
}

function parseChunk(data: string): unknown {
  const chunk = tryJson(data);
  if (chunk === undefined) throw new AppError('llm_error', 'The model provider streamed something that is not JSON.');
  return chunk;
}

function tryJson(data: string): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined;
  }
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value ? value : undefined);
const nonEmptyArray = (value: unknown): boolean => Array.isArray(value) && value.length > 0;
