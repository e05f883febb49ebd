// The HTTP conventions every endpoint shares (product.md section 2, interface.md sections 4, 5, 7 and 9).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openSqliteEngine } from '../src/db/engine.ts';
import { assertProblem, PASSWORD, requestLogLines, startService, type Reply, type TestService } from './helpers.ts';

const MIB = 1024 * 1024;
const APP_ORIGIN = 'https://app.example.com';
const VISIBLE_ASCII_ID = /^[\x21-\x7e]{1,128}$/;

let service: TestService;
let admin: { id: string; email: string };
let adminToken: string;

before(async () => {
  service = await startService();
  admin = await service.createUser('admin');
  adminToken = (await service.signIn(admin.email)).accessToken;
});
after(() => service.close());

/** Sends a request with node:http, the body written in chunks without a Content-Length (chunked encoding). */
function chunkedRequest(url: string, method: string, path: string, headers: Record<string, string>, chunks: Buffer[]): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url + path, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (chunk: Buffer) => parts.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
        }
        let body: unknown;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: responseHeaders, body, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

/** The names in a comma-separated header, lower-cased. */
function headerList(value: string | null): string[] {
  return (value ?? '').split(',').map((name) => name.trim().toLowerCase()).filter(Boolean);
}

function corsHeaderNames(reply: Reply): string[] {
  return [...reply.headers.keys()].filter((name) => name.startsWith('access-control-'));
}

// ---------------------------------------------------------------------------------------------
// Transport failures are problem documents

test('a NUL character in a path id or a filter finds nothing, on either engine: 404 or an empty list, never a 500', async () => {
  // PostgreSQL's text cannot hold NUL: a statement binding one fails unless the engine guards it (pg-engine.ts).
  const unknown = ['/v1/customers/imports/%00', '/v1/segments/a%00b', '/v1/campaigns/%00', '/v1/chat/threads/%00', '/v1/webhooks/%00', '/v1/customers/%00'];
  for (const path of unknown) assertProblem(await service.request('GET', path, { token: adminToken }), 404, 'not_found');
  for (const path of ['/v1/customers?country=%00', '/v1/customers?search=a%00', '/v1/campaigns?segmentId=%00', '/v1/campaigns?createdBy=%00']) {
    const reply = await service.request('GET', path, { token: adminToken });
    assert.equal(reply.status, 200, `${path}: ${reply.text}`);
    assert.deepEqual([reply.body.items, reply.body.total], [[], 0], path);
  }
  const preview = await service.request('POST', '/v1/segments/preview', { token: adminToken, body: { conditions: [{ field: 'country', operator: 'eq', value: 'Ger\u0000many' }] } });
  assert.equal(preview.status, 200, preview.text);
  assert.equal(preview.body.matchCount, 0);
  assertProblem(await service.request('POST', '/v1/auth/refresh', { body: { refreshToken: 'a\u0000b' } }), 401, 'session_expired');
});

test('an unknown path is 404 not_found as a problem document', async () => {
  const reply = await service.request('GET', '/v1/no-such-thing');
  assertProblem(reply, 404, 'not_found');
  assert.ok(reply.body.traceId, 'traceId is not empty');
  assert.equal(reply.body.errors, undefined);
});

test('an unknown path outside /v1 is 404 not_found too', async () => {
  // `/` and the console's routes are the web console (test/console-static.test.ts); a file it does not have is not.
  const reply = await service.request('GET', '/no-such-file.txt');
  assertProblem(reply, 404, 'not_found');
});

test('a known path with another method is 405 method_not_allowed with Allow', async () => {
  const reply = await service.request('DELETE', '/v1/me', { token: adminToken });
  assertProblem(reply, 405, 'method_not_allowed');
  assert.equal(reply.headers.get('allow'), 'GET');
});

test('405 Allow lists every method the path has', async () => {
  const reply = await service.request('PUT', '/v1/users');
  assertProblem(reply, 405, 'method_not_allowed');
  assert.deepEqual(headerList(reply.headers.get('allow')).sort(), ['get', 'post']);
});

