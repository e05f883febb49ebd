// What a route runs: validated input in, a JSON value out. One definition validates and documents.
import type * as v from 'valibot';
import type { AuthUser, Role } from '../domain/auth-user.ts';
import type { ErrorCode } from '../domain/errors.ts';
import type { Middleware } from './chain.ts';
import type { Context } from './context.ts';

/** Who may call a route: anyone, any signed-in user, or signed-in users with one of these roles. */
export type Access = 'public' | 'signed_in' | readonly Role[];

export interface Input<B, Q, P, U> {
  body: B;
  query: Q;
  params: P;
  user: U;
  ctx: Context;
}

export interface Operation<B = unknown, Q = unknown, P = unknown, U = AuthUser | undefined> {
  /** Stable id in the machine description, such as `customers.list`. */
  operationId: string;
  summary: string;
  tag: string;
  body?: v.GenericSchema<unknown, B>;
  /** Describes the body in the machine description when `body` only checks its outline (rows validated one by one). */
  documentedBody?: v.GenericSchema;
  query?: v.GenericSchema<unknown, Q>;
  params?: v.GenericSchema<unknown, P>;
  /** The 200 body, for the machine description. */
  response: v.GenericSchema;
  /** Set when the 200 answer is `text/event-stream`: the schema of one event's `data`. */
  events?: v.GenericSchema;
  /** Failures this operation raises itself; validation, authentication, role, guard and internal failures are added. */
  problems?: readonly ErrorCode[];
  /** Set by `publicOperation`: callable without a token. */
  isPublic?: boolean;
  /** Returns the response body (sent as JSON with status 200) or `STREAMED` after writing the response itself. */
  handle(input: Input<B, Q, P, U>): unknown;
}

/** Returned by a handler that wrote its own response, such as a server-sent event stream. */
export const STREAMED = Symbol('streamed');

// `any` here lets one route table hold operations with different input types; each handler stays typed.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyOperation = Operation<any, any, any, any>;

/** Defines an operation that needs a signed-in user. */
export function operation<B = undefined, Q = undefined, P = undefined>(op: Operation<B, Q, P, AuthUser>): Operation<B, Q, P, AuthUser> {
  return op;
}

/** Defines an operation callable without a token. */
export function publicOperation<B = undefined, Q = undefined, P = undefined>(
  op: Operation<B, Q, P, undefined>,
): Operation<B, Q, P, undefined> {
  return { ...op, isPublic: true };
}

/** A middleware a route can carry, with what it adds to the route's description. */
export interface Guard {
  middleware: Middleware<Context>;
  /** Failures it answers with. */
  problems: readonly ErrorCode[];
  /** Request headers it reads, for the machine description. */
  headers?: readonly { name: string; description: string; schema: Record<string, unknown> }[];
  /** Response headers it adds to a success, for the machine description. */
  replyHeaders?: Record<string, { description: string; schema: Record<string, unknown> }>;
}

/** Per-route settings, visible in the route table. */
export interface RouteSettings {
  /** Checked first: answers a repeated request from what was stored. */
  idempotent?: Guard;
  /** Then the rate limit, so replays and invalid requests cost nothing. */
  limit?: Guard;
  /** Last, a cap on requests running at once, held until the handler returns (a stream's whole life). */
  concurrency?: Guard;
}

export interface Route {
  method: string;
  path: string;
  access: Access;
  operation: AnyOperation;
  /** The route's guards, in the order they run (after validation, before the handler). */
  guards: readonly Guard[];
}

/** One row of the route table; a public operation must have public access and the reverse. */
export function route(method: string, path: string, access: Access, op: AnyOperation, settings: RouteSettings = {}): Route {
  if ((access === 'public') !== Boolean(op.isPublic)) {
    throw new Error(`${method} ${path}: access "${String(access)}" does not fit operation ${op.operationId}`);
  }
  const guards = [settings.idempotent, settings.limit, settings.concurrency].filter((g): g is Guard => g !== undefined);
  return { method, path, access, operation: op, guards };
}
