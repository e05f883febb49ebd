// Writing replies and problem documents: the only code that writes a JSON response.
import type { ServerResponse } from 'node:http';
import type { Reply } from './context.ts';
import { problemHeaders, toProblem, type Problem } from './problem.ts';

/** Sends the reply: its JSON body (or the stored bytes of a replay, or a file's bytes) with its status and headers. */
export function sendReply(res: ServerResponse, reply: Reply, contentType = 'application/json'): void {
  for (const [name, value] of Object.entries(reply.headers)) res.setHeader(name, value);
  if (reply.bytes) {
    res.writeHead(reply.status, { 'content-length': reply.bytes.byteLength });
    res.end(reply.bytes); // node sends no body for HEAD
    return;
  }
  if (reply.body === undefined && reply.raw === undefined) {
    res.writeHead(reply.status);
    res.end();
    return;
  }
  const payload = reply.raw ?? JSON.stringify(reply.body);
  res.writeHead(reply.status, { 'content-type': `${contentType}; charset=utf-8`, 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}

/** Sends the problem document for `error` and returns it; a response already under way is cut instead. */
export function sendProblem(res: ServerResponse, error: unknown, traceId: string): Problem {
  const problem = toProblem(error, traceId);
  if (res.headersSent) {
    res.destroy(); // a streamed response failed midway: the client sees a cut connection, not a half-written body
    return problem;
  }
  const headers = problemHeaders(error);
  // The rest of an oversized body is discarded, not read: the connection cannot be reused after it.
  if (problem.code === 'payload_too_large') headers.connection = 'close';
  sendReply(res, { status: problem.status, headers, body: problem }, 'application/problem+json');
  return problem;
}
