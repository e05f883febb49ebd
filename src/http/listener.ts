// The top of every request: trace id, version header, one catch, one writer, one log line.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '../domain/errors.ts';
import { createContext, traceIdOf, type Context } from './context.ts';
import type { Logger } from './logger.ts';
import { sendProblem, sendReply } from './respond.ts';

/** A client that hung up while we read its body: nobody is left to answer, and it is no server error. */
function isClientAbort(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'ECONNRESET';
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.stack ?? error.message;
  return String(error);
}

/**
 * Returns a `node:http` request listener running `handle` and writing what it answered, turning anything thrown
 * into a problem document. Every 5xx is logged with its cause; `stopping` aborts every request's signal.
 */
export function createListener(handle: (ctx: Context) => Promise<void>, logger: Logger, stopping: AbortSignal, clientAddressOf: (req: IncomingMessage) => string) {
  const fail = (res: ServerResponse, error: unknown, traceId: string) => {
    const problem = sendProblem(res, error, traceId);
    if (problem.status < 500) return;
    const cause = error instanceof AppError ? error.cause : error;
    logger.error(error instanceof AppError ? problem.detail : 'unexpected error', {
      traceId,
      code: problem.code,
      ...(cause === undefined ? {} : { error: describe(cause) }),
    });
  };

  return (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    const traceId = traceIdOf(req, randomUUID);
    res.setHeader('x-api-version', 'v1');
    res.setHeader('x-trace-id', traceId);
    let ctx: Context | undefined;
    res.once('close', () => {
      logger.info('request', {
        method: req.method,
        path: ctx?.path,
        status: res.headersSent ? res.statusCode : 499,
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        userId: ctx?.user?.id,
        traceId,
      });
    });
    try {
      ctx = createContext(req, res, traceId, stopping, clientAddressOf(req));
    } catch (error) {
      req.resume();
      fail(res, error, traceId);
      return;
    }
    const current = ctx;
    handle(current).then(
      () => {
        if (res.headersSent || res.destroyed) return; // written already (a stream), or nobody to answer
        // Every path through the chain sets a reply or streams; one that did neither is our bug, not a hang.
        if (current.reply) sendReply(res, current.reply);
        else fail(res, new Error(`${current.method} ${current.path} ended without a reply`), traceId);
      },
      (error: unknown) => {
        // A reset is the client's only when its own connection is gone; otherwise it is the database's connection
        // (503 unavailable), even before the body was read (authentication reads the user first).
        const clientGone = req.destroyed || res.destroyed || req.socket.destroyed;
        if ((isClientAbort(error) && clientGone) || (res.destroyed && current.signal.aborted)) {
          res.destroy();
          return;
        }
        fail(res, error, traceId);
      },
    );
  };
}
