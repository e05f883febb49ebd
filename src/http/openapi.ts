// The OpenAPI 3.1 document, generated from the route table and the schemas that validate requests.
import { toJsonSchema, toJsonSchemaDefs } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { ErrorCode } from '../domain/errors.ts';
import { ChatAction, StreamAction, StreamDelta, StreamDone, StreamError, StreamEvent, StreamStart } from '../schemas/chat.ts';
import { Problem } from '../schemas/common.ts';
import { WEBHOOK_SCHEMAS, webhookDescriptions } from './openapi-webhooks.ts';
import type { Route } from './operation.ts';
import { PROBLEMS } from './problem.ts';
import { Router } from './router.ts';

type JsonSchema = Record<string, unknown>;

/** Schemas published in `components.schemas`: wherever one appears it is a `$ref`, so generators give it a name. */
const NAMED_SCHEMAS: Record<string, v.GenericSchema> = {
  Problem,
  ChatStreamEvent: StreamEvent,
  ChatStreamStartEvent: StreamStart,
  ChatStreamDeltaEvent: StreamDelta,
  ChatStreamActionEvent: StreamAction,
  ChatAction,
  ChatStreamDoneEvent: StreamDone,
  ChatStreamErrorEvent: StreamError,
  ...WEBHOOK_SCHEMAS,
};

/** Every tag an operation may carry, with what it groups. */
const TAGS: Record<string, string> = {
  system: 'The health check, this document, and the settings a client shows (currency).',
  auth: 'Signing in, renewing and revoking sessions: short-lived access tokens and single-use refresh tokens.',
  users: 'The signed-in user, and user management for admins.',
  customers: 'Customers with search, filters and paging, bulk import, and live aggregates: KPIs, trend, health score, top customers.',
  segments: 'Saved audience segments: conditions combined with AND, with live counts.',
  campaigns: 'Campaigns drafted by a language model for a segment, edited within channel limits and taken through review.',
  chat: 'Assistant threads about the customer base; replies whole or streamed as server-sent events, with proposals (a segment to save, a campaign to draft) the user confirms or rejects.',
  webhooks: 'Endpoints that receive signed events (Standard Webhooks) when campaigns move and imports end; secrets, test sends and delivery logs. Admins only.',
};

const CONVERSION = { target: 'draft-2020-12', errorMode: 'ignore', overrideRef: ({ referenceId }: { referenceId: string }) => `#/components/schemas/${referenceId}` } as const;

/** Returns the JSON Schema of `schema`; the named schemas become references unless `inline`. */
function jsonSchema(schema: v.GenericSchema, typeMode: 'input' | 'output', inline = false): JsonSchema {
  const config = inline ? { ...CONVERSION, typeMode } : { ...CONVERSION, typeMode, definitions: NAMED_SCHEMAS };
  const { $schema: _schema, $defs: _defs, ...rest } = toJsonSchema(schema, config) as JsonSchema;
  return rest;
}

/**
 * Every failure a route can answer with: its own, plus validation, authentication, role and internal ones. A route
 * that needs a token reads its user from the database, so it can also answer `unavailable` (no database reachable).
 */
export function problemCodes(route: Route): ErrorCode[] {
  const op = route.operation;
  const codes = new Set<ErrorCode>([...(op.problems ?? []), ...route.guards.flatMap((g) => g.problems)]);
  if (op.body || op.query || op.params) codes.add('validation_failed');
  if (op.body) codes.add('payload_too_large').add('unsupported_media_type');
  if (route.access !== 'public') codes.add('unauthenticated').add('unavailable');
  if (Array.isArray(route.access)) codes.add('forbidden');
  codes.add('internal_error');
  return [...codes].sort((a, b) => PROBLEMS[a].status - PROBLEMS[b].status);
}