test('a JSON body over 1 MiB (declared length) is 413 payload_too_large', async () => {
  const padding = 'x'.repeat(MIB);
  const raw = JSON.stringify({ email: 'someone@example.com', password: padding });
  assert.ok(Buffer.byteLength(raw) > MIB);
  const reply = await service.request('POST', '/v1/auth/sign-in', { raw, headers: { 'content-type': 'application/json' } });
  assertProblem(reply, 413, 'payload_too_large');
});

test('a JSON body over 1 MiB sent chunked without a length is 413 payload_too_large', async () => {
  const total = MIB + 1;
  const head = Buffer.from('{"email":"someone@example.com","password":"');
  const tail = Buffer.from('"}');
  const filler = Buffer.alloc(total - head.length - tail.length, 'x');
  const chunks: Buffer[] = [head];
  for (let offset = 0; offset < filler.length; offset += 64 * 1024) chunks.push(filler.subarray(offset, offset + 64 * 1024));
  chunks.push(tail);
  assert.equal(chunks.reduce((n, c) => n + c.length, 0), total);
  const reply = await chunkedRequest(service.url, 'POST', '/v1/auth/sign-in', { 'content-type': 'application/json' }, chunks);
  assertProblem(reply, 413, 'payload_too_large');
});

test('a JSON body of exactly 1 MiB is read (and validated), not 413', async () => {
  const prefix = '{"email":"someone@example.com","password":"';
  const suffix = '"}';
  const raw = prefix + 'x'.repeat(MIB - prefix.length - suffix.length) + suffix;
  assert.equal(Buffer.byteLength(raw), MIB);
  const reply = await service.request('POST', '/v1/auth/sign-in', { raw, headers: { 'content-type': 'application/json' } });
  assertProblem(reply, 400, 'validation_failed', ['password']);
});

test('a body that is not JSON (text/plain) is 415 unsupported_media_type', async () => {
  const raw = JSON.stringify({ email: admin.email, password: PASSWORD });
  const reply = await service.request('POST', '/v1/auth/sign-in', { raw, headers: { 'content-type': 'text/plain' } });
  assertProblem(reply, 415, 'unsupported_media_type');
});

test('malformed JSON is 400 validation_failed naming the field "body"', async () => {
  const reply = await service.request('POST', '/v1/auth/sign-in', { raw: '{"email": "a@example.com", ', headers: { 'content-type': 'application/json' } });
  assertProblem(reply, 400, 'validation_failed', ['body']);
  assert.equal(typeof reply.body.errors[0].message, 'string');
  assert.ok(reply.body.errors[0].message.length > 0);
});

// ---------------------------------------------------------------------------------------------
// Trace ids and the version header

test('a valid incoming x-request-id becomes x-trace-id and traceId', async () => {
  const id = 'req-ABC_123.~!#$%&*+/:;<=>?@[]^`{|}';
  const reply = await service.request('GET', '/v1/nope', { headers: { 'x-request-id': id } });
  assertProblem(reply, 404, 'not_found');
  assert.equal(reply.headers.get('x-trace-id'), id);
  assert.equal(reply.body.traceId, id);
});

test('an x-request-id of exactly 128 visible characters is kept', async () => {
  const id = 'r'.repeat(128);
  const reply = await service.request('GET', '/health', { headers: { 'x-request-id': id } });
  assert.equal(reply.status, 200);
  assert.equal(reply.headers.get('x-trace-id'), id);
});

test('an x-request-id of 129 characters is replaced by a generated trace id', async () => {
  const id = 'r'.repeat(129);
  const reply = await service.request('GET', '/v1/nope', { headers: { 'x-request-id': id } });
  assertProblem(reply, 404, 'not_found');
  const traceId = reply.headers.get('x-trace-id') ?? '';
  assert.notEqual(traceId, id);
  assert.notEqual(traceId, id.slice(0, 128));
  assert.match(traceId, VISIBLE_ASCII_ID);
  assert.equal(reply.body.traceId, traceId);
});

