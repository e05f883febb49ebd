// Authentication over HTTP: protected routes, sign-in, refresh, sign-out, sign-in rate limiting.
// interface.md sections 3, 4 (auth), 5, 7; product.md sections 2 and 3.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAccessTokens } from '../src/domain/access-tokens.ts';
import { assertProblem, PASSWORD, startService, type Reply, type TestService } from './helpers.ts';

const SESSION_KEYS = ['accessToken', 'expiresIn', 'refreshToken', 'user'];
const USER_KEYS = ['createdAt', 'email', 'fullName', 'id', 'isActive', 'role'];
const ACCESS_TTL_MS = 900_000;
const REFRESH_TTL_MS = 604_800_000;
const WRONG_PASSWORD = 'not the right password';
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

type Session = { accessToken: string; refreshToken: string; user: { id: string; email: string } };

/** The problem document without its per-request trace id, for comparing two failures. */
function withoutTraceId(body: Record<string, unknown>): Record<string, unknown> {
  const { traceId: _traceId, ...rest } = body;
  return rest;
}

/** Asserts a Session with exactly the specified keys, and a User with exactly the specified keys. */
function assertSessionShape(body: any): void {
  assert.deepEqual(Object.keys(body).sort(), SESSION_KEYS);
  assert.deepEqual(Object.keys(body.user).sort(), USER_KEYS);
  assert.equal(typeof body.accessToken, 'string');
  assert.ok(body.accessToken.length > 0);
  assert.equal(typeof body.refreshToken, 'string');
  assert.ok(body.refreshToken.length > 0);
  assert.equal(body.expiresIn, 900);
}

/** Returns the token with its payload changed and its original signature kept. */
function tamperPayload(token: string, change: (claims: Record<string, unknown>) => void): string {
  const [payload, signature, ...rest] = token.split('.');
  assert.ok(payload && signature && rest.length === 0, `unexpected token shape: ${token}`);
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  change(claims);
  const forged = Buffer.from(JSON.stringify(claims)).toString('base64url');
  assert.notEqual(forged, payload);
  return `${forged}.${signature}`;
}

function signInRequest(service: TestService, email: string, password: string): Promise<Reply> {
  return service.request('POST', '/v1/auth/sign-in', { body: { email, password } });
}

function refreshRequest(service: TestService, refreshToken: unknown): Promise<Reply> {
  return service.request('POST', '/v1/auth/refresh', { body: { refreshToken } });
}

interface ProtectedRoute {
  method: string;
  path: string;
}

/** Every operation of the machine description with a non-empty `security`, `{param}` replaced by an id. */
async function protectedRoutes(service: TestService): Promise<ProtectedRoute[]> {
  const reply = await service.request('GET', '/v1/openapi.json');
  assert.equal(reply.status, 200, reply.text);
  const paths = reply.body.paths as Record<string, Record<string, { security?: unknown[] }>>;
  const routes: ProtectedRoute[] = [];
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(operations)) {
      if (!HTTP_METHODS.has(method)) continue;
      if (Array.isArray(op.security) && op.security.length > 0) {
        routes.push({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, 'any-id-123') });
      }
    }
  }
  return routes;
}

/** Calls the route with the given Authorization header value (none when undefined); a JSON body for body methods. */
function callRoute(service: TestService, route: ProtectedRoute, authorization: string | undefined): Promise<Reply> {
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  const hasBody = !['GET', 'HEAD', 'DELETE', 'OPTIONS'].includes(route.method);
  return service.request(route.method, route.path, hasBody ? { headers, body: {} } : { headers });
}

