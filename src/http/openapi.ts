// The OpenAPI 3.1 document, generated from the route table and the schemas that validate requests.
import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { ErrorCode } from '../domain/errors.ts';
import { Problem } from '../schemas/common.ts';
import type { Route } from './operation.ts';
import { PROBLEMS } from './problem.ts';

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: v.GenericSchema, typeMode: 'input' | 'output'): JsonSchema {
  const { $schema: _ignored, ...rest } = toJsonSchema(schema, { target: 'draft-2020-12', typeMode, errorMode: 'ignore' }) as JsonSchema;
  return rest;
}

/** Every failure a route can answer with: its own, plus validation, authentication, role and internal ones. */
export function problemCodes(route: Route): ErrorCode[] {
  const op = route.operation;
  const codes = new Set<ErrorCode>([...(op.problems ?? []), ...route.guards.flatMap((g) => g.problems)]);
  if (op.body || op.query || op.params) codes.add('validation_failed');
  if (op.body) codes.add('payload_too_large').add('unsupported_media_type');
  if (route.access !== 'public') codes.add('unauthenticated');
  if (Array.isArray(route.access)) codes.add('forbidden');
  codes.add('internal_error');
  return [...codes].sort((a, b) => PROBLEMS[a].status - PROBLEMS[b].status);
}

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
  return [...inPath, ...inQuery, ...inHeader];
}

const COMMON_HEADERS = {
  'x-api-version': { schema: { type: 'string', const: 'v1' } },
  'x-trace-id': { description: 'Equals the log line of the request, and `traceId` in problems.', schema: { type: 'string' } },
};

/** Headers a success can carry beyond the common ones. */
const SUCCESS_HEADERS = (route: Route): JsonSchema => Object.assign({}, ...route.guards.map((g) => g.replyHeaders ?? {}));

/** Headers that come with particular problems. */
const PROBLEM_HEADERS: Partial<Record<ErrorCode, JsonSchema>> = {
  rate_limited: { 'Retry-After': { description: 'Whole seconds to wait.', schema: { type: 'integer', minimum: 1 } } },
  method_not_allowed: { Allow: { description: 'The methods the path has.', schema: { type: 'string' } } },
};

function responses(route: Route): JsonSchema {
  const { events, response } = route.operation;
  const content = events
    ? {
        'text/event-stream': {
          schema: { type: 'string', description: 'Server-sent events: `data:` lines, each one JSON object described by `x-sse-data`; `:` lines are keep-alive comments.' },
          // OpenAPI 3.1 has no place for the schema of each event (3.2's itemSchema); an extension carries it.
          'x-sse-data': jsonSchema(events, 'output'),
        },
      }
    : { 'application/json': { schema: jsonSchema(response, 'output') } };
  const out: JsonSchema = { '200': { description: 'Success', headers: { ...COMMON_HEADERS, ...SUCCESS_HEADERS(route) }, content } };
  for (const code of problemCodes(route)) {
    const status = String(PROBLEMS[code].status);
    const existing = out[status] as { description: string; headers: JsonSchema } | undefined;
    if (existing) {
      existing.description += `, \`${code}\``;
      Object.assign(existing.headers, PROBLEM_HEADERS[code]);
      continue;
    }
    out[status] = {
      description: `Problem: \`${code}\``,
      headers: { ...COMMON_HEADERS, ...PROBLEM_HEADERS[code] },
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    };
  }
  return out;
}

/** Returns the OpenAPI 3.1 document describing every route. */
export function buildOpenApi(routes: readonly Route[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const op = route.operation;
    const entry: JsonSchema = {
      operationId: op.operationId,
      summary: op.summary,
      tags: [op.tag],
      security: route.access === 'public' ? [] : [{ bearerAuth: [] }],
      parameters: parameters(route),
      responses: responses(route),
    };
    if (Array.isArray(route.access)) entry['x-roles'] = route.access;
    const body = op.documentedBody ?? op.body;
    if (body) entry.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(body, 'input') } } };
    (paths[route.path] ??= {})[route.method.toLowerCase()] = entry;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Campaign drafting service',
      version: 'v1',
      description: 'Customers with live aggregates, saved segments, campaigns drafted by a language model with a review workflow, and an assistant chat.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
      schemas: { Problem: jsonSchema(Problem, 'output') },
    },
  };
}
