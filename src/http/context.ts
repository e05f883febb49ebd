// The per-request state that middleware and handlers share.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthUser } from '../domain/auth-user.ts';
import { invalidField } from '../domain/errors.ts';
import type { Route } from './operation.ts';

/** What an operation answered: written by the listener, the one place that writes responses. */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  /** The JSON body; `undefined` sends no body. */
  body: unknown;
  /** The body already serialised (a stored idempotent reply), sent byte for byte. */
  raw?: string;
  /** A file's bytes (a console file), sent as they are; its content type is in `headers`. */
  bytes?: Uint8Array;
}

/** Path, query and body after validation, and the body as it arrived (for idempotency). */
export interface ValidInput {
  body: unknown;
  query: unknown;
  params: unknown;
  rawBody: unknown;
}

export interface Context {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly traceId: string;
  readonly clientAddress: string;
  /** Fires when the client's connection closes before the response is complete, or when the service stops. */
  readonly signal: AbortSignal;
  /** The matched route, set by routing. */
  route?: Route;
  /** Path parameters of the matched route. */
  params: Record<string, string>;
  /** The signed-in user, set by authentication on protected routes. */
  user?: AuthUser;
  /** Set by validation. */
  input?: ValidInput;
  /** Set by the operation (or a middleware answering for it); `undefined` when the handler streamed its own response. */
  reply?: Reply;
}

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Returns the request's trace id: a valid incoming `x-request-id`, else a new one. */
export function traceIdOf(req: IncomingMessage, newTraceId: () => string): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : newTraceId();
}

/**
 * Builds the context for one request.
 * Throws `validation_failed` on `path` for a request target that is not an absolute path without empty segments.
 */
export function createContext(req: IncomingMessage, res: ServerResponse, traceId: string, stopping: AbortSignal, clientAddress: string): Context {
  const target = req.url ?? '/';
  // `//v1/me` would parse as a URL with host `v1`: reject empty segments instead of guessing what was meant.
  const pathPart = target.split('?', 1)[0]!;
  if (!pathPart.startsWith('/') || pathPart.includes('//')) {
    throw invalidField('path', 'The request target must be a path without empty segments (//).');
  }
  let url: URL;
  try {
    url = new URL(target, 'http://service.invalid');
  } catch {
    throw invalidField('path', 'The request target is not a valid URL path.');
  }
  const closed = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) closed.abort(new Error('The client closed the connection.'));
  });
  return {
    req,
    res,
    method: (req.method ?? 'GET').toUpperCase(),
    path: url.pathname,
    query: url.searchParams,
    traceId,
    clientAddress,
    signal: AbortSignal.any([closed.signal, stopping]),
    params: {},
  };
}
