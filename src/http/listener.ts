// The top of every request: trace id, version header, one catch, one log line.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidField } from '../domain/errors.ts';
import { createContext, type Context } from './context.ts';
import type { Logger } from './logger.ts';
import { sendProblem } from './respond.ts';

/** A client that hung up while we read its body: nobody is left to answer, and it is no server error. */
function isClientAbort(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'ECONNRESET';
}

/** Returns a `node:http` request listener running `handle`, turning anything thrown into a problem document. */
export function createListener(handle: (ctx: Context) => Promise<void>, logger: Logger) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    let ctx: Context;
    try {
      ctx = createContext(req, res, randomUUID);
    } catch {
      // A request target that is not a URL path (such as `//[`): answered, never thrown past this point.
      const traceId = randomUUID();
      res.setHeader('x-api-version', 'v1');
      res.setHeader('x-trace-id', traceId);
      sendProblem(res, invalidField('path', 'The request target is not a valid URL path.'), traceId);
      logger.info('request', { method: req.method, status: 400, traceId });
      return;
    }
    res.setHeader('x-api-version', 'v1');
    res.setHeader('x-trace-id', ctx.traceId);
    res.once('close', () => {
      logger.info('request', {
        method: ctx.method,
        path: ctx.path,
        status: res.headersSent ? res.statusCode : 499,
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        userId: ctx.user?.id,
        traceId: ctx.traceId,
      });
    });
    handle(ctx).catch((error: unknown) => {
      if (isClientAbort(error)) {
        res.destroy();
        return;
      }
      const unexpected = sendProblem(res, error, ctx.traceId);
      if (unexpected) logger.error('unexpected error', { traceId: ctx.traceId, error: error instanceof Error ? error.stack : String(error) });
    });
  };
}
