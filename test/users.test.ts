// GET /v1/me, admin user management over HTTP, and the user CLI (product.md sections 1 and 3).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { LIST_USERS_SQL, toUser, type User, type UserRow } from '../src/db/users.ts';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { keptDatabase, type KeptDatabase } from './support/kept-database.ts';
import { tempDir } from './support/temp-dir.ts';

const USER_KEYS = ['createdAt', 'email', 'fullName', 'id', 'isActive', 'role'];
const NEW_PASSWORD = 'a brand new password';

let service: TestService;
let admin: User;
let adminToken: string;

before(async () => {
  service = await startService();
  admin = await service.createUser('admin');
  adminToken = (await service.signIn(admin.email)).accessToken;
});
after(() => service.close());

function countUsersWithEmail(target: TestService, email: string): Promise<number | undefined> {
  return target.queryValue<number>('SELECT count(*) AS n FROM users WHERE email = ?', email);
}

// ---------------------------------------------------------------------------------------------
// GET /v1/me

test('GET /v1/me returns the signed-in user with exactly the User fields', async () => {
  const reply = await service.request('GET', '/v1/me', { token: adminToken });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(Object.keys(reply.body).sort(), USER_KEYS);
  assert.deepEqual(reply.body, {
    id: admin.id,
    fullName: 'Test admin',
    email: admin.email,
    role: 'admin',
    isActive: true,
    createdAt: service.clock.now().toISOString(),
  });
});

test('GET /v1/me without a token is 401 unauthenticated', async () => {
  const reply = await service.request('GET', '/v1/me');
  assertProblem(reply, 401, 'unauthenticated');
});

// ---------------------------------------------------------------------------------------------
// Only admins manage users

for (const role of ['lifecycle_marketer', 'marketing_lead'] as const) {
  test(`a ${role} gets 403 forbidden on GET /v1/users, POST /v1/users and PATCH /v1/users/{id}`, async () => {
    const user = await service.createUser(role);
    const { accessToken } = await service.signIn(user.email);

    assertProblem(await service.request('GET', '/v1/users', { token: accessToken }), 403, 'forbidden');

    const email = `made.by.${role}@example.com`;
    const create = await service.request('POST', '/v1/users', {
      token: accessToken,
      body: { email, fullName: 'Should Not Exist', role: 'admin', password: NEW_PASSWORD },
    });
    assertProblem(create, 403, 'forbidden');
    assert.equal(await countUsersWithEmail(service, email), 0);

    // Forbidden is decided before the body is looked at.
    assertProblem(await service.request('POST', '/v1/users', { token: accessToken, body: { role: 'boss' } }), 403, 'forbidden');

    const demote = await service.request('PATCH', `/v1/users/${admin.id}`, { token: accessToken, body: { role: role, isActive: false } });
    assertProblem(demote, 403, 'forbidden');
    const promote = await service.request('PATCH', `/v1/users/${user.id}`, { token: accessToken, body: { role: 'admin' } });
    assertProblem(promote, 403, 'forbidden');
    // ... and before the object: an unknown id is still 403, not 404.
    assertProblem(await service.request('PATCH', '/v1/users/no-such-user', { token: accessToken, body: {} }), 403, 'forbidden');

    const adminNow = await service.request('GET', '/v1/me', { token: adminToken });
    assert.equal(adminNow.body.role, 'admin');
    assert.equal(adminNow.body.isActive, true);
    const self = await service.request('GET', '/v1/me', { token: accessToken });
    assert.equal(self.body.role, role);
  });
}

// ---------------------------------------------------------------------------------------------
// Admins create, list, change and deactivate users

let created: User;

test('an admin creates a user: 200 with exactly the User fields, email lower-cased, role as given, active', async () => {
  const reply = await service.request('POST', '/v1/users', {
    token: adminToken,
    body: { email: '  New.Person@Example.COM ', fullName: 'New Person', role: 'marketing_lead', password: NEW_PASSWORD },
  });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(Object.keys(reply.body).sort(), USER_KEYS);
  assert.equal(typeof reply.body.id, 'string');
  assert.ok(reply.body.id.length > 0);
  assert.equal(reply.body.email, 'new.person@example.com');
  assert.equal(reply.body.fullName, 'New Person');
  assert.equal(reply.body.role, 'marketing_lead');
  assert.equal(reply.body.isActive, true);
  assert.equal(reply.body.createdAt, service.clock.now().toISOString());
  created = reply.body;

  // The password given is the one that signs in.
  const session = await service.signIn('new.person@example.com', NEW_PASSWORD);
  assert.equal(session.user.id, created.id);
  assert.equal(session.user.role, 'marketing_lead');
});

