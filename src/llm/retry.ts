// Retries of model provider calls, in one place: which failures are worth another attempt, how long to wait, when to stop.
import { AppError } from '../domain/errors.ts';
import type { Logger } from '../http/logger.ts';
import { pause, type Sleep } from './sleep.ts';

/** What retries need from outside, injected so tests control waits, jitter and time. */
export interface RetryDeps {
  sleep: Sleep;
  /** A number in [0, 1), for backoff jitter. */
  random: () => number;
  now: () => Date;
  logger: Logger;
}

/** How hard to try one provider: attempts of `timeoutMs` each, 1 + maxRetries of them. */
export interface RetryPolicy {
  provider: string;
  /** Bound on each attempt (per piece once a stream has started). */
  timeoutMs: number;
  maxRetries: number;
  /** Kept out of the log, should a provider echo it in an error message. */
  apiKey?: string | undefined;
}

/** One try of a call. Its signal aborts when the caller's does or when the attempt's timer runs out. */
export interface Attempt {
  readonly signal: AbortSignal;
  /** Starts the timer again; a stream calls it while waiting for each piece. */
  arm(): void;
  /** Stops the timer, so a slow consumer of a stream is not mistaken for a stalled provider. */
  disarm(): void;
  /** Stops the timer and lets go of the caller's signal. */
  end(): void;
}

/** A failed attempt: an HTTP status with the provider's reason, or a stream that broke or carried an error event. */
export class AttemptFailed extends Error {
  constructor(readonly reason: string, readonly status?: number, readonly headers?: Headers) {
    super(reason);
    this.name = 'AttemptFailed';
  }
}

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 8_000;

/** Returns whether a provider's HTTP status may succeed on another attempt: timeout, conflict, rate limit, server error. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * Returns what `run` returns, giving it up to 1 + maxRetries attempts. Connection failures, attempt timeouts and
 * retryable statuses are retried after a backoff, or after the provider's `retry-after-ms` / `Retry-After`.
 * The budget is attempts × timeoutMs from the first attempt: a demanded wait that would outlast it gives up at once.
 * Throws AppError `llm_unavailable` when giving up or on a status not worth retrying; rethrows AppErrors from `run`;
 * rethrows the signal's reason as soon as the caller aborts, also during a wait. With `keepAttempt`, the successful
 * attempt is left running and belongs to the caller, who must end it.
 */
export async function withRetries<T>(
  policy: RetryPolicy,
  deps: RetryDeps,
  signal: AbortSignal,
  run: (attempt: Attempt) => Promise<T>,
  options: { keepAttempt?: boolean } = {},
): Promise<T> {
  const attempts = 1 + policy.maxRetries;
  const deadline = deps.now().getTime() + attempts * policy.timeoutMs;
  for (let number = 1; ; number++) {
    signal.throwIfAborted();
    const attempt = startAttempt(signal, policy.timeoutMs);
    let failure: Failure;
    try {
      const result = await run(attempt);
      if (!options.keepAttempt) attempt.end();
      return result;
    } catch (error) {
      attempt.end();
      if (signal.aborted) throw signal.reason;
      if (error instanceof AppError) throw error;
      failure = describeFailure(error, attempt.signal.aborted, policy.timeoutMs);
    }

    const wait = failure.retryable && number < attempts ? plannedWait(failure, number, deadline, deps) : undefined;
    deps.logger.warn('model provider attempt failed', {
      provider: policy.provider,
      attempt: number,
      attempts,
      status: failure.status,
      reason: quoteForLog(failure.reason, policy.apiKey),
      retryInMs: typeof wait === 'number' ? wait : undefined,
      giveUp: typeof wait === 'string' ? wait : undefined,
    });
    if (typeof wait !== 'number') {
      const detail = failure.retryable
        ? `The model provider is unavailable (${failure.summary} on attempt ${number} of ${attempts}).`
        : `The model provider refused the request (${failure.summary}).`;
      throw new AppError('llm_unavailable', detail);
    }
    await pause(deps.sleep, wait, signal);
  }
}

interface Failure {
  status?: number;
  /** For the log: may carry the provider's own words. */
  reason: string;
  /** For the client: a status or a kind of failure, never the provider's words. */
  summary: string;
  retryable: boolean;
  headers?: Headers;
}

function describeFailure(error: unknown, timedOut: boolean, timeoutMs: number): Failure {
  if (timedOut) return { reason: `no reply within ${timeoutMs} ms`, summary: 'timed out', retryable: true };
  if (error instanceof AttemptFailed) {
    if (error.status === undefined) return { reason: error.reason, summary: 'stream failed', retryable: true };
    return { status: error.status, reason: error.reason, summary: `HTTP ${error.status}`, retryable: isRetryableStatus(error.status), headers: error.headers };
  }
  // fetch rejects with a TypeError whose cause carries the socket's code (ECONNRESET, ECONNREFUSED, ...).
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = (cause as { code?: unknown } | null)?.code;
  const reason = typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
  return { reason: `connection failed: ${reason}`, summary: 'connection failed', retryable: true };
}

/** Milliseconds to wait before the next attempt, or why not to make one. */
function plannedWait(failure: Failure, number: number, deadline: number, deps: RetryDeps): number | string {
  const demanded = failure.headers ? demandedWaitMs(failure.headers, deps.now()) : undefined;
  if (demanded === undefined) {
    // Full jitter: clients that failed together do not come back together.
    return Math.floor(deps.random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (number - 1)));
  }
  const left = deadline - deps.now().getTime();
  return demanded <= left ? demanded : `provider asked to wait ${demanded} ms; ${Math.max(0, left)} ms of the budget left`;
}

/** The wait a provider asked for: `retry-after-ms`, else `Retry-After` in seconds or as an HTTP date. */
function demandedWaitMs(headers: Headers, now: Date): number | undefined {
  const number = /^\d+(\.\d+)?$/;
  const ms = headers.get('retry-after-ms')?.trim();
  if (ms && number.test(ms)) return Math.ceil(Number(ms));
  const after = headers.get('retry-after')?.trim();
  if (!after) return undefined;
  if (number.test(after)) return Math.ceil(Number(after) * 1000);
  const date = Date.parse(after);
  return Number.isFinite(date) ? Math.max(0, date - now.getTime()) : undefined;
}

/** Returns a provider's words fit for a log line: the API key replaced, on one line, at most 200 characters. */
export function quoteForLog(text: string, apiKey: string | undefined): string {
  // The key goes before cutting, so no cut can leave part of it behind.
  const safe = apiKey ? text.replaceAll(apiKey, '[api key]') : text;
  return safe.replace(/\s+/g, ' ').slice(0, 200);
}

function startAttempt(signal: AbortSignal, timeoutMs: number): Attempt {
  const controller = new AbortController();
  const forward = () => controller.abort(signal.reason);
  signal.addEventListener('abort', forward, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  let ended = false;
  const disarm = () => clearTimeout(timer);
  const arm = () => {
    disarm();
    if (ended) return;
    timer = setTimeout(() => controller.abort(new DOMException(`no reply within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  };
  arm();
  return {
    signal: controller.signal,
    arm,
    disarm,
    end() {
      ended = true;
      disarm();
      signal.removeEventListener('abort', forward);
    },
  };
}