test('an x-request-id containing a space is replaced by a generated trace id', async () => {
  const id = 'has space';
  const reply = await service.request('GET', '/v1/nope', { headers: { 'x-request-id': id } });
  assertProblem(reply, 404, 'not_found');
  const traceId = reply.headers.get('x-trace-id') ?? '';
  assert.notEqual(traceId, id);
  assert.ok(!traceId.includes(' '));
  assert.match(traceId, VISIBLE_ASCII_ID);
});

test('without x-request-id each request gets its own generated trace id', async () => {
  const first = await service.request('GET', '/health');
  const second = await service.request('GET', '/health');
  const a = first.headers.get('x-trace-id') ?? '';
  const b = second.headers.get('x-trace-id') ?? '';
  assert.match(a, VISIBLE_ASCII_ID);
  assert.match(b, VISIBLE_ASCII_ID);
  assert.notEqual(a, b);
});

test('successful responses carry x-api-version v1 and x-trace-id', async () => {
  const reply = await service.request('GET', '/v1/me', { token: adminToken, headers: { 'x-request-id': 'success-headers-1' } });
  assert.equal(reply.status, 200);
  assert.equal(reply.headers.get('x-api-version'), 'v1');
  assert.equal(reply.headers.get('x-trace-id'), 'success-headers-1');
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);

  const generated = await service.request('GET', '/health');
  assert.equal(generated.status, 200);
  assert.equal(generated.headers.get('x-api-version'), 'v1');
  assert.match(generated.headers.get('x-trace-id') ?? '', VISIBLE_ASCII_ID);
});

// ---------------------------------------------------------------------------------------------
// Request logging

test('one JSON log line per request, with method, path, status, durationMs, userId and traceId', async () => {
  const reply = await service.request('GET', '/v1/me', { token: adminToken, headers: { 'x-request-id': 'log-signed-in' } });
  assert.equal(reply.status, 200);
  const lines = await requestLogLines(service, 'log-signed-in');
  assert.equal(lines.length, 1, JSON.stringify(lines));
  const line = lines[0]!;
  assert.equal(line.traceId, reply.headers.get('x-trace-id'));
  assert.equal(line.method, 'GET');
  assert.equal(line.path, '/v1/me');
  assert.equal(line.status, 200);
  assert.equal(typeof line.durationMs, 'number');
  assert.ok((line.durationMs as number) >= 0);
  assert.equal(line.userId, admin.id);
});

test('the log line of an anonymous failing request has its status and no userId', async () => {
  const reply = await service.request('POST', '/v1/users', { body: {}, headers: { 'x-request-id': 'log-anonymous' } });
  assertProblem(reply, 401, 'unauthenticated');
  const lines = await requestLogLines(service, 'log-anonymous');
  assert.equal(lines.length, 1, JSON.stringify(lines));
  const line = lines[0]!;
  assert.equal(line.method, 'POST');
  assert.equal(line.path, '/v1/users');
  assert.equal(line.status, 401);
  assert.equal(line.traceId, reply.body.traceId);
  assert.equal(line.userId, undefined);
});

test('no log line contains the password or the access or refresh token', async () => {
  const wrongPassword = 'wrong-password-for-the-log-test';
  const failed = await service.request('POST', '/v1/auth/sign-in', {
    body: { email: admin.email, password: wrongPassword },
    headers: { 'x-request-id': 'log-failed-sign-in' },
  });
  assertProblem(failed, 401, 'invalid_credentials');
  const session = await service.signIn(admin.email);
  const refreshed = await service.request('POST', '/v1/auth/refresh', { body: { refreshToken: session.refreshToken } });
  assert.equal(refreshed.status, 200, refreshed.text);
  const signedOut = await service.request('POST', '/v1/auth/sign-out', {
    token: refreshed.body.accessToken,
    body: { refreshToken: refreshed.body.refreshToken },
    headers: { 'x-request-id': 'log-sign-out' },
  });
  assert.equal(signedOut.status, 200, signedOut.text);
  await requestLogLines(service, 'log-sign-out');

  const secrets = [PASSWORD, wrongPassword, session.accessToken, session.refreshToken, refreshed.body.accessToken, refreshed.body.refreshToken];
  for (const secret of secrets) assert.equal(typeof secret, 'string');
  const failedLines = await requestLogLines(service, 'log-failed-sign-in');
  assert.equal(failedLines.length, 1);
  assert.equal(failedLines[0]!.status, 401);
  for (const line of service.logLines) {
    const text = JSON.stringify(line);
    for (const secret of secrets) assert.ok(!text.includes(secret), `a log line contains a secret: ${text}`);
  }
});

