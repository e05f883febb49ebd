// POSTs to a model provider as a stream under the retry policy; the providers add only their wire formats.
import { AppError } from '../domain/errors.ts';
import { reasonWithCalls, type FinishReason, type ReplyPart, type ToolCall } from './model.ts';
import { AttemptFailed, outOfTime, quoteProvider, startCall, withRetries, type Attempt, type RetryDeps, type RetryPolicy } from './retry.ts';
import { readEvents, type SseEvent } from './sse.ts';
import { stripControlCharacters } from './untrusted-text.ts';

/** The retry deps plus the HTTP client, injected so tests can point it anywhere. */
export interface ProviderDeps extends RetryDeps {
  fetch: typeof globalThis.fetch;
}

/** Where one provider is reached, with the headers every request carries (the key among them). */
export interface ProviderEndpoint extends RetryPolicy {
  url: string;
  headers: Record<string, string>;
  /** LLM_MAX_TOKENS, the budget every request carries. */
  maxTokens: number;
}

/** What a wire format reads from a provider: reply text, a sign of reasoning (never passed on), complete tool calls, and the finish. */
export type WirePart =
  | { type: 'text'; text: string }
  | { type: 'reasoning' }
  | { type: 'tool-call'; call: ToolCall }
  | { type: 'finish'; reason: FinishReason; servedBy?: string };

/** One provider's wire format, as the request loop needs it. */
export interface WireFormat {
  /**
   * Turns the provider's SSE events into parts. Yields `finish` when the provider says the reply ended normally,
   * cut or refused, and returns at its end marker or the end of the body; throws AttemptFailed when the stream
   * breaks off, ends without a finish or carries an error, and AppError `llm_error` for what is not its format.
   */
  readStream(events: AsyncIterable<SseEvent>): AsyncIterable<WirePart>;
  /** The parts of a whole JSON reply, from a server that answered a stream request without streaming. */
  readWhole(payload: unknown): WirePart[];
  /** See RetryOptions.adapt: a refused request the format can fix by changing what it sends. */
  adapt?: (failure: AttemptFailed) => boolean;
}

/**
 * Yields the reply's text pieces, without control characters, and its tool calls, then its finish, whose reason is
 * `tool_calls` exactly when calls came (and it was neither cut nor refused). The request body is built anew for every
 * attempt. Retries until the first text, tool call or finish arrives; after it, a broken or silent stream throws
 * AppError `llm_unavailable` quoting the provider. Otherwise throws like `withRetries`.
 */
export async function* postStream(
  endpoint: ProviderEndpoint,
  body: () => unknown,
  wire: WireFormat,
  deps: ProviderDeps,
  signal: AbortSignal,
): AsyncGenerator<ReplyPart> {
  const call = startCall(endpoint, deps, signal);
  let opened: { attempt: Attempt; parts: AsyncIterator<WirePart>; first: WirePart; reasoned: boolean } | undefined;
  try {
    opened = await withRetries(
      endpoint,
      deps,
      call,
      async (attempt) => {
        const response = await send(endpoint, body(), deps, attempt.signal);
        const parts = readReply(response, wire, attempt)[Symbol.asyncIterator]();
        // Nothing reaches the caller before the first text, tool call or finish, so a failure until then can be retried.
        let reasoned = false;
        for (;;) {
          const next = await parts.next();
          if (next.done) throw new AttemptFailed('the reply ended without a finish');
          if (next.value.type !== 'reasoning') return { attempt, parts, first: next.value, reasoned };
          reasoned = true;
        }
      },
      { keepAttempt: true, adapt: wire.adapt },
    );
  } catch (error) {
    call.end();
    throw error;
  }

  const { attempt, parts } = opened;
  let reasoned = opened.reasoned;
  let calls = 0;
  let part: WirePart | undefined = opened.first;
  try {
    while (part) {
      if (part.type === 'reasoning') reasoned = true;
      else if (part.type === 'text') {
        const text = stripControlCharacters(part.text);
        if (text) yield { type: 'text', text };
      } else if (part.type === 'tool-call') {
        calls++;
        yield part;
      } else {
        await drain(parts);
        const reason = reasonWithCalls(part.reason, calls);
        yield { type: 'finish', finish: { reason, reasoned, maxTokens: endpoint.maxTokens, ...(part.servedBy ? { servedBy: part.servedBy } : {}) } };
        return;
      }
      const next: IteratorResult<WirePart> = await parts.next();
      part = next.done ? undefined : next.value;
    }
    throw new AttemptFailed('the reply ended without a finish');
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (call.expired()) throw outOfTime(endpoint);
    if (error instanceof AppError) throw error;
    const reason = attempt.signal.aborted
      ? `no answer for LLM_TIMEOUT_MS (${endpoint.timeoutMs} ms)`
      : quoteProvider(error instanceof Error ? error.message : String(error), endpoint.apiKey);
    deps.logger.warn('model provider stream broke', { provider: endpoint.provider, reason });
    throw new AppError('llm_unavailable', `The model provider stopped in the middle of its reply (${reason}).`);
  } finally {
    attempt.end();
    call.end();
    // Stops reading, and so releases the connection, when the consumer leaves early.
    await parts.return?.();
  }
}