describe('protected operations require a valid bearer token', () => {
  let service: TestService;
  let routes: ProtectedRoute[];
  let adminToken: string;
  let otherUserId: string;

  before(async () => {
    service = await startService();
    routes = await protectedRoutes(service);
    const admin = await service.createUser('admin');
    otherUserId = (await service.createUser('lifecycle_marketer')).id;
    adminToken = (await service.signIn(admin.email)).accessToken;
  });
  after(() => service.close());

  /** Asserts 401 unauthenticated on every protected route for the Authorization header value. */
  async function assertEveryRouteRejects(authorization: string | undefined, target: TestService = service): Promise<void> {
    for (const route of routes) {
      const reply = await callRoute(target, route, authorization);
      assert.equal(reply.status, 401, `${route.method} ${route.path} with ${JSON.stringify(authorization)}: ${reply.text}`);
      assertProblem(reply, 401, 'unauthenticated');
    }
  }

  test('only sign-in, refresh, health and the machine description are public; every other route declares bearer security', async () => {
    const reply = await service.request('GET', '/v1/openapi.json');
    assert.equal(reply.status, 200);
    const publicOps: string[] = [];
    for (const [path, operations] of Object.entries(reply.body.paths as Record<string, Record<string, { security?: unknown[] }>>)) {
      for (const [method, op] of Object.entries(operations)) {
        if (!HTTP_METHODS.has(method)) continue;
        if (!Array.isArray(op.security) || op.security.length === 0) publicOps.push(`${method.toUpperCase()} ${path}`);
      }
    }
    assert.deepEqual(publicOps.sort(), ['GET /health', 'GET /v1/openapi.json', 'POST /v1/auth/refresh', 'POST /v1/auth/sign-in']);
    const names = routes.map((r) => `${r.method} ${r.path}`);
    assert.ok(names.includes('POST /v1/auth/sign-out'), names.join(', '));
    assert.ok(names.includes('GET /v1/me'), names.join(', '));
  });

  test('control: a genuine admin access token is accepted by every protected route (not 401)', async () => {
    for (const route of routes) {
      const reply = await callRoute(service, route, `Bearer ${adminToken}`);
      assert.notEqual(reply.status, 401, `${route.method} ${route.path}: ${reply.text}`);
      assert.notEqual(reply.status, 403, `${route.method} ${route.path}: ${reply.text}`);
    }
  });

  test('without an Authorization header every protected route is 401 unauthenticated', async () => {
    await assertEveryRouteRejects(undefined);
  });

  test('with a malformed token every protected route is 401 unauthenticated', async (t) => {
    const [payload = ''] = adminToken.split('.');
    const malformed: Record<string, string> = {
      'garbage bearer value': 'Bearer not-a-token',
      'three dot-separated parts': `Bearer ${adminToken}.extra`,
      'payload with an empty signature': `Bearer ${payload}.`,
      'signature cut short': `Bearer ${adminToken.slice(0, -4)}`,
      'signature with a character outside base64url appended': `Bearer ${adminToken}!`,
      'empty Bearer': 'Bearer ',
      'token without the Bearer scheme': adminToken,
      'token under another scheme': `Basic ${adminToken}`,
    };
    for (const [name, authorization] of Object.entries(malformed)) {
      await t.test(name, () => assertEveryRouteRejects(authorization));
    }
  });

  test('with a token signed by another secret every protected route is 401 unauthenticated', async () => {
    const foreign = createAccessTokens(Buffer.from('a-completely-different-secret-of-32-bytes-or-more'), 900);
    const admin = (await service.request('GET', '/v1/me', { token: adminToken })).body;
    const token = foreign.issue({ id: admin.id, role: 'admin' }, service.clock.now());
    await assertEveryRouteRejects(`Bearer ${token}`);
  });

  test('with a tampered payload and the original signature every protected route is 401 unauthenticated', async (t) => {
    const variants: Record<string, string> = {
      'expiry pushed out': tamperPayload(adminToken, (c) => {
        c.exp = Number(c.exp) + 3600;
      }),
      'subject switched to another user': tamperPayload(adminToken, (c) => {
        c.sub = otherUserId;
      }),
    };
    for (const [name, token] of Object.entries(variants)) {
      await t.test(name, () => assertEveryRouteRejects(`Bearer ${token}`));
    }
  });

  // Moves the clock, so it runs on a service of its own: the other tests here may run in any order.
  test('an access token is accepted until ACCESS_TOKEN_TTL (900 s) and then every protected route is 401 unauthenticated', async (t) => {
    const own = await startService();
    t.after(() => own.close());
    const token = (await own.signIn((await own.createUser('admin')).email)).accessToken;
    own.clock.advance(ACCESS_TTL_MS - 1000);
    assert.equal((await own.request('GET', '/v1/me', { token })).status, 200);
    own.clock.advance(2000);
    await assertEveryRouteRejects(`Bearer ${token}`, own);
  });
});