// ---------------------------------------------------------------------------------------------
// Validation

test('validation errors name the invalid fields: PATCH /v1/users/{id} with role "boss" names role', async () => {
  const reply = await service.request('PATCH', `/v1/users/${admin.id}`, { token: adminToken, body: { role: 'boss' } });
  assertProblem(reply, 400, 'validation_failed', ['role']);
  assert.equal(typeof reply.body.errors[0].message, 'string');
  const me = await service.request('GET', '/v1/me', { token: adminToken });
  assert.equal(me.body.role, 'admin');
});

test('validation errors name each invalid field once, in order', async () => {
  const reply = await service.request('POST', '/v1/auth/sign-in', { body: { email: 'a@b', password: 'short' } });
  assertProblem(reply, 400, 'validation_failed', ['email', 'password']);
});

test('a missing body where one is required is 400 validation_failed', async () => {
  const reply = await service.request('POST', '/v1/auth/sign-in');
  assertProblem(reply, 400, 'validation_failed');
  assert.ok(Array.isArray(reply.body.errors) && reply.body.errors.length > 0, reply.text);
});

test('unknown body properties are ignored and never stored (id, createdAt, isActive on POST /v1/users)', async () => {
  const reply = await service.request('POST', '/v1/users', {
    token: adminToken,
    body: {
      email: 'extra.props@example.com',
      fullName: 'Extra Props',
      role: 'lifecycle_marketer',
      password: 'another good password',
      id: 'chosen-by-client',
      createdAt: '2001-01-01T00:00:00.000Z',
      isActive: false,
    },
  });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(Object.keys(reply.body).sort(), ['createdAt', 'email', 'fullName', 'id', 'isActive', 'role']);
  assert.notEqual(reply.body.id, 'chosen-by-client');
  assert.equal(reply.body.createdAt, service.clock.now().toISOString());
  assert.equal(reply.body.isActive, true);

  const [stored] = await service.query<{ id: string; created_at: number; is_active: number }>(
    'SELECT id, created_at, is_active FROM users WHERE email = ?',
    'extra.props@example.com',
  );
  assert.ok(stored);
  assert.equal(stored.id, reply.body.id);
  assert.equal(stored.created_at, service.clock.now().getTime());
  assert.equal(stored.is_active, 1);
  assert.equal(await service.queryValue('SELECT count(*) AS n FROM users WHERE id = ?', 'chosen-by-client'), 0);
});

// ---------------------------------------------------------------------------------------------
// Health

test('GET /health answers {status: "ok"} without auth', async () => {
  const reply = await service.request('GET', '/health');
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.body, { status: 'ok' });
  assert.equal(reply.headers.get('x-api-version'), 'v1');
});

// ---------------------------------------------------------------------------------------------
// CORS

test('CORS: without CORS_ORIGINS no CORS headers are added, preflight included', async () => {
  const normal = await service.request('GET', '/health', { headers: { origin: APP_ORIGIN } });
  assert.equal(normal.status, 200);
  assert.deepEqual(corsHeaderNames(normal), []);
  const preflight = await service.request('OPTIONS', '/v1/users', {
    headers: { origin: APP_ORIGIN, 'access-control-request-method': 'POST' },
  });
  assert.deepEqual(corsHeaderNames(preflight), []);
});