/** Reads what follows a finish (usage chunks, the end marker); once the reply has finished, nothing there undoes it. */
async function drain(parts: AsyncIterator<WirePart>): Promise<void> {
  try {
    while (!(await parts.next()).done);
  } catch {
    // A server that errs or falls silent after finishing has still finished.
  }
}

/** The parts of a 2xx answer: an event stream, or a whole JSON reply from a server that does not stream. */
async function* readReply(response: Response, wire: WireFormat, attempt: Attempt): AsyncGenerator<WirePart> {
  if (!response.body) throw new AttemptFailed('the reply has no body');
  const type = (response.headers.get('content-type') ?? '').toLowerCase();
  const chunks = timedChunks(response.body, attempt);
  if (type.includes('text/event-stream')) {
    yield* wire.readStream(readEvents(chunks));
    return;
  }
  if (type.includes('json')) {
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of chunks) text += decoder.decode(chunk, { stream: true });
    yield* wire.readWhole(parseJson(text + decoder.decode()));
    return;
  }
  await response.body.cancel().catch(() => undefined);
  throw new AppError('llm_error', `The model provider answered with something that is not a reply (content-type "${type || 'none'}").`);
}

/** The body's chunks, with the attempt's silence timer armed only while waiting for the next one. */
async function* timedChunks(body: ReadableStream<Uint8Array>, attempt: Attempt): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      attempt.arm();
      const { done, value } = await reader.read();
      attempt.disarm();
      if (done) break;
      yield value;
    }
    finished = true;
  } finally {
    attempt.disarm();
    // A consumer that stops early (or a failed read) must not leave the connection open.
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/** Returns the value at `path` inside parsed JSON, or undefined where the path does not exist. */
export function at(value: unknown, ...path: (string | number)[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

/** Returns the parsed JSON; throws AppError `llm_error`, since a provider that sends something else did not reply. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('llm_error', 'The model provider answered with something that is not JSON.');
  }
}

/** Returns a provider's error message: `error.message` in both wire formats, else `fallback`. */
export function errorReason(payload: unknown, fallback: string): string {
  const message = at(payload, 'error', 'message') ?? at(payload, 'message') ?? at(payload, 'error');
  return typeof message === 'string' && message.trim() ? message : fallback;
}

/** Returns the failure a provider's error payload describes: its code or type, and the parameter it names. */
export function errorFacts(payload: unknown): { code?: string; param?: string } {
  const text = (value: unknown) => (typeof value === 'string' && value ? value : typeof value === 'number' ? String(value) : undefined);
  const code = text(at(payload, 'error', 'code')) ?? text(at(payload, 'error', 'type')) ?? text(at(payload, 'code'));
  const param = text(at(payload, 'error', 'param'));
  return { ...(code ? { code } : {}), ...(param ? { param } : {}) };
}

async function send(endpoint: ProviderEndpoint, body: unknown, deps: ProviderDeps, signal: AbortSignal): Promise<Response> {
  const response = await deps.fetch(endpoint.url, { method: 'POST', headers: endpoint.headers, body: JSON.stringify(body), signal });
  if (response.ok) return response;
  const text = await response.text().catch(() => '');
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    payload = text;
  }
  const reason = errorReason(payload, typeof payload === 'string' && payload ? payload : response.statusText);
  throw new AttemptFailed(reason, { status: response.status, headers: response.headers, ...errorFacts(payload) });
}
