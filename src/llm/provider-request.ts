// POSTs to a model provider under the retry policy, whole or streamed; the providers add only their wire formats.
import { AppError } from '../domain/errors.ts';
import { AttemptFailed, quoteForLog, withRetries, type RetryDeps, type RetryPolicy } from './retry.ts';
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
}

/** Turns a provider's SSE events into text pieces; returns at the end marker, throws AttemptFailed if the stream breaks. */
export type PieceReader = (events: AsyncIterable<SseEvent>) => AsyncIterable<string>;

/** Returns the parsed JSON body of a 2xx reply; throws like `withRetries`, and `llm_error` when that body is not JSON. */
export function postJson(endpoint: ProviderEndpoint, body: unknown, deps: ProviderDeps, signal: AbortSignal): Promise<unknown> {
  return withRetries(endpoint, deps, signal, async (attempt) => {
    const response = await send(endpoint, body, deps, attempt.signal);
    return parseJson(await response.text());
  });
}

/**
 * Yields the reply's text pieces, without control characters. Retries until the first piece arrives; after it, a
 * broken or stalled stream throws AppError `llm_unavailable`. Otherwise throws like `withRetries`.
 */
export async function* postStream(
  endpoint: ProviderEndpoint,
  body: unknown,
  deps: ProviderDeps,
  signal: AbortSignal,
  readPieces: PieceReader,
): AsyncGenerator<string> {
  const opened = await withRetries(
    endpoint,
    deps,
    signal,
    async (attempt) => {
      const response = await send(endpoint, body, deps, attempt.signal);
      if (!response.body) throw new AttemptFailed('reply has no body');
      const pieces = readPieces(readEvents(response.body))[Symbol.asyncIterator]();
      return { attempt, pieces, first: await pieces.next() };
    },
    { keepAttempt: true },
  );
  const { attempt, pieces } = opened;
  try {
    for (let next = opened.first; !next.done; next = await pieces.next()) {
      const piece = stripControlCharacters(next.value);
      attempt.disarm();
      if (piece) yield piece;
      attempt.arm();
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (error instanceof AppError) throw error;
    const reason = attempt.signal.aborted ? `no piece within ${endpoint.timeoutMs} ms` : error instanceof Error ? error.message : String(error);
    deps.logger.warn('model provider stream broke', { provider: endpoint.provider, reason: quoteForLog(reason, endpoint.apiKey) });
    throw new AppError('llm_unavailable', 'The model provider stopped answering in the middle of its reply.');
  } finally {
    attempt.end();
    // Stops reading, and so releases the connection, when the consumer leaves early.
    await pieces.return?.();
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

async function send(endpoint: ProviderEndpoint, body: unknown, deps: ProviderDeps, signal: AbortSignal): Promise<Response> {
  const fetch = deps.fetch;
  const response = await fetch(endpoint.url, { method: 'POST', headers: endpoint.headers, body: JSON.stringify(body), signal });
  if (response.ok) return response;
  const text = await response.text().catch(() => '');
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    payload = text;
  }
  const reason = errorReason(payload, typeof payload === 'string' && payload ? payload : response.statusText);
  throw new AttemptFailed(reason, response.status, response.headers);
}