describe('auth.signIn', () => {
  let service: TestService;
  let adminToken: string;

  before(async () => {
    service = await startService();
    const admin = await service.createUser('admin');
    adminToken = (await service.signIn(admin.email)).accessToken;
  });
  after(() => service.close());

  test('sign-in returns exactly the Session keys and exactly the User keys, expiresIn 900, with email trimmed and lower-cased', async () => {
    const stored = await service.createUser('marketing_lead', 'mixed@example.com');
    const reply = await signInRequest(service, '  MiXed@Example.COM ', PASSWORD);
    assert.equal(reply.status, 200, reply.text);
    assertSessionShape(reply.body);
    assert.deepEqual(reply.body.user, {
      id: stored.id,
      fullName: 'Test marketing_lead',
      email: 'mixed@example.com',
      role: 'marketing_lead',
      isActive: true,
      createdAt: '2026-11-20T12:00:00.000Z',
    });
    assert.notEqual(reply.body.accessToken, reply.body.refreshToken);
    const me = await service.request('GET', '/v1/me', { token: reply.body.accessToken });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.id, stored.id);
  });

  test('the accepted example addresses of product.md pass email validation (401 invalid_credentials, not 400)', async () => {
    for (const email of ["o'brien@x.com", 'a@x-.com']) {
      const reply = await signInRequest(service, email, PASSWORD);
      assert.equal(reply.status, 401, `${email}: ${reply.text}`);
      assertProblem(reply, 401, 'invalid_credentials');
    }
  });

  test('each rejected example address of product.md is 400 validation_failed naming email', async () => {
    for (const email of ['a@b', '.a@x.com', 'a.@x.com', 'a..b@x.com', 'a@x.c', 'josé@x.com']) {
      const reply = await signInRequest(service, email, PASSWORD);
      assert.equal(reply.status, 400, `${email}: ${reply.text}`);
      assertProblem(reply, 400, 'validation_failed', ['email']);
    }
  });

  test('passwords of 7 and 129 characters are 400 validation_failed naming password; 8 and 128 pass validation', async () => {
    const user = await service.createUser('lifecycle_marketer');
    for (const length of [7, 129]) {
      const reply = await signInRequest(service, user.email, 'p'.repeat(length));
      assert.equal(reply.status, 400, `length ${length}: ${reply.text}`);
      assertProblem(reply, 400, 'validation_failed', ['password']);
    }
    for (const length of [8, 128]) {
      const reply = await signInRequest(service, user.email, 'p'.repeat(length));
      assertProblem(reply, 401, 'invalid_credentials');
    }
  });

  test('unknown email, wrong password and inactive user all give 401 invalid_credentials with identical type, title and detail', async () => {
    const known = await service.createUser('lifecycle_marketer');
    const inactive = await service.createUser('lifecycle_marketer');
    const deactivated = await service.request('PATCH', `/v1/users/${inactive.id}`, { token: adminToken, body: { isActive: false } });
    assert.equal(deactivated.status, 200, deactivated.text);
    assert.equal(deactivated.body.isActive, false);

    const unknownEmail = await signInRequest(service, 'nobody-here@example.com', PASSWORD);
    const wrongPassword = await signInRequest(service, known.email, WRONG_PASSWORD);
    const inactiveUser = await signInRequest(service, inactive.email, PASSWORD);
    for (const reply of [unknownEmail, wrongPassword, inactiveUser]) assertProblem(reply, 401, 'invalid_credentials');
    assert.deepEqual(withoutTraceId(wrongPassword.body), withoutTraceId(unknownEmail.body));
    assert.deepEqual(withoutTraceId(inactiveUser.body), withoutTraceId(unknownEmail.body));
    // Control: the known user's right password does sign in, so the failure above was the password.
    assert.equal((await signInRequest(service, known.email, PASSWORD)).status, 200);
  });

  test('a deactivated user is cut off at once: the access token is 401 unauthenticated and the refresh token 401 session_expired', async () => {
    const user = await service.createUser('marketing_lead');
    const session: Session = await service.signIn(user.email);
    assert.equal((await service.request('GET', '/v1/me', { token: session.accessToken })).status, 200);
    const deactivated = await service.request('PATCH', `/v1/users/${user.id}`, { token: adminToken, body: { isActive: false } });
    assert.equal(deactivated.status, 200, deactivated.text);
    assertProblem(await service.request('GET', '/v1/me', { token: session.accessToken }), 401, 'unauthenticated');
    assertProblem(await refreshRequest(service, session.refreshToken), 401, 'session_expired');
  });
});

