// Running an operation of the route table on a signed-in user's behalf, without a request of its own: what the
// assistant's tools and confirmed proposals do, so they can never do more than the user could by hand.
import type { AuthUser } from '../domain/auth-user.ts';
import { compose } from './chain.ts';
import type { Context } from './context.ts';
import type { Route } from './operation.ts';
import { checkRole } from './pipeline.ts';
import { parseBody, parseInput } from './validate.ts';

export interface OperationCall {
  /** Who it runs as: their role is checked against the route's, and the route's rate limit counts them. */
  user: AuthUser;
  body?: unknown;
  query?: Record<string, unknown>;
  /** The request on whose behalf it runs: its signal aborts the operation, its trace id follows it into the log. */
  ctx: Context;
}

export type RunOperation = (operationId: string, call: OperationCall) => Promise<unknown>;

/**
 * Returns a runner of the route table's operations by id, each as its route runs it: the role (403 `forbidden`),
 * the body and query through the operation's own schemas (400 `validation_failed`), the route's rate limit (429),
 * then the handler, whose answer it returns. Idempotency is the caller's: a route's `Idempotency-Key` guard reads a
 * header there is none of. Throws Error for an operation id the table does not hold (a bug, not input).
 */
export function operationRunner(routes: () => readonly Route[]): RunOperation {
  let byId: Map<string, Route> | undefined;
  return async (operationId, { user, body, query = {}, ctx }) => {
    byId ??= new Map(routes().map((r) => [r.operation.operationId, r]));
    const route = byId.get(operationId);
    if (!route) throw new Error(`No operation ${operationId} in the route table.`);
    const op = route.operation;
    checkRole(route, user);
    const input = {
      body: op.body ? parseBody(op.body, body) : undefined,
      query: op.query ? parseInput(op.query, query, 'query') : {},
      params: {},
      rawBody: body,
    };
    let result: unknown;
    const sub: Context = { ...ctx, route, params: {}, user, input, reply: undefined };
    await compose<Context>([
      ...(route.limit ? [route.limit.middleware] : []),
      async () => {
        result = await op.handle({ ...input, user, ctx: sub });
      },
    ])(sub);
    return result;
  };
}
