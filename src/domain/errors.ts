// The one error type everything below the HTTP layer throws; the HTTP layer alone knows statuses.

export const ERROR_CODES = [
  'validation_failed',
  'invalid_credentials',
  'unauthenticated',
  'session_expired',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'internal_error',
  'llm_error',
  'llm_unavailable',
  'unavailable',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface FieldError {
  field: string;
  message: string;
}

export interface AppErrorExtra {
  errors?: FieldError[];
  /** What went wrong underneath, for the log only; never sent to the client. */
  cause?: unknown;
}

/** A failure with a stable machine code and a human detail safe to show to clients. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly extra: AppErrorExtra;

  constructor(code: ErrorCode, detail: string, extra: AppErrorExtra = {}) {
    super(detail, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'AppError';
    this.code = code;
    this.extra = extra;
  }
}

/** Returns a `validation_failed` error naming one field. */
export function invalidField(field: string, message: string): AppError {
  return new AppError('validation_failed', `${field}: ${message}`, { errors: [{ field, message }] });
}