describe('auth.refresh', () => {
  let service: TestService;

  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  test('refresh returns a new Session whose access and refresh tokens both differ from the old, and the new pair works', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const old: Session = await service.signIn(user.email);
    const reply = await refreshRequest(service, old.refreshToken);
    assert.equal(reply.status, 200, reply.text);
    assertSessionShape(reply.body);
    assert.equal(reply.body.user.id, user.id);
    assert.equal(reply.body.user.email, user.email);
    assert.notEqual(reply.body.refreshToken, old.refreshToken);
    assert.notEqual(reply.body.accessToken, old.accessToken);
    assert.equal((await service.request('GET', '/v1/me', { token: reply.body.accessToken })).status, 200);
    // The new refresh token is itself exchangeable once.
    assert.equal((await refreshRequest(service, reply.body.refreshToken)).status, 200);
  });

  test('an exchanged refresh token cannot be exchanged again: 401 session_expired', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const old: Session = await service.signIn(user.email);
    assert.equal((await refreshRequest(service, old.refreshToken)).status, 200);
    assertProblem(await refreshRequest(service, old.refreshToken), 401, 'session_expired');
  });

  test('replaying an exchanged refresh token also revokes the token issued by that exchange (whole family)', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const first: Session = await service.signIn(user.email);
    const exchanged = await refreshRequest(service, first.refreshToken);
    assert.equal(exchanged.status, 200, exchanged.text);
    assertProblem(await refreshRequest(service, first.refreshToken), 401, 'session_expired');
    assertProblem(await refreshRequest(service, exchanged.body.refreshToken), 401, 'session_expired');
  });

  test('a garbage string, an unknown well-formed token and an access token given as refreshToken are 401 session_expired', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const session: Session = await service.signIn(user.email);
    for (const refreshToken of ['garbage', 'A'.repeat(43), session.accessToken]) {
      const reply = await refreshRequest(service, refreshToken);
      assert.equal(reply.status, 401, `${refreshToken}: ${reply.text}`);
      assertProblem(reply, 401, 'session_expired');
    }
  });

  test('an empty or missing refreshToken is 400 validation_failed naming refreshToken', async () => {
    assertProblem(await refreshRequest(service, ''), 400, 'validation_failed', ['refreshToken']);
    assertProblem(await service.request('POST', '/v1/auth/refresh', { body: {} }), 400, 'validation_failed', ['refreshToken']);
  });

  test('10 concurrent refreshes of one token give exactly one 200 and nine 401 session_expired', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const session: Session = await service.signIn(user.email);
    const replies = await Promise.all(Array.from({ length: 10 }, () => refreshRequest(service, session.refreshToken)));
    const ok = replies.filter((r) => r.status === 200);
    const rejected = replies.filter((r) => r.status !== 200);
    assert.equal(ok.length, 1, replies.map((r) => r.status).join(','));
    assert.equal(rejected.length, 9);
    for (const reply of rejected) assertProblem(reply, 401, 'session_expired');
    assertSessionShape(ok[0]!.body);
  });
});

describe('auth.refresh: refresh token lifetime', () => {
  let service: TestService;

  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  test('a refresh token is exchangeable until REFRESH_TOKEN_TTL (604800 s) and 401 session_expired after it', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const early: Session = await service.signIn(user.email);
    const late: Session = await service.signIn(user.email);
    service.clock.advance(REFRESH_TTL_MS - 1000);
    assert.equal((await refreshRequest(service, early.refreshToken)).status, 200);
    service.clock.advance(2000); // 604801 s after sign-in
    assertProblem(await refreshRequest(service, late.refreshToken), 401, 'session_expired');
  });
});