/** Optional on every operation; the pattern is the one `traceIdOf` (context.ts) accepts. */
const REQUEST_ID = {
  name: 'x-request-id',
  in: 'header',
  required: false,
  description:
    'Chooses the trace id of the request: it comes back as `x-trace-id`, as `traceId` in a problem, and names the log line. ' +
    'A value that is not 1-128 visible ASCII characters is ignored and a new id is made.',
  schema: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[\\x21-\\x7e]{1,128}$' },
};

function parameters(route: Route): JsonSchema[] {
  const inPath = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string', minLength: 1 },
  }));
  const query = route.operation.query ? jsonSchema(route.operation.query, 'input') : { properties: {} };
  const required = new Set((query.required as string[] | undefined) ?? []);
  const inQuery = Object.entries((query.properties ?? {}) as Record<string, JsonSchema>).map(([name, schema]) => ({
    name,
    in: 'query',
    required: required.has(name),
    schema,
  }));
  const inHeader = route.guards.flatMap((g) => g.headers ?? []).map((h) => ({ ...h, in: 'header', required: false }));
  return [...inPath, ...inQuery, ...inHeader, REQUEST_ID];
}

const COMMON_HEADERS = {
  'x-api-version': { description: 'The version of the API that answered.', schema: { type: 'string', const: 'v1' } },
  'x-trace-id': { description: 'Equals the log line of the request, and `traceId` in problems; the `x-request-id` sent, when valid.', schema: { type: 'string' } },
};

/** Headers a success can carry beyond the common ones. */
const SUCCESS_HEADERS = (route: Route): JsonSchema => Object.assign({}, ...route.guards.map((g) => g.replyHeaders ?? {}));

/** Headers that come with particular problems. */
const PROBLEM_HEADERS: Partial<Record<ErrorCode, JsonSchema>> = {
  rate_limited: { 'Retry-After': { description: 'Whole seconds to wait.', schema: { type: 'integer', minimum: 1 } } },
  unavailable: { 'Retry-After': { description: 'With `unavailable`: whole seconds to wait before trying again (1 to 5).', schema: { type: 'integer', minimum: 1, maximum: 5 } } },
  method_not_allowed: { Allow: { description: 'The methods the path has, comma-separated.', schema: { type: 'string' } } },
};

const LOCATION_HEADER = { Location: { description: 'The path of the accepted work, to follow it.', schema: { type: 'string' } } };

const PROBLEM_CONTENT = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };

/** The success answer of an operation: a file, accepted work, server-sent events, or JSON. */
function success({ events, response, download, accepted }: Route['operation']): { description: string; content: JsonSchema } {
  if (download) return { description: `Success: ${download.description}`, content: { [download.mediaType]: { schema: { type: 'string' } } } };
  if (accepted) {
    return {
      description: 'Accepted: the work goes on; the body is its state now, and `Location` is where to follow it.',
      content: { 'application/json': { schema: jsonSchema(response, 'output') } },
    };
  }
  if (events) {
    return {
      description: 'Success: server-sent events, one JSON object (the schema) on each `data:` line; lines starting with `:` are keep-alive comments.',
      content: {
        'text/event-stream': {
          schema: jsonSchema(events, 'output'),
          // The same frames inline, as the extension that carried them before `components.schemas` did.
          'x-sse-data': jsonSchema(events, 'output', true),
        },
      },
    };
  }
  return { description: 'Success', content: { 'application/json': { schema: jsonSchema(response, 'output') } } };
}

function responses(route: Route): JsonSchema {
  const { accepted } = route.operation;
  const { description, content } = success(route.operation);
  const headers = { ...COMMON_HEADERS, ...SUCCESS_HEADERS(route), ...(accepted ? LOCATION_HEADER : {}) };
  const out: JsonSchema = { [accepted ? '202' : '200']: { description, headers, content } };
  for (const code of problemCodes(route)) {
    const status = String(PROBLEMS[code].status);
    const existing = out[status] as { description: string; headers: JsonSchema } | undefined;
    if (existing) {
      existing.description += `, \`${code}\``;
      Object.assign(existing.headers, PROBLEM_HEADERS[code]);
      continue;
    }
    out[status] = { description: `Problem: \`${code}\``, headers: { ...COMMON_HEADERS, ...PROBLEM_HEADERS[code] }, content: PROBLEM_CONTENT };
  }
  return out;
}

