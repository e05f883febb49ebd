// Retries of model provider calls, in one place: which failures are worth another attempt, how long to wait, when to
// stop, and what to tell the client about the provider's answer.
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

/** How hard to try one provider: attempts that fail on `timeoutMs` of silence, 1 + maxRetries of them, within `maxDurationMs`. */
export interface RetryPolicy {
  provider: string;
  /** LLM_TIMEOUT_MS: an attempt fails when no byte at all arrives for this long. */
  timeoutMs: number;
  maxRetries: number;
  /** LLM_MAX_DURATION_MS: one call, its attempts and waits included, ends after this long. */
  maxDurationMs: number;
  /** Kept out of logs and problem details, should a provider echo it. */
  apiKey?: string | undefined;
}

/** One call to a provider, retries included. Its signal aborts when the caller's does or when its time is up. */
export interface Call {
  readonly signal: AbortSignal;
  /** The caller's own signal: its abort is the caller leaving, not a failure. */
  readonly callerSignal: AbortSignal;
  /** When the call must be over, on the injected clock. */
  readonly deadline: number;
  /** Whether LLM_MAX_DURATION_MS ran out. */
  expired(): boolean;
  /** Stops the call's timer and lets go of the caller's signal. */
  end(): void;
}

/** One try of a call. Its signal aborts when the call's does or when the attempt's silence timer runs out. */
export interface Attempt {
  readonly signal: AbortSignal;
  /** Starts the silence timer again; armed while waiting for bytes from the provider. */
  arm(): void;
  /** Stops the timer, so a slow consumer of a stream is not mistaken for a silent provider. */
  disarm(): void;
  /** Stops the timer and lets go of the call's signal. */
  end(): void;
}

/** What a provider said when it failed: its HTTP status (none for a broken stream) and its own words. */
export interface ProviderFailure {
  status?: number;
  headers?: Headers;
  /** The provider's error code or type (`insufficient_quota`, `overloaded_error`, `context_length_exceeded`, ...). */
  code?: string;
  /** The request parameter the provider named, when it named one (`max_tokens`). */
  param?: string;
}

/** A failed attempt: an HTTP status with the provider's words, or a stream that broke or carried an error. */
export class AttemptFailed extends Error {
  readonly failure: ProviderFailure;
  constructor(readonly reason: string, failure: ProviderFailure = {}) {
    super(reason);
    this.name = 'AttemptFailed';
    this.failure = failure;
  }
}

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 8_000;

/** Returns whether a provider's HTTP status may succeed on another attempt: timeout, conflict, rate limit, server error (529 included). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Starts a call: its signal aborts with the caller's or once `maxDurationMs` has passed. */
export function startCall(policy: RetryPolicy, deps: RetryDeps, callerSignal: AbortSignal): Call {
  const controller = new AbortController();
  const forward = () => controller.abort(callerSignal.reason);
  callerSignal.addEventListener('abort', forward, { once: true });
  if (callerSignal.aborted) forward();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new DOMException(`no complete reply within ${policy.maxDurationMs} ms`, 'TimeoutError'));
  }, policy.maxDurationMs);
  return {
    signal: controller.signal,
    callerSignal,
    deadline: deps.now().getTime() + policy.maxDurationMs,
    expired: () => expired,
    end() {
      clearTimeout(timer);
      callerSignal.removeEventListener('abort', forward);
    },
  };
}

/** Returns the error for a call whose LLM_MAX_DURATION_MS ran out. */
export function outOfTime(policy: RetryPolicy): AppError {
  return new AppError('llm_unavailable', `The model provider did not finish its reply within LLM_MAX_DURATION_MS (${policy.maxDurationMs} ms).`);
}

export interface RetryOptions {
  /** Leave the successful attempt running: it belongs to the caller, who must end it. */
  keepAttempt?: boolean;
  /**
   * Offered a failure that is not worth a plain retry; returns true when it changed the request so that one more
   * attempt makes sense (a parameter the provider refuses). Offered at most once per call; that attempt is free.
   */
  adapt?: (failure: AttemptFailed) => boolean;
}

/**
 * Returns what `run` returns, giving it up to 1 + maxRetries attempts within the call. Connection failures, silence,
 * broken streams, retryable statuses and `x-should-retry: true` are retried after a backoff, or after the
 * provider's `retry-after-ms` / `Retry-After`; a demanded wait that would outlast the call gives up at once.
 * Throws AppError `llm_unavailable` when giving up or on a refusal (other 4xx, `insufficient_quota`,
 * `x-should-retry: false`), with the provider's words in the detail; rethrows AppErrors from `run`; rethrows the
 * caller's reason as soon as the caller aborts, also during a wait.
 */