test('CORS: with CORS_ORIGINS the allowed origin gets preflight answers and exposed headers; others get nothing', async () => {
  const cors = await startService({ env: { CORS_ORIGINS: APP_ORIGIN } });
  try {
    const preflight = await cors.request('OPTIONS', '/v1/users', {
      headers: {
        origin: APP_ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, idempotency-key',
      },
    });
    assert.equal(preflight.status, 204, preflight.text);
    assert.equal(preflight.headers.get('access-control-allow-origin'), APP_ORIGIN);
    const allowHeaders = headerList(preflight.headers.get('access-control-allow-headers'));
    for (const name of ['authorization', 'content-type', 'idempotency-key']) assert.ok(allowHeaders.includes(name), `allow-headers lacks ${name}`);
    const allowMethods = headerList(preflight.headers.get('access-control-allow-methods'));
    for (const name of ['get', 'post', 'patch', 'delete']) assert.ok(allowMethods.includes(name), `allow-methods lacks ${name}`);
    assert.ok(headerList(preflight.headers.get('vary')).includes('origin'));

    const expected = ['x-api-version', 'x-trace-id', 'retry-after', 'idempotency-replayed'];
    const normal = await cors.request('GET', '/health', { headers: { origin: APP_ORIGIN } });
    assert.equal(normal.status, 200);
    assert.equal(normal.headers.get('access-control-allow-origin'), APP_ORIGIN);
    const exposed = headerList(normal.headers.get('access-control-expose-headers'));
    for (const name of expected) assert.ok(exposed.includes(name), `expose-headers lacks ${name}`);

    // Problem documents must be readable by the browser too.
    const failure = await cors.request('GET', '/v1/me', { headers: { origin: APP_ORIGIN } });
    assertProblem(failure, 401, 'unauthenticated');
    assert.equal(failure.headers.get('access-control-allow-origin'), APP_ORIGIN);
    const exposedOnFailure = headerList(failure.headers.get('access-control-expose-headers'));
    for (const name of expected) assert.ok(exposedOnFailure.includes(name), `expose-headers lacks ${name} on a problem`);

    const otherOrigin = 'https://evil.example.com';
    const other = await cors.request('GET', '/health', { headers: { origin: otherOrigin } });
    assert.equal(other.status, 200);
    assert.deepEqual(corsHeaderNames(other), []);
    const otherPreflight = await cors.request('OPTIONS', '/v1/users', {
      headers: { origin: otherOrigin, 'access-control-request-method': 'POST' },
    });
    assert.deepEqual(corsHeaderNames(otherPreflight), []);
    assert.notEqual(otherPreflight.status, 204);
  } finally {
    await cors.close();
  }
});

// ---------------------------------------------------------------------------------------------
// OpenAPI

type OpenApiOperation = {
  operationId: string;
  security: unknown[];
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
  requestBody?: { content: Record<string, { schema: { required?: string[]; properties?: Record<string, unknown> } }> };
};
type OpenApiDocument = { openapi: string; paths: Record<string, Record<string, OpenApiOperation>>; components: Record<string, any> };

const PUBLIC_OPERATIONS = ['GET /health', 'GET /v1/openapi.json', 'POST /v1/auth/refresh', 'POST /v1/auth/sign-in'];

async function openApi(): Promise<OpenApiDocument> {
  const reply = await service.request<OpenApiDocument>('GET', '/v1/openapi.json');
  assert.equal(reply.status, 200, reply.text);
  return reply.body;
}

function operationsOf(doc: OpenApiDocument): { method: string; path: string; op: OpenApiOperation }[] {
  return Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ method, path, op })));
}

test('GET /v1/openapi.json answers without auth with an OpenAPI 3.1.0 document', async () => {
  const reply = await service.request('GET', '/v1/openapi.json');
  assert.equal(reply.status, 200);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(reply.body.openapi, '3.1.0');
  assert.equal(typeof reply.body.paths, 'object');
  assert.deepEqual(reply.body.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer' });
});

test('OpenAPI: every documented path and method exists on the server', async () => {
  const operations = operationsOf(await openApi());
  assert.ok(operations.length > 0);
  for (const { method, path } of operations) {
    const reply = await service.request(method.toUpperCase(), path.replace(/\{[^}]+\}/g, 'x'));
    const label = `${method.toUpperCase()} ${path}: ${reply.status} ${reply.text}`;
    assert.ok(!(reply.status === 404 && reply.body?.code === 'not_found'), label);
    assert.notEqual(reply.status, 405, label);
    assert.notEqual(reply.body?.code, 'method_not_allowed', label);
  }
});