describe('auth.signOut', () => {
  let service: TestService;

  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  test('sign-out without a bearer token is 401 unauthenticated and revokes nothing', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const session: Session = await service.signIn(user.email);
    const reply = await service.request('POST', '/v1/auth/sign-out', { body: { refreshToken: session.refreshToken } });
    assertProblem(reply, 401, 'unauthenticated');
    assert.equal((await refreshRequest(service, session.refreshToken)).status, 200);
  });

  test('sign-out answers 200 with body null, repeating it answers 200 null again, and the refresh token is then session_expired', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const session: Session = await service.signIn(user.email);
    for (let i = 0; i < 2; i++) {
      const reply = await service.request('POST', '/v1/auth/sign-out', { token: session.accessToken, body: { refreshToken: session.refreshToken } });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.text, 'null');
      assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
    }
    assertProblem(await refreshRequest(service, session.refreshToken), 401, 'session_expired');
  });

  test('sign-out revokes only the given refresh token: another session of the same user still refreshes', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const first: Session = await service.signIn(user.email);
    const second: Session = await service.signIn(user.email);
    const reply = await service.request('POST', '/v1/auth/sign-out', { token: first.accessToken, body: { refreshToken: first.refreshToken } });
    assert.equal(reply.status, 200, reply.text);
    assertProblem(await refreshRequest(service, first.refreshToken), 401, 'session_expired');
    const other = await refreshRequest(service, second.refreshToken);
    assert.equal(other.status, 200, other.text);
  });

  // Advances this service's clock: keep it last in the block.
  test('the access token keeps working after sign-out until it expires, then 401 unauthenticated', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const session: Session = await service.signIn(user.email);
    const out = await service.request('POST', '/v1/auth/sign-out', { token: session.accessToken, body: { refreshToken: session.refreshToken } });
    assert.equal(out.status, 200, out.text);
    const me = await service.request('GET', '/v1/me', { token: session.accessToken });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.id, user.id);
    service.clock.advance(ACCESS_TTL_MS + 1000);
    assertProblem(await service.request('GET', '/v1/me', { token: session.accessToken }), 401, 'unauthenticated');
  });
});

