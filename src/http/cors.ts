// Cross-origin access for the browser origins in CORS_ORIGINS.
import type { Context } from './context.ts';
import type { Middleware } from './chain.ts';

const ALLOWED_HEADERS = 'Authorization, Content-Type, Idempotency-Key, X-Request-Id';
const EXPOSED_HEADERS = 'x-api-version, x-trace-id, Retry-After, Idempotency-Replayed';

/** Returns middleware that adds CORS headers for allowed origins and answers their preflight requests. */
export function cors(origins: readonly string[]): Middleware<Context> {
  const allowed = new Set(origins);
  return async (ctx, next) => {
    const origin = ctx.req.headers.origin;
    if (allowed.size === 0 || !origin || !allowed.has(origin)) return next();
    ctx.res.setHeader('access-control-allow-origin', origin);
    ctx.res.setHeader('vary', 'Origin');
    ctx.res.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
    if (ctx.method === 'OPTIONS' && ctx.req.headers['access-control-request-method']) {
      ctx.reply = {
        status: 204,
        headers: {
          'access-control-allow-methods': 'GET, POST, PATCH, DELETE',
          'access-control-allow-headers': ALLOWED_HEADERS,
          'access-control-max-age': '600',
        },
        body: undefined,
      };
      return;
    }
    return next();
  };
}
