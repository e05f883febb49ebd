// Writing JSON and problem responses.
import type { ServerResponse } from 'node:http';
import { AppError } from '../domain/errors.ts';
import { toProblem } from './problem.ts';

/** Sends `body` as JSON with the given status and content type. */
export function sendJson(res: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  const payload = JSON.stringify(body ?? null);
  res.writeHead(status, { 'content-type': `${contentType}; charset=utf-8`, 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}

/** Sends the problem document for `error`; returns whether it was an unexpected (500) error. */
export function sendProblem(res: ServerResponse, error: unknown, traceId: string): boolean {
  const problem = toProblem(error, traceId);
  if (res.headersSent) {
    res.destroy(); // a streamed response failed midway: the client sees a cut connection, not a half-written body
    return problem.status >= 500;
  }
  if (error instanceof AppError) {
    for (const [name, value] of Object.entries(error.extra.headers ?? {})) res.setHeader(name, value);
  }
  sendJson(res, problem.status, problem, 'application/problem+json');
  return !(error instanceof AppError);
}