describe('sign-in rate limiting', () => {
  /** Sends `count` wrong-password sign-ins for the email at once and asserts each is 401 invalid_credentials. */
  async function failSignIns(service: TestService, email: string, count: number): Promise<void> {
    const replies = await Promise.all(Array.from({ length: count }, () => signInRequest(service, email, WRONG_PASSWORD)));
    for (const reply of replies) assertProblem(reply, 401, 'invalid_credentials');
  }

  /** Asserts 429 rate_limited with a Retry-After of whole positive seconds, at most 900; returns it. */
  function assertRateLimited(reply: Reply): number {
    assertProblem(reply, 429, 'rate_limited');
    const retryAfter = reply.headers.get('retry-after') ?? '';
    assert.match(retryAfter, /^[1-9][0-9]*$/);
    assert.ok(Number(retryAfter) <= 900, retryAfter);
    return Number(retryAfter);
  }

  test('after 8 failed sign-ins for one email the 9th, even with the right password, is 429 rate_limited with Retry-After', async () => {
    const service = await startService();
    try {
      const user = await service.createUser('lifecycle_marketer');
      await failSignIns(service, user.email, 8);
      assertRateLimited(await signInRequest(service, user.email, PASSWORD));
      // The limit is per normalized email: another spelling of the same address is limited too.
      assertRateLimited(await signInRequest(service, ` ${user.email.toUpperCase()} `, PASSWORD));
    } finally {
      await service.close();
    }
  });

  test('the sign-in limit of one email does not affect another email from the same client', async () => {
    const service = await startService();
    try {
      const limited = await service.createUser('lifecycle_marketer');
      const other = await service.createUser('lifecycle_marketer');
      await failSignIns(service, limited.email, 8);
      assertRateLimited(await signInRequest(service, limited.email, PASSWORD));
      const reply = await signInRequest(service, other.email, PASSWORD);
      assert.equal(reply.status, 200, reply.text);
    } finally {
      await service.close();
    }
  });

  /** Sends `count` wrong-password sign-ins for the email at once as if relayed by a proxy for `client`; each must be 401. */
  async function failSignInsFrom(service: TestService, email: string, count: number, client: string): Promise<void> {
    const replies = await Promise.all(
      Array.from({ length: count }, () => service.request('POST', '/v1/auth/sign-in', { body: { email, password: WRONG_PASSWORD }, headers: { 'x-forwarded-for': client } })),
    );
    for (const reply of replies) assertProblem(reply, 401, 'invalid_credentials');
  }

  test('behind a proxy named in TRUSTED_PROXIES the limit counts per client of X-Forwarded-For, not per proxy', async () => {
    const service = await startService({ env: { TRUSTED_PROXIES: '127.0.0.1,::1' } });
    try {
      const user = await service.createUser('lifecycle_marketer');
      // The proxy appends the address it was reached from: what the client wrote left of it is not believed.
      await failSignInsFrom(service, user.email, 8, '198.51.100.1, 203.0.113.7');
      const limited = await service.request('POST', '/v1/auth/sign-in', { body: { email: user.email, password: PASSWORD }, headers: { 'x-forwarded-for': '203.0.113.7' } });
      assertRateLimited(limited);
      const other = await service.request('POST', '/v1/auth/sign-in', { body: { email: user.email, password: PASSWORD }, headers: { 'x-forwarded-for': '203.0.113.8' } });
      assert.equal(other.status, 200, other.text);
    } finally {
      await service.close();
    }
  });

  test('without TRUSTED_PROXIES an X-Forwarded-For header is ignored: a client cannot escape the limit by writing one', async () => {
    const service = await startService();
    try {
      const user = await service.createUser('lifecycle_marketer');
      await failSignInsFrom(service, user.email, 8, '203.0.113.7');
      const reply = await service.request('POST', '/v1/auth/sign-in', { body: { email: user.email, password: PASSWORD }, headers: { 'x-forwarded-for': '203.0.113.8' } });
      assertRateLimited(reply);
    } finally {
      await service.close();
    }
  });

  test('a successful sign-in clears the failure count: 7 failures, 1 success, then 8 more failures are 401 and only the next is 429', async () => {
    const service = await startService();
    try {
      const user = await service.createUser('lifecycle_marketer');
      await failSignIns(service, user.email, 7);
      const success = await signInRequest(service, user.email, PASSWORD);
      assert.equal(success.status, 200, success.text);
      await failSignIns(service, user.email, 8);
      assertRateLimited(await signInRequest(service, user.email, PASSWORD));
    } finally {
      await service.close();
    }
  });

  test('the limit holds within the 15-minute window and lifts after it', async () => {
    const service = await startService();
    try {
      const user = await service.createUser('lifecycle_marketer');
      await failSignIns(service, user.email, 8);
      assertRateLimited(await signInRequest(service, user.email, PASSWORD));
      service.clock.advance(899_000);
      assertRateLimited(await signInRequest(service, user.email, PASSWORD));
      service.clock.advance(2000);
      const reply = await signInRequest(service, user.email, PASSWORD);
      assert.equal(reply.status, 200, reply.text);
    } finally {
      await service.close();
    }
  });

  test('waiting the Retry-After seconds is enough for the next sign-in to be accepted', async () => {
    const service = await startService();
    try {
      const user = await service.createUser('lifecycle_marketer');
      await failSignIns(service, user.email, 8);
      service.clock.advance(300_000);
      const retryAfter = assertRateLimited(await signInRequest(service, user.email, PASSWORD));
      service.clock.advance(retryAfter * 1000);
      const reply = await signInRequest(service, user.email, PASSWORD);
      assert.equal(reply.status, 200, reply.text);
    } finally {
      await service.close();
    }
  });
});

describe('versioning', () => {
  let service: TestService;

  before(async () => {
    service = await startService();
  });
  after(() => service.close());

  test('successful responses carry x-api-version: v1', async () => {
    const user = await service.createUser('lifecycle_marketer');
    const signIn = await signInRequest(service, user.email, PASSWORD);
    const refresh = await refreshRequest(service, signIn.body.refreshToken);
    const me = await service.request('GET', '/v1/me', { token: refresh.body.accessToken });
    const signOut = await service.request('POST', '/v1/auth/sign-out', {
      token: refresh.body.accessToken,
      body: { refreshToken: refresh.body.refreshToken },
    });
    const openapi = await service.request('GET', '/v1/openapi.json');
    const health = await service.request('GET', '/health');
    const replies = { signIn, refresh, me, signOut, openapi, health };
    for (const [name, reply] of Object.entries(replies)) {
      assert.equal(reply.status, 200, `${name}: ${reply.text}`);
      assert.equal(reply.headers.get('x-api-version'), 'v1', name);
    }
  });
});
