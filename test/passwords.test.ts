// Password hashing cost: production hashes at N=2^15, r=8, p=3; tests inject a cheaper cost, and every hash
// is verified at the cost stored in it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dummyPasswordHash, hashPassword, PRODUCTION_PASSWORD_COST, verifyPassword } from '../src/domain/passwords.ts';
import { assertProblem, PASSWORD, startService, TEST_PASSWORD_COST, type TestService } from './helpers.ts';

/** How a hash at N=32768, r=8, p=3 begins (`scrypt$N$r$p$salt$key`). */
const PRODUCTION_PREFIX = 'scrypt$32768$8$3$';
const TEST_PREFIX = 'scrypt$1024$8$1$';
const NEW_PASSWORD = 'a new user password';
let productionHash: Promise<string> | undefined;

/** The stored hash of the user with this email. */
async function storedHash(service: TestService, email: string): Promise<string> {
  const found = await service.queryValue<string>('SELECT password_hash FROM users WHERE email = ?', email);
  assert.ok(found, `no user ${email}`);
  return found;
}

test('the production cost is N=32768, r=8, p=3, and hashPassword uses it by default', async () => {
  assert.deepEqual(PRODUCTION_PASSWORD_COST, { N: 32768, r: 8, p: 3 });
  productionHash ??= hashPassword(PASSWORD);
  const hash = await productionHash;
  assert.ok(hash.startsWith(PRODUCTION_PREFIX), hash);
  assert.equal(await verifyPassword(PASSWORD, hash), true);
});

test('the dummy hash that unknown emails are checked against is at the given cost, production by default, and matches nothing', async () => {
  assert.ok(dummyPasswordHash().startsWith(PRODUCTION_PREFIX));
  const cheap = dummyPasswordHash(TEST_PASSWORD_COST);
  assert.ok(cheap.startsWith(TEST_PREFIX), cheap);
  assert.equal(await verifyPassword(PASSWORD, cheap), false);
});

test('a service built without a password cost hashes new users at the production cost', async () => {
  const service = await startService({ passwordCost: 'app default' });
  try {
    const token = await service.tokenFor('admin');
    const created = await service.request('POST', '/v1/users', {
      token,
      body: { email: 'default.cost@example.com', fullName: 'Default Cost', role: 'marketing_lead', password: NEW_PASSWORD },
    });
    assert.equal(created.status, 200, created.text);
    assert.ok((await storedHash(service, 'default.cost@example.com')).startsWith(PRODUCTION_PREFIX));
  } finally {
    await service.close();
  }
});

test('the test harness injects the cheap cost: users created over HTTP get a hash at that cost', async () => {
  assert.deepEqual(TEST_PASSWORD_COST, { N: 1024, r: 8, p: 1 });
  const service = await startService();
  try {
    const token = await service.tokenFor('admin');
    const created = await service.request('POST', '/v1/users', {
      token,
      body: { email: 'cheap.cost@example.com', fullName: 'Cheap Cost', role: 'marketing_lead', password: NEW_PASSWORD },
    });
    assert.equal(created.status, 200, created.text);
    assert.ok((await storedHash(service, 'cheap.cost@example.com')).startsWith(TEST_PREFIX));
    const changed = await service.request('PATCH', `/v1/users/${created.body.id}`, { token, body: { password: `${NEW_PASSWORD} 2` } });
    assert.equal(changed.status, 200, changed.text);
    assert.ok((await storedHash(service, 'cheap.cost@example.com')).startsWith(TEST_PREFIX));
    assert.equal((await service.signIn('cheap.cost@example.com', `${NEW_PASSWORD} 2`)).user.id, created.body.id);
  } finally {
    await service.close();
  }
});

test('a production-cost hash still verifies when the service hashes at a cheaper cost (the cost is read from the hash)', async () => {
  const service = await startService();
  try {
    const user = await service.createUser('marketing_lead');
    await service.query('UPDATE users SET password_hash = ? WHERE id = ?', await (productionHash ??= hashPassword(PASSWORD)), user.id);
    assert.ok((await storedHash(service, user.email)).startsWith(PRODUCTION_PREFIX));

    const session = await service.signIn(user.email);
    assert.equal(session.user.id, user.id);
    const wrong = await service.request('POST', '/v1/auth/sign-in', { body: { email: user.email, password: 'not the password' } });
    assertProblem(wrong, 401, 'invalid_credentials');
  } finally {
    await service.close();
  }
});
