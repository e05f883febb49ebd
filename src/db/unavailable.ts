// Which failures of a database mean "no primary is reachable now" (answered 503 `unavailable` with Retry-After,
// product.md section 13) rather than a fault of the service (500). Plain codes only: what the sockets, the
// PostgreSQL client and the server say, so that nothing above the engine needs to know the client library.
import { AppError } from '../domain/errors.ts';

/** How long a client is told to wait before trying again while no primary is reachable: a promotion takes seconds. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** Socket failures: the server refused, reset, timed out or cannot be routed to. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/** postgres.js's own: the connection closed under a query, was destroyed or ended, or could not be made in time. */
const CLIENT_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'CONNECTION_ENDED']);

/**
 * SQLSTATEs of a server going away or not taking writes: admin_shutdown, crash_shutdown, cannot_connect_now (starting
 * up, shutting down, in recovery), and read_only_sql_transaction (a standby, or a primary being demoted).
 */
const READ_ONLY = '25006';
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', READ_ONLY]);

/** Whether `error` says that no primary database is reachable now: connection class 08, or one of the codes above. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof AppError) return error.code === 'unavailable';
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return NETWORK_CODES.has(code) || CLIENT_CODES.has(code) || SERVER_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code);
}

/**
 * Whether `error` (as the client library or the sockets threw it) says a connection was lost: its socket failed or
 * closed, or the server ended the session (shutting down, or a connection failure of class 08).
 */
export function isConnectionLost(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || error instanceof AppError) return false;
  return NETWORK_CODES.has(code) || CLIENT_CODES.has(code) || (SERVER_CODES.has(code) && code !== READ_ONLY) || /^08[0-9A-Z]{3}$/.test(code);
}

/** Returns the `unavailable` error for a database failure, keeping the failure as its cause (for the log). */
export function databaseUnavailable(cause?: unknown): AppError {
  return new AppError('unavailable', 'The database cannot be reached right now; try again in a few seconds.', cause === undefined ? {} : { cause });
}

/** Returns `error` as the `unavailable` AppError when it says no primary is reachable, else `error` itself. */
export function classifyDatabaseError(error: unknown): unknown {
  if (error instanceof AppError || !isDatabaseUnavailable(error)) return error;
  return databaseUnavailable(error);
}
