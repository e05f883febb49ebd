// The per-request state that middleware and handlers share.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthUser } from '../domain/auth-user.ts';
import type { Route } from './operation.ts';

export interface Context {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly traceId: string;
  readonly clientAddress: string;
  /** The matched route, set by routing. */
  route?: Route;
  /** Path parameters of the matched route. */
  params: Record<string, string>;
  /** The signed-in user, set by authentication on protected routes. */
  user?: AuthUser;
  /** The status the response was (or will be) sent with, for the request log line. */
  status?: number;
}

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Builds the context for one request; a valid incoming `x-request-id` becomes the trace id. */
export function createContext(req: IncomingMessage, res: ServerResponse, newTraceId: () => string): Context {
  const url = new URL(req.url ?? '/', 'http://service.invalid');
  const incoming = req.headers['x-request-id'];
  const traceId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : newTraceId();
  return {
    req,
    res,
    method: (req.method ?? 'GET').toUpperCase(),
    path: url.pathname,
    query: url.searchParams,
    traceId,
    clientAddress: req.socket.remoteAddress ?? 'unknown',
    params: {},
  };
}
