// The one place that knows which error code means which HTTP status, the problem document shape, and the headers
// some problems carry.
import { classifyDatabaseError, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../db/unavailable.ts';
import { AppError, type ErrorCode, type FieldError } from '../domain/errors.ts';

export const PROBLEMS: Record<ErrorCode, { status: number; title: string }> = {
  validation_failed: { status: 400, title: 'Validation failed' },
  invalid_credentials: { status: 401, title: 'Invalid credentials' },
  unauthenticated: { status: 401, title: 'Unauthenticated' },
  session_expired: { status: 401, title: 'Session expired' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal_error: { status: 500, title: 'Internal error' },
  llm_error: { status: 502, title: 'Model reply unusable' },
  llm_unavailable: { status: 503, title: 'Model provider unavailable' },
  unavailable: { status: 503, title: 'Service unavailable' },
};

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  traceId: string;
  errors?: FieldError[];
}

/** What only an HTTP answer carries beside its problem document. */
export interface ProblemHeaders {
  /** How long the client should wait before trying again (sent as `Retry-After`). */
  retryAfterSeconds?: number;
  /** The methods a path allows (sent as `Allow`). */
  allow?: readonly string[];
}

/** An AppError the HTTP layer throws when its answer needs headers too (`Retry-After`, `Allow`); code below HTTP throws AppError. */
export class HttpError extends AppError {
  readonly headers: ProblemHeaders;

  constructor(code: ErrorCode, detail: string, headers: ProblemHeaders) {
    super(code, detail);
    this.headers = headers;
  }
}

/**
 * Returns the response headers `error` asks for beside its problem document: an HttpError's own, and `Retry-After`
 * for `unavailable` (no database reachable: a promotion takes seconds); none for anything else.
 */
export function problemHeaders(error: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  if (!(error instanceof HttpError)) {
    const known = classifyDatabaseError(error);
    if (known instanceof AppError && known.code === 'unavailable') headers['retry-after'] = String(UNAVAILABLE_RETRY_AFTER_SECONDS);
    return headers;
  }
  const { retryAfterSeconds, allow } = error.headers;
  if (retryAfterSeconds !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfterSeconds)));
  if (allow) headers.allow = allow.join(', ');
  return headers;
}

/**
 * Returns the RFC 9457 problem document for any thrown value: a database that cannot be reached is `unavailable`,
 * other unknown errors become a generic `internal_error`.
 */
export function toProblem(error: unknown, traceId: string): Problem {
  const classified = classifyDatabaseError(error);
  const known = classified instanceof AppError ? classified : new AppError('internal_error', 'The server failed to handle this request.');
  const { status, title } = PROBLEMS[known.code];
  const problem: Problem = { type: `urn:problem:${known.code}`, title, status, detail: known.message, code: known.code, traceId };
  if (known.extra.errors) problem.errors = known.extra.errors;
  return problem;
}