test('an admin lists users: the list includes the new user and the admin', async () => {
  const reply = await service.request('GET', '/v1/users', { token: adminToken });
  assert.equal(reply.status, 200, reply.text);
  assert.ok(Array.isArray(reply.body));
  for (const user of reply.body) assert.deepEqual(Object.keys(user).sort(), USER_KEYS);
  assert.deepEqual(
    reply.body.find((user: User) => user.id === created.id),
    created,
  );
  assert.equal(reply.body.find((user: User) => user.id === admin.id)?.role, 'admin');
});

test('creating a user with an email that exists in another case is 409 conflict', async () => {
  const reply = await service.request('POST', '/v1/users', {
    token: adminToken,
    body: { email: 'NEW.PERSON@example.com', fullName: 'Someone Else', role: 'admin', password: NEW_PASSWORD },
  });
  assertProblem(reply, 409, 'conflict');
  assert.equal(await countUsersWithEmail(service, 'new.person@example.com'), 1);
  const list = await service.request('GET', '/v1/users', { token: adminToken });
  assert.equal(list.body.find((user: User) => user.id === created.id)?.role, 'marketing_lead');
});

test('an admin changes a user\'s role (and name) with PATCH', async () => {
  const reply = await service.request('PATCH', `/v1/users/${created.id}`, {
    token: adminToken,
    body: { role: 'lifecycle_marketer', fullName: 'Renamed Person' },
  });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(reply.body, { ...created, role: 'lifecycle_marketer', fullName: 'Renamed Person' });

  const list = await service.request('GET', '/v1/users', { token: adminToken });
  assert.deepEqual(
    list.body.find((user: User) => user.id === created.id),
    reply.body,
  );
});

test('PATCH /v1/users/{id} of an unknown id is 404 not_found', async () => {
  const reply = await service.request('PATCH', '/v1/users/no-such-user', { token: adminToken, body: { role: 'admin' } });
  assertProblem(reply, 404, 'not_found');
});

test('deactivating a user ends their access at once: access token 401 unauthenticated, refresh token 401 session_expired', async () => {
  const user = await service.createUser('lifecycle_marketer');
  const session = await service.signIn(user.email);
  const before = await service.request('GET', '/v1/me', { token: session.accessToken });
  assert.equal(before.status, 200);

  const reply = await service.request('PATCH', `/v1/users/${user.id}`, { token: adminToken, body: { isActive: false } });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(reply.body, { ...user, isActive: false });

  // The access token has not expired (the clock has not moved), yet it no longer works.
  assertProblem(await service.request('GET', '/v1/me', { token: session.accessToken }), 401, 'unauthenticated');
  assertProblem(await service.request('POST', '/v1/auth/refresh', { body: { refreshToken: session.refreshToken } }), 401, 'session_expired');
  const revoked = await service.query<{ revoked_reason: string | null }>('SELECT revoked_reason FROM refresh_tokens WHERE user_id = ?', user.id);
  assert.ok(revoked.length > 0);
  assert.ok(revoked.every((row) => row.revoked_reason !== null));

  const list = await service.request('GET', '/v1/users', { token: adminToken });
  assert.equal(list.body.find((u: User) => u.id === user.id)?.isActive, false);
});

test('demoting or deactivating the last active admin is 409 conflict', async () => {
  const own = await startService();
  try {
    const onlyAdmin = await own.createUser('admin');
    const { accessToken } = await own.signIn(onlyAdmin.email);
    // Inactive admins do not count.
    const inactiveAdmin = await own.createUser('admin');
    await own.query('UPDATE users SET is_active = 0 WHERE id = ?', inactiveAdmin.id);

    assertProblem(await own.request('PATCH', `/v1/users/${onlyAdmin.id}`, { token: accessToken, body: { role: 'marketing_lead' } }), 409, 'conflict');
    assertProblem(await own.request('PATCH', `/v1/users/${onlyAdmin.id}`, { token: accessToken, body: { isActive: false } }), 409, 'conflict');
    assertProblem(
      await own.request('PATCH', `/v1/users/${onlyAdmin.id}`, { token: accessToken, body: { fullName: 'Changed', role: 'lifecycle_marketer' } }),
      409,
      'conflict',
    );
    const me = await own.request('GET', '/v1/me', { token: accessToken });
    assert.deepEqual(me.body, onlyAdmin, 'a rejected change changes nothing');

    // With a second active admin the same change is allowed.
    const secondAdmin = await own.createUser('admin');
    const demote = await own.request('PATCH', `/v1/users/${onlyAdmin.id}`, { token: accessToken, body: { role: 'marketing_lead' } });
    assert.equal(demote.status, 200, demote.text);
    assert.equal(demote.body.role, 'marketing_lead');
    assert.equal(secondAdmin.role, 'admin');
  } finally {
    await own.close();
  }
});