/** Returns the operation's description: its summary, its own prose if any, who may call it, what other methods get. */
function description(route: Route, allow: string): string {
  const { summary, description: prose } = route.operation;
  const access = route.access;
  const who =
    access === 'public'
      ? 'Callable without a token.'
      : access === 'signed_in'
        ? 'Any signed-in user may call it (bearer access token).'
        : `Needs the role ${access.join(' or ')}; any other signed-in user gets \`403 forbidden\`.`;
  const others = `Methods other than ${allow} on this path (HEAD counts as GET) answer \`405 method_not_allowed\` with \`Allow: ${allow}\`.`;
  return [summary, prose, who, others].filter(Boolean).join('\n\n');
}

/** Returns what the router sends in `Allow` when `path` is asked with a method it has no operation for. */
function allowedMethods(router: Router<Route>, path: string): string {
  const found = router.lookup('OPTIONS', path.replace(/\{\w+\}/g, 'x'));
  return found.kind === 'method_not_allowed' ? found.allow.join(', ') : '';
}

/**
 * The answer of any path to a method it has no operation for. OpenAPI gives responses only to operations and none of
 * them answers 405, so the document's root carries it, with each path's `Allow`; operation descriptions say it too.
 */
const METHOD_NOT_ALLOWED = {
  description: 'Problem: `method_not_allowed`, for a method the path has no operation for; `Allow` lists the methods it has.',
  headers: { ...COMMON_HEADERS, ...PROBLEM_HEADERS.method_not_allowed },
  content: PROBLEM_CONTENT,
};

/** Returns the OpenAPI 3.1 document describing every route. Throws when an operation names a tag not in `TAGS`. */
export function buildOpenApi(routes: readonly Route[]): JsonSchema {
  const router = new Router<Route>();
  for (const route of routes) router.add(route.method, route.path, route);
  const paths: Record<string, JsonSchema> = {};
  const allow: Record<string, string> = {};
  for (const route of routes) {
    const op = route.operation;
    allow[route.path] ??= allowedMethods(router, route.path);
    if (!(op.tag in TAGS)) throw new Error(`${op.operationId}: the tag "${op.tag}" is not declared in the OpenAPI document's tags`);
    const entry: JsonSchema = {
      operationId: op.operationId,
      summary: op.summary,
      description: description(route, allow[route.path]!),
      tags: [op.tag],
      security: route.access === 'public' ? [] : [{ bearerAuth: [] }],
      parameters: parameters(route),
      responses: responses(route),
    };
    if (Array.isArray(route.access)) entry['x-roles'] = route.access;
    const body = op.documentedBody ?? op.body;
    if (body) entry.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(body, 'input') } } };
    if (op.upload) entry.requestBody = { required: true, description: op.upload.description, content: { [op.upload.mediaType]: { schema: { type: 'string' } } } };
    (paths[route.path] ??= {})[route.method.toLowerCase()] = entry;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Campaign drafting service',
      version: 'v1',
      description: 'Customers with live aggregates, saved segments, campaigns drafted by a language model with a review workflow, and an assistant chat.',
      contact: { name: 'The team that runs this self-hosted service' },
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: '/' }],
    tags: Object.entries(TAGS).map(([name, text]) => ({ name, description: text })),
    paths,
    webhooks: webhookDescriptions(),
    'x-method-not-allowed': { response: METHOD_NOT_ALLOWED, allow },
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
      schemas: toJsonSchemaDefs(NAMED_SCHEMAS, { ...CONVERSION, typeMode: 'output' }),
    },
  };
}
