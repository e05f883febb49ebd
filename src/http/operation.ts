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
  /** More prose for the machine description, after the summary; who may call the operation is added there. */
  description?: string;
  /** Its group in the machine description: one of the tags the document declares (see `TAGS` in openapi.ts). */
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
  /** Set when the body is a file of this media type, which the handler reads from `ctx.req` itself. */
  upload?: { mediaType: string; description: string };
  /** Set when the 200 answer is a file of this media type, which the handler writes itself (returning STREAMED). */
  download?: { mediaType: string; description: string };
  /** Set when success is 202 Accepted, answered by returning `Accepted`: `response` is then the 202 body. */
  accepted?: true;
  /** Failures this operation raises itself; validation, authentication, role, guard and internal failures are added. */
  problems?: readonly ErrorCode[];
  /** Set by `publicOperation`: callable without a token. */
  isPublic?: boolean;
  /** Returns the response body (sent as JSON with status 200) or `STREAMED` after writing the response itself. */
  handle(input: Input<B, Q, P, U>): unknown;
}

/** Returned by a handler that wrote its own response, such as a server-sent event stream. */
export const STREAMED = Symbol('streamed');

/** Returned by a handler of an `accepted` operation: work that goes on, its state now, and where to follow it. */
export class Accepted {
  constructor(
    readonly body: unknown,
    readonly location: string,
  ) {}
}

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
  /** Then a cap on requests running at once, held until the handler returns (a stream's whole life). */
  concurrency?: Guard;
  /** Last, the rate limit, so replays, invalid requests and requests refused by the cap cost nothing. */
  limit?: Guard;
}

export interface Route {
  method: string;
  path: string;
  access: Access;
  operation: AnyOperation;
  /** The route's guards, in the order they run (after validation, before the handler). */
  guards: readonly Guard[];
  /** Its rate limit alone (also in `guards`): what running the operation on someone's behalf still counts against. */
  limit?: Guard;
}

/** One row of the route table; a public operation must have public access and the reverse. */
export function route(method: string, path: string, access: Access, op: AnyOperation, settings: RouteSettings = {}): Route {
  if ((access === 'public') !== Boolean(op.isPublic)) {
    throw new Error(`${method} ${path}: access "${String(access)}" does not fit operation ${op.operationId}`);
  }
  const guards = [settings.idempotent, settings.concurrency, settings.limit].filter((g): g is Guard => g !== undefined);
  return { method, path, access, operation: op, guards, ...(settings.limit ? { limit: settings.limit } : {}) };
}
