// The first admin, created on the first start of an empty database (product.md section 1).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../src/config.ts';
import { createPgUserRepository } from '../src/db/postgres/users.ts';
import { createUserRepository } from '../src/db/users.ts';
import { verifyPassword } from '../src/domain/passwords.ts';
import { ensureFirstAdmin } from '../src/first-admin.ts';
import { TEST_PASSWORD_COST } from './helpers.ts';
import { freshEngine } from './support/kept-database.ts';

const NO_ADMIN = { email: undefined, password: undefined, name: undefined };

/** The users of a new database on the suite's engine; `engine.close()` also removes it. */
async function emptyUsers() {
  const { engine, close } = await freshEngine('first-admin');
  const users = engine.kind === 'sqlite' ? createUserRepository(engine) : createPgUserRepository(engine);
  return { engine: { close }, users };
}

test('first start without ADMIN_* creates admin@example.com with a generated password announced once', async () => {
  const { engine, users } = await emptyUsers();
  try {
    const announced: string[] = [];
    const now = new Date('2026-11-20T12:00:00.000Z');
    await ensureFirstAdmin(users, NO_ADMIN, now, (text) => announced.push(text));

    const all = await users.listUsers();
    assert.equal(all.length, 1);
    const [admin] = all;
    assert.deepEqual({ ...admin, id: undefined }, {
      id: undefined,
      fullName: 'Administrator',
      email: 'admin@example.com',
      role: 'admin',
      isActive: true,
      createdAt: now.toISOString(),
    });
    assert.equal(announced.length, 1);
    assert.match(announced[0]!, /admin@example\.com/);
    const password = /password (\S+)/.exec(announced[0]!)?.[1];
    assert.ok(password, `no password in: ${announced[0]}`);
    assert.ok(password.length >= 8);
    const stored = await users.findCredentials('admin@example.com');
    assert.ok(stored);
    assert.ok(stored.passwordHash.startsWith('scrypt$32768$8$3$'), `not hashed at the production cost: ${stored.passwordHash}`);
    assert.equal(await verifyPassword(password, stored.passwordHash), true, 'the announced password does not match');
  } finally {
    await engine.close();
  }
});

test('first start with ADMIN_EMAIL / ADMIN_PASSWORD / ADMIN_NAME creates that admin and never prints the password', async () => {
  const { engine, users } = await emptyUsers();
  try {
    const announced: string[] = [];
    const password = 'chosen admin password';
    const announce = (text: string) => announced.push(text);
    await ensureFirstAdmin(users, { email: ' Boss@Example.COM ', password, name: 'The Boss' }, new Date(), announce, TEST_PASSWORD_COST);

    const all = await users.listUsers();
    assert.equal(all.length, 1);
    assert.equal(all[0]!.email, 'boss@example.com');
    assert.equal(all[0]!.fullName, 'The Boss');
    assert.equal(all[0]!.role, 'admin');
    assert.equal(all[0]!.isActive, true);
    assert.ok(announced.every((text) => !text.includes(password)), `the password was announced: ${announced.join('')}`);
    const stored = await users.findCredentials('boss@example.com');
    assert.ok(stored);
    assert.equal(await verifyPassword(password, stored.passwordHash), true);
  } finally {
    await engine.close();
  }
});

test('first start does nothing when users exist', async () => {
  const { engine, users } = await emptyUsers();
  try {
    const existing = await users.insertUser({ email: 'someone@example.com', fullName: 'Someone', role: 'lifecycle_marketer', passwordHash: 'x' }, new Date());
    const announced: string[] = [];
    await ensureFirstAdmin(users, NO_ADMIN, new Date(), (text) => announced.push(text));
    await ensureFirstAdmin(users, { email: 'boss@example.com', password: 'chosen admin password', name: 'Boss' }, new Date(), (text) =>
      announced.push(text),
    );
    assert.deepEqual(await users.listUsers(), [existing]);
    assert.deepEqual(announced, []);
  } finally {
    await engine.close();
  }
});

test('first start with a bad ADMIN_EMAIL or ADMIN_PASSWORD is a ConfigError naming it, and creates nobody', async () => {
  const { engine, users } = await emptyUsers();
  try {
    await assert.rejects(ensureFirstAdmin(users, { ...NO_ADMIN, email: 'not-an-email' }, new Date(), () => {}), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /^ADMIN_EMAIL\b/);
      return true;
    });
    await assert.rejects(ensureFirstAdmin(users, { ...NO_ADMIN, password: 'short' }, new Date(), () => {}), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /^ADMIN_PASSWORD\b/);
      return true;
    });
    assert.equal(await users.countUsers(), 0);
  } finally {
    await engine.close();
  }
});
