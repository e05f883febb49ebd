// The middleware that routes, authenticates, authorizes, validates and runs an operation.
import type { AuthUser } from '../domain/auth-user.ts';
import type { AccessTokens } from '../domain/access-tokens.ts';
import type { Clock } from '../domain/clock.ts';
import { AppError } from '../domain/errors.ts';
import { checkMediaType, readJsonBody } from './body.ts';
import { compose, type Middleware } from './chain.ts';
import type { Context } from './context.ts';
import { Accepted, STREAMED, type Route } from './operation.ts';
import { HttpError } from './problem.ts';
import type { Router } from './router.ts';
import { parseBody, parseInput, queryObject } from './validate.ts';

/** Finds the route: unknown paths are 404, a known path with another method is 405 with `Allow`. */
export function routeRequest(router: Router<Route>): Middleware<Context> {
  return async (ctx, next) => {
    const found = router.lookup(ctx.method, ctx.path);
    if (found.kind === 'not_found') throw new AppError('not_found', `No endpoint at ${ctx.path}.`);
    if (found.kind === 'method_not_allowed') {
      throw new HttpError('method_not_allowed', `${ctx.method} is not allowed here; use ${found.allow.join(', ')}.`, { allow: found.allow });
    }
    ctx.route = found.match.route;
    ctx.params = found.match.params;
    await next();
  };
}

/** Requires a valid bearer token from a user who still exists and is active, on every non-public route. */
export function authenticate(tokens: AccessTokens, findUser: (id: string) => Promise<AuthUser | undefined>, clock: Clock): Middleware<Context> {
  return async (ctx, next) => {
    if (ctx.route?.access === 'public') return next();
    const header = ctx.req.headers.authorization ?? '';
    const match = /^Bearer +([^\s]+) *$/i.exec(header);
    const claims = match?.[1] ? tokens.verify(match[1], clock()) : null;
    const user = claims ? await findUser(claims.sub) : undefined;
    if (!user) {
      throw new AppError('unauthenticated', header ? 'The access token is invalid or expired.' : 'Sign in and send the access token as a Bearer token.');
    }
    ctx.user = user;
    await next();
  };
}

/** Throws `forbidden` unless the route's access allows the user's role (public and signed-in routes allow any). */
export function checkRole(route: Route | undefined, user: AuthUser | undefined): void {
  const access = route?.access;
  if (Array.isArray(access) && !(user && access.includes(user.role))) {
    throw new AppError('forbidden', 'Your role does not allow this action.');
  }
}

/** Rejects signed-in users whose role the route does not allow, before anything else is looked at. */
export function authorize(): Middleware<Context> {
  return async (ctx, next) => {
    checkRole(ctx.route, ctx.user);
    await next();
  };
}

/**
 * Validates path, query and body into `ctx.input`. An operation without a body schema ignores any body sent
 * (a `DELETE` with a body is answered as if it had none); the bytes are discarded unread.
 */
export function validate(): Middleware<Context> {
  return async (ctx, next) => {
    const op = ctx.route!.operation;
    const params = op.params ? parseInput(op.params, ctx.params, 'path') : ctx.params;
    const query = op.query ? parseInput(op.query, queryObject(op.query, ctx.query), 'query') : {};
    let rawBody: unknown;
    let body: unknown;
    if (op.body) {
      rawBody = await readJsonBody(ctx.req);
      body = parseBody(op.body, rawBody);
    } else if (op.upload) {
      checkMediaType(ctx.req, op.upload.mediaType); // the handler reads the body
    } else {
      ctx.req.resume();
    }
    ctx.input = { body, query, params, rawBody };
    await next();
  };
}

/** Runs the route's guards, then the operation; its result becomes `ctx.reply` with status 200. */
export function invoke(): Middleware<Context> {
  const call: Middleware<Context> = async (ctx) => {
    const { body, query, params } = ctx.input!;
    const result = await ctx.route!.operation.handle({ body, query, params, user: ctx.user, ctx });
    if (result === STREAMED) ctx.reply = undefined;
    else if (result instanceof Accepted) ctx.reply = { status: 202, headers: { location: result.location }, body: result.body };
    else ctx.reply = { status: 200, headers: {}, body: result ?? null };
  };
  return async (ctx) => compose([...ctx.route!.guards.map((g) => g.middleware), call])(ctx);
}