// ---------------------------------------------------------------------------------------------
// The user CLI

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI_PASSWORD = 'cli password 123';

interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs `npm run user` on the database, from a folder of its own: a CLI that missed the database writes nothing of ours. */
function runCli(database: KeptDatabase, args: string[], input = ''): CliResult {
  const env: Record<string, string | undefined> = { ...process.env, ...database.env, LOG_LEVEL: 'silent' };
  delete env.NODE_TEST_CONTEXT;
  delete env.TOKEN_SECRET; // the CLI finds the secret beside the database, as the server does
  try {
    const stdout = execFileSync(process.execPath, ['--import', import.meta.resolve('tsx'), join(ROOT, 'scripts/user.ts'), ...args], {
      cwd: tempDir('campaigns-cli-'),
      env,
      input,
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return { status: 0, stdout, stderr: '' };
  } catch (error) {
    const failed = error as { status?: number | null; stdout?: string; stderr?: string };
    return { status: failed.status ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

function jsonLines(stdout: string): User[] {
  return stdout
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as User);
}

test('the user CLI creates (password from stdin), lists, sets roles and deactivates; the user signs in over HTTP', async () => {
  const database = await keptDatabase('cli');
  // The service on the same database, as an operator would run it beside the CLI.
  const running = await startService(database.at);
  const storedUsers = async () => (await running.query<UserRow>(LIST_USERS_SQL)).map(toUser);
  const post = (path: string, body: unknown) => running.request('POST', path, { body });
  try {
    const create = runCli(database, ['create', '--email', 'Cli.User@Example.com', '--name', 'Cli User', '--role', 'marketing_lead'], `${CLI_PASSWORD}\n`);
    assert.equal(create.status, 0, create.stderr);
    const [user] = jsonLines(create.stdout);
    assert.ok(user);
    assert.deepEqual(Object.keys(user).sort(), USER_KEYS);
    assert.equal(user.email, 'cli.user@example.com');
    assert.equal(user.fullName, 'Cli User');
    assert.equal(user.role, 'marketing_lead');
    assert.equal(user.isActive, true);

    const signIn = await post('/v1/auth/sign-in', { email: 'cli.user@example.com', password: CLI_PASSWORD });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    assert.equal(signIn.body.user.id, user.id);

    const list = runCli(database, ['list']);
    assert.equal(list.status, 0, list.stderr);
    assert.deepEqual(jsonLines(list.stdout), [user]);

    const setRole = runCli(database, ['set-role', '--email', 'cli.user@example.com', '--role', 'lifecycle_marketer']);
    assert.equal(setRole.status, 0, setRole.stderr);
    assert.deepEqual(jsonLines(setRole.stdout), [{ ...user, role: 'lifecycle_marketer' }]);

    const deactivate = runCli(database, ['deactivate', '--email', 'CLI.User@example.com']);
    assert.equal(deactivate.status, 0, deactivate.stderr);
    assert.match(deactivate.stdout, /cli\.user@example\.com/);
    assert.deepEqual(await storedUsers(), [{ ...user, role: 'lifecycle_marketer', isActive: false }]);
    // Deactivation also revoked the sessions the user had.
    const refresh = await post('/v1/auth/refresh', { refreshToken: signIn.body.refreshToken });
    assert.equal(refresh.status, 401);
    assert.equal(refresh.body.code, 'session_expired');
    assertProblem(await running.request('GET', '/v1/me', { token: signIn.body.accessToken }), 401, 'unauthenticated');

    const badRole = runCli(database, ['create', '--email', 'other@example.com', '--name', 'Other', '--role', 'boss'], `${CLI_PASSWORD}\n`);
    assert.equal(badRole.status, 2, badRole.stdout);
    assert.match(badRole.stderr, /--role/);
    assert.equal(await running.queryValue('SELECT count(*) FROM users'), 1, 'a failed create stores nothing');
  } finally {
    await running.close();
    await database.remove();
  }
});