export async function withRetries<T>(policy: RetryPolicy, deps: RetryDeps, call: Call, run: (attempt: Attempt) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const attempts = 1 + policy.maxRetries;
  let adapted = false;
  for (let number = 1; ; ) {
    if (call.callerSignal.aborted) throw call.callerSignal.reason;
    if (call.expired()) throw outOfTime(policy);
    const attempt = startAttempt(call.signal, policy.timeoutMs);
    let failure: Failure;
    try {
      const result = await run(attempt);
      if (!options.keepAttempt) attempt.end();
      return result;
    } catch (error) {
      attempt.end();
      if (call.callerSignal.aborted) throw call.callerSignal.reason;
      if (call.expired()) throw outOfTime(policy);
      if (error instanceof AppError) throw error;
      if (error instanceof AttemptFailed && !adapted && options.adapt?.(error)) {
        adapted = true;
        deps.logger.warn('model provider refused a parameter; trying once more without it', {
          provider: policy.provider,
          status: error.failure.status,
          reason: quoteProvider(error.reason, policy.apiKey),
        });
        continue;
      }
      failure = describeFailure(error, attempt.signal.aborted, policy);
    }

    const wait = failure.retryable && number < attempts ? plannedWait(failure, number, call, deps) : undefined;
    deps.logger.warn('model provider attempt failed', {
      provider: policy.provider,
      attempt: number,
      attempts,
      status: failure.status,
      reason: failure.words ?? failure.what,
      retryInMs: typeof wait === 'number' ? wait : undefined,
      giveUp: typeof wait === 'string' ? wait : undefined,
    });
    if (typeof wait !== 'number') {
      const said = failure.words ? `: "${failure.words}"` : '';
      const detail = failure.retryable
        ? `The model provider is unavailable (${failure.what}${said}; attempt ${number} of ${attempts}).`
        : `The model provider refused the request (${failure.what}${said}).`;
      throw new AppError('llm_unavailable', detail);
    }
    await pause(deps.sleep, wait, call.callerSignal);
    number++;
  }
}

interface Failure {
  status?: number;
  /** What happened, in our words, safe for the client: a status with its meaning, or a kind of failure. */
  what: string;
  /** The provider's own words, the key removed; quoted in logs and problem details. */
  words?: string;
  retryable: boolean;
  headers?: Headers;
}

/** Returns the failure of one attempt, classified: is it worth another, and how to say what happened. */
export function describeFailure(error: unknown, silent: boolean, policy: RetryPolicy): Failure {
  if (silent) return { what: `no answer for LLM_TIMEOUT_MS (${policy.timeoutMs} ms)`, retryable: true };
  if (error instanceof AttemptFailed) {
    const { status, headers, code } = error.failure;
    const words = quoteProvider(error.reason, policy.apiKey);
    if (status === undefined) return { what: 'its stream broke off', words, retryable: true };
    const shouldRetry = headers?.get('x-should-retry')?.trim().toLowerCase();
    const quota = status === 429 && code === 'insufficient_quota';
    const retryable = shouldRetry === 'true' ? true : shouldRetry === 'false' ? false : !quota && isRetryableStatus(status);
    return { status, what: meaningOf(status, code, error.reason, quota), words, retryable, headers };
  }
  // fetch rejects with a TypeError whose cause carries the socket's code (ECONNRESET, ECONNREFUSED, ...).
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const socketCode = (cause as { code?: unknown } | null)?.code;
  const reason = typeof socketCode === 'string' ? socketCode : error instanceof Error ? error.message : String(error);
  return { what: `connection failed: ${quoteProvider(reason, policy.apiKey)}`, retryable: true };
}

/** An HTTP failure in words a self-hoster can act on. */
function meaningOf(status: number, code: string | undefined, words: string, quota: boolean): string {
  const http = `HTTP ${status}`;
  if (quota) return `${http}, the account's quota is exhausted`;
  if (status === 401 || status === 403) return `${http}, the API key was refused; check LLM_API_KEY`;
  if (status === 404) return `${http}, model or address not found; check LLM_MODEL and LLM_BASE_URL`;
  if (code === 'context_length_exceeded' || ((status === 400 || status === 413 || status === 422) && /context|too long|too many tokens|maximum.*tokens/i.test(words))) {
    return `${http}, the prompt is too long for the model`;
  }
  if (status === 429) return `${http}, rate limited`;
  if (status === 529 || code === 'overloaded_error') return `${http}, overloaded`;
  return http;
}

/** Milliseconds to wait before the next attempt, or why not to make one. */
function plannedWait(failure: Failure, number: number, call: Call, deps: RetryDeps): number | string {
  const left = call.deadline - deps.now().getTime();
  const demanded = failure.headers ? demandedWaitMs(failure.headers, deps.now()) : undefined;
  // Full jitter: clients that failed together do not come back together.
  const wait = demanded ?? Math.floor(deps.random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (number - 1)));
  if (wait < left) return wait;
  return demanded === undefined
    ? `no time left within LLM_MAX_DURATION_MS (${Math.max(0, left)} ms)`
    : `provider asked to wait ${demanded} ms; ${Math.max(0, left)} ms of LLM_MAX_DURATION_MS left`;
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

// What API keys look like in providers' own messages, masked or not: `sk-proj-****abcd`, `sk-ant-api03-...`.
const KEY_LIKE = /\b(?:sk|pk|rk|key)-[A-Za-z0-9_*.\-]{4,}/gi;

/**
 * Returns a provider's words fit for a log line or a problem detail: the API key and anything shaped like one
 * replaced, on one line, at most 300 characters.
 */
export function quoteProvider(text: string, apiKey: string | undefined): string {
  // The key goes before cutting, so no cut can leave part of it behind.
  const safe = (apiKey ? text.replaceAll(apiKey, '[api key]') : text).replace(KEY_LIKE, '[api key]');
  const line = safe.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

function startAttempt(signal: AbortSignal, timeoutMs: number): Attempt {
  const controller = new AbortController();
  const forward = () => controller.abort(signal.reason);
  signal.addEventListener('abort', forward, { once: true });
  if (signal.aborted) forward();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let ended = false;
  const disarm = () => clearTimeout(timer);
  const arm = () => {
    disarm();
    if (ended) return;
    timer = setTimeout(() => controller.abort(new DOMException(`no byte within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
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