test('OpenAPI: auth.signIn, auth.refresh and auth.signOut are on their paths and methods', async () => {
  const doc = await openApi();
  assert.equal(doc.paths['/v1/auth/sign-in']?.post?.operationId, 'auth.signIn');
  assert.equal(doc.paths['/v1/auth/refresh']?.post?.operationId, 'auth.refresh');
  assert.equal(doc.paths['/v1/auth/sign-out']?.post?.operationId, 'auth.signOut');
});

test('OpenAPI: operationIds are unique', async () => {
  const ids = operationsOf(await openApi()).map(({ op }) => op.operationId);
  assert.ok(ids.every((id) => typeof id === 'string' && id.length > 0));
  assert.equal(new Set(ids).size, ids.length, JSON.stringify(ids));
});

test('OpenAPI: only sign-in, refresh, health and the document are public; every other operation has bearer security and a 401', async () => {
  const operations = operationsOf(await openApi());
  const publicOnes = operations.filter(({ op }) => op.security.length === 0).map(({ method, path }) => `${method.toUpperCase()} ${path}`);
  assert.deepEqual(publicOnes.sort(), PUBLIC_OPERATIONS);
  for (const { method, path, op } of operations) {
    if (PUBLIC_OPERATIONS.includes(`${method.toUpperCase()} ${path}`)) continue;
    assert.deepEqual(op.security, [{ bearerAuth: [] }], `${method} ${path}`);
    const unauthorized = op.responses['401'];
    assert.ok(unauthorized, `${method} ${path} documents no 401`);
    assert.deepEqual(unauthorized.content?.['application/problem+json']?.schema, { $ref: '#/components/schemas/Problem' });
  }
});

test('OpenAPI: the sign-in request body requires email and password', async () => {
  const doc = await openApi();
  const schema = doc.paths['/v1/auth/sign-in']?.post?.requestBody?.content['application/json']?.schema;
  assert.ok(schema);
  assert.deepEqual([...(schema.required ?? [])].sort(), ['email', 'password']);
  assert.ok(schema.properties?.email && schema.properties?.password);
});

test('OpenAPI: every route of the route table is documented with its operationId, and nothing else is', async () => {
  const doc = await openApi();
  const dir = mkdtempSync(join(tmpdir(), 'campaigns-openapi-'));
  const databasePath = join(dir, 'routes.db');
  const engine = openSqliteEngine(databasePath);
  try {
    const config = loadConfig({ DATABASE_PATH: databasePath, TOKEN_SECRET: 'x'.repeat(32), LOG_LEVEL: 'silent' });
    const { routes } = createApp({ engine, config });
    assert.ok(routes.length > 0);
    for (const r of routes) {
      const documented = doc.paths[r.path]?.[r.method.toLowerCase()];
      assert.ok(documented, `${r.method} ${r.path} is not documented`);
      assert.equal(documented.operationId, r.operation.operationId, `${r.method} ${r.path}`);
    }
    assert.equal(operationsOf(doc).length, routes.length, 'the document has operations the route table lacks');
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------------------------------------
// Unexpected failures

test('an unexpected failure is 500 internal_error whose detail reveals nothing of the error', async () => {
  const broken = await startService();
  try {
    const user = await broken.createUser('marketing_lead');
    const { accessToken } = await broken.signIn(user.email);
    // Every request that looks up its user now fails in the database, on either engine.
    await broken.query('ALTER TABLE users RENAME TO users_gone');

    const me = await broken.request('GET', '/v1/me', { token: accessToken, headers: { 'x-request-id': 'missing-table-500' } });
    assertProblem(me, 500, 'internal_error');
    assert.ok(!/users|no such table|does not exist|\.ts:\d+|at .*\(/i.test(me.text), `the response leaks internals: ${me.text}`);
    const lines = await requestLogLines(broken, 'missing-table-500');
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.status, 500);
    // The cause goes to the log (same trace id), not to the client.
    assert.ok(broken.logLines.some((line) => line.level === 'error' && line.traceId === 'missing-table-500'));
  } finally {
    await broken.close();
  }
});

/** Sends raw bytes on a new connection and returns what comes back before the server closes or `waitMs` passes. */
function rawExchange(bytes: string, options: { hangUp?: boolean; waitMs?: number } = {}): Promise<string> {
  const { port } = new URL(service.url);
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(bytes);
      if (options.hangUp) socket.destroy();
    });
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', () => resolve(answer));
    socket.on('close', () => resolve(answer));
    setTimeout(() => {
      socket.destroy();
      resolve(answer);
    }, options.waitMs ?? 2000);
  });
}

