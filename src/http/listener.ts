// The top of every request: trace id, version header, one catch, one log line.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createContext, type Context } from './context.ts';
import type { Logger } from './logger.ts';
import { sendProblem } from './respond.ts';

/** Returns a `node:http` request listener running `handle`, turning anything thrown into a problem document. */
export function createListener(handle: (ctx: Context) => Promise<void>, logger: Logger) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const started = performance.now();
    const ctx = createContext(req, res, randomUUID);
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
      const unexpected = sendProblem(res, error, ctx.traceId);
      if (unexpected) logger.error('unexpected error', { traceId: ctx.traceId, error: error instanceof Error ? error.stack : String(error) });
    });
  };
}