test('a request target that is not a URL path is a 400 problem document, and the service keeps running', async () => {
  const answer = await rawExchange('GET //[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.match(answer, /^HTTP\/1\.1 400 /);
  assert.match(answer, /content-type: application\/problem\+json/i);
  assert.match(answer, /"code":"validation_failed"/);
  assert.match(answer, /"field":"path"/);
  assert.equal((await service.request('GET', '/health')).status, 200);
});

test('a client that hangs up in the middle of its body is not logged as a server error', async () => {
  const before = service.logLines.length;
  await rawExchange('POST /v1/auth/sign-in HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":1', {
    hangUp: true,
    waitMs: 300,
  });
  await service.waitForLog((line) => line.msg === 'request' && line.status === 499 && service.logLines.indexOf(line) >= before);
  const lines = service.logLines.slice(before);
  assert.equal(lines.filter((line) => line.level === 'error').length, 0, JSON.stringify(lines));
  assert.equal(lines.filter((line) => line.msg === 'request' && line.status === 499).length, 1, JSON.stringify(lines));
  assert.equal((await service.request('GET', '/health')).status, 200);
});

test('openapi: import rows are described loosely with their rules in words, problems declare their headers, 429 declares Retry-After', async () => {
  const doc = (await service.request('GET', '/v1/openapi.json')).body;
  const rows = doc.paths['/v1/customers/import'].post.requestBody.content['application/json'].schema.properties.customers;
  assert.equal(rows.maxItems, 1000);
  // A body with bad rows is accepted and reported row by row, so the document must not reject it.
  assert.equal(rows.items.type, 'object');
  assert.deepEqual(rows.items.required ?? [], []);
  for (const field of ['name', 'email', 'country', 'totalTransactions', 'totalAmountSpent', 'lastActivityDate', 'status']) assert.match(rows.description, new RegExp(field));
  const emailPattern = new RegExp(doc.paths['/v1/customers'].post.requestBody.content['application/json'].schema.properties.email.pattern);
  assert.ok(emailPattern.test('  Ada@Example.com '), 'the documented email pattern allows the white space the service trims');
  assert.ok(!emailPattern.test('a..b@example.com'));
  assert.ok(doc.info.license?.name && (doc.info.license.identifier || doc.info.license.url), 'info.license');
  for (const path of ['/health', '/v1/openapi.json']) assert.ok(doc.paths[path].get.responses['400'], `${path} declares a 4xx`);
  const signIn = doc.paths['/v1/auth/sign-in'].post.responses;
  assert.ok(signIn['429'].headers['Retry-After'], 'sign-in 429 declares Retry-After');
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>>)) {
    for (const [method, op] of Object.entries(item)) {
      for (const [status, response] of Object.entries(op.responses)) {
        assert.ok(response.headers?.['x-trace-id'] && response.headers['x-api-version'], `${method} ${path} ${status} declares x-trace-id and x-api-version`);
      }
    }
  }
});
