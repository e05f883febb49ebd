// The users, refresh tokens and idempotency keys on PostgreSQL (src/db/postgres/), against the real server
// `npm run test:pg` starts (TEST_DATABASE_URL), in a database of their own. Besides the behaviours of the SQLite
// repositories, the races PostgreSQL's concurrency exposes, run for real: two engines on one database stand for two
// instances of the service, and the racing calls are all started before any is awaited.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { AppError } from '../../src/domain/errors.ts';
import type { PostgresEngine } from '../../src/db/pg-engine.ts';
import { createPgIdempotencyKeyRepository } from '../../src/db/postgres/idempotency-keys.ts';
import { createPgRefreshTokenRepository } from '../../src/db/postgres/refresh-tokens.ts';
import { createPgUserRepository } from '../../src/db/postgres/users.ts';
import type { Role } from '../../src/domain/auth-user.ts';
import { freshInstances } from '../support/postgres.ts';

const DAY = 86_400;
const now = new Date('2026-03-01T12:00:00.000Z');
const later = (seconds: number) => new Date(now.getTime() + seconds * 1000);

let engines: PostgresEngine[] = [];
let users: ReturnType<typeof createPgUserRepository>[];
let tokens: ReturnType<typeof createPgRefreshTokenRepository>[];

before(async () => {
  // A database of this file's own, so that its users and admins are only the ones it makes.
  engines = await freshInstances('accounts');
  users = engines.map(createPgUserRepository);
  tokens = engines.map(createPgRefreshTokenRepository);
});
after(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

/** Calls `call` `n` times at once, alternating between the two instances, and waits for every outcome. */
function race<T>(n: number, call: (instance: number) => Promise<T>): Promise<PromiseSettledResult<T>[]> {
  return Promise.allSettled(Array.from({ length: n }, (_, i) => call(i % 2)));
}

const sql = () => engines[0]!.sql;

async function newUser(role: Role = 'lifecycle_marketer', email = `${randomUUID()}@example.com`) {
  return users[0]!.insertUser({ email, fullName: 'Some One', role, passwordHash: 'scrypt$hash' }, now);
}

/** Deactivates every active admin but `keep`, so that a test knows exactly which admins there are. */
async function onlyAdmins(...keep: string[]): Promise<void> {
  await sql()`UPDATE users SET is_active = 0 WHERE role = 'admin' AND is_active = 1 AND NOT (id = ANY(${keep}))`;
}

const activeAdmins = async () =>
  (await sql()<{ id: string }[]>`SELECT id FROM users WHERE role = 'admin' AND is_active = 1 ORDER BY id`).map((r) => r.id);

const isConflict = (error: unknown) => error instanceof AppError && error.code === 'conflict';

test('users: stored, found by id and email, listed oldest first, counted', async () => {
  const before = await users[0]!.countUsers();
  const first = await newUser('admin', `First-${randomUUID()}@example.com`.toLowerCase());
  assert.deepEqual(Object.keys(first).sort(), ['createdAt', 'email', 'fullName', 'id', 'isActive', 'role']);
  assert.equal(first.createdAt, now.toISOString(), 'an instant comes back as the same instant');
  assert.equal(first.isActive, true);
  assert.deepEqual(await users[1]!.findUser(first.id), first);
  assert.equal(await users[0]!.findUser(randomUUID()), undefined);
  assert.deepEqual(await users[0]!.findCredentials(first.email), { user: first, passwordHash: 'scrypt$hash' });
  assert.equal(await users[0]!.findCredentials('nobody@example.com'), undefined);
  const second = await users[0]!.insertUser({ email: `${randomUUID()}@example.com`, fullName: 'Later', role: 'marketing_lead', passwordHash: 'h' }, later(1));
  assert.equal(await users[0]!.countUsers(), before + 2);
  const listed = await users[0]!.listUsers();
  assert.equal(listed.length, before + 2);
  const sorted = [...listed].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || (a.id < b.id ? -1 : 1));
  assert.deepEqual(listed, sorted, 'oldest first, then by id');
  assert.deepEqual(listed.at(-1), second);
});

test('users: a taken email is a conflict, also when two inserts of it race', async () => {
  const taken = await newUser();
  await assert.rejects(newUser('admin', taken.email), (e: unknown) => isConflict(e) && (e as Error).message === `A user with the email ${taken.email} already exists.`);
  const email = `${randomUUID()}@example.com`;
  const outcomes = await race(10, (i) => users[i]!.insertUser({ email, fullName: 'Racer', role: 'admin', passwordHash: 'h' }, now));
  assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
  assert.ok(outcomes.every((o) => o.status === 'fulfilled' || isConflict(o.reason)));
  const [row] = await sql()<{ n: number }[]>`SELECT count(*)::integer AS n FROM users WHERE email = ${email}`;
  assert.equal(row!.n, 1);
});

test('users: an update applies only the given changes; an unknown id is not_found', async () => {
  const user = await newUser();
  const updated = await users[0]!.updateUser(user.id, { fullName: 'New Name' }, later(5));
  assert.deepEqual(updated, { ...user, fullName: 'New Name' });
  const promoted = await users[1]!.updateUser(user.id, { role: 'marketing_lead', passwordHash: 'new$hash' }, later(6));
  assert.deepEqual(promoted, { ...updated, role: 'marketing_lead' });
  assert.equal((await users[0]!.findCredentials(user.email))!.passwordHash, 'new$hash');
  const id = randomUUID();
  await assert.rejects(users[0]!.updateUser(id, { fullName: 'x' }, now), (e: unknown) => e instanceof AppError && e.code === 'not_found' && e.message === `No user with id ${id}.`);
});

test('users: the last active admin can be neither demoted nor deactivated; deactivating revokes the refresh tokens', async () => {
  const admin = await newUser('admin');
  await onlyAdmins(admin.id);
  const last = 'This is the last active admin; make another user admin first.';
  await assert.rejects(users[0]!.updateUser(admin.id, { role: 'lifecycle_marketer' }, now), (e: unknown) => isConflict(e) && (e as Error).message === last);
  await assert.rejects(users[0]!.updateUser(admin.id, { isActive: false }, now), isConflict);
  assert.deepEqual(await activeAdmins(), [admin.id], 'the refused update changed nothing');

  const other = await newUser('admin');
  const token = await tokens[0]!.startFamily(admin.id, now, DAY);
  const deactivated = await users[0]!.updateUser(admin.id, { isActive: false }, later(1));
  assert.equal(deactivated.isActive, false);
  assert.deepEqual(await activeAdmins(), [other.id]);
  const [row] = await sql()<{ revoked_reason: string }[]>`SELECT revoked_reason FROM refresh_tokens WHERE user_id = ${admin.id}`;
  assert.equal(row!.revoked_reason, 'deactivated');
  assert.deepEqual(await tokens[0]!.exchangeToken(token, later(2), DAY), { ok: false });
});

test('race: two demotions of the last two admins at once leave one admin, and the other is a conflict', async () => {
  // Several rounds, as one round may happen not to interleave.
  for (let round = 0; round < 20; round++) {
    const a = await newUser('admin');
    const b = await newUser('admin');
    await onlyAdmins(a.id, b.id);
    const outcomes = await Promise.allSettled([
      users[0]!.updateUser(a.id, { role: 'marketing_lead' }, now),
      users[1]!.updateUser(b.id, round % 2 === 0 ? { isActive: false } : { role: 'lifecycle_marketer' }, now),
    ]);
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1, `round ${round}: exactly one demotion passes`);
    const refused = outcomes.find((o) => o.status === 'rejected');
    assert.ok(refused && isConflict(refused.reason), `round ${round}: the other is a conflict, not ${String(refused?.reason)}`);
    assert.equal((await activeAdmins()).length, 1, `round ${round}: one active admin is left`);
  }
});

test('refresh tokens: exchanged once for a new one; a reuse revokes the family; bad tokens are refused', async () => {
  const user = await newUser();
  const first = await tokens[0]!.startFamily(user.id, now, DAY);
  assert.match(first, /^[A-Za-z0-9_-]{43}$/);
  const exchanged = await tokens[1]!.exchangeToken(first, later(1), DAY);
  assert.ok(exchanged.ok);
  assert.equal(exchanged.userId, user.id);
  const second = await tokens[0]!.exchangeToken(exchanged.refreshToken, later(2), DAY);
  assert.ok(second.ok);
  assert.deepEqual(await tokens[0]!.exchangeToken(first, later(3), DAY), { ok: false }, 'a reused token');
  assert.deepEqual(await tokens[0]!.exchangeToken(second.refreshToken, later(4), DAY), { ok: false }, 'its family was revoked');
  const reasons = await sql()<{ revoked_reason: string }[]>`SELECT revoked_reason FROM refresh_tokens WHERE user_id = ${user.id} ORDER BY created_at`;
  assert.deepEqual(reasons.map((r) => r.revoked_reason), ['exchanged', 'exchanged', 'reused']);

  assert.deepEqual(await tokens[0]!.exchangeToken('not a token', now, DAY), { ok: false });
  assert.deepEqual(await tokens[0]!.exchangeToken('A'.repeat(43), now, DAY), { ok: false });
  const expiring = await tokens[0]!.startFamily(user.id, now, 60);
  assert.deepEqual(await tokens[0]!.exchangeToken(expiring, later(60), DAY), { ok: false }, 'expired');
});

test('refresh tokens: revoking is for the owner only; a sign-in drops long-expired tokens', async () => {
  const user = await newUser();
  const stranger = await newUser();
  const token = await tokens[0]!.startFamily(user.id, now, DAY);
  await tokens[0]!.revokeToken(token, stranger.id, now);
  await tokens[0]!.revokeToken('short', user.id, now);
  const kept = await tokens[0]!.exchangeToken(token, later(1), DAY);
  assert.ok(kept.ok, "another user's revocation was a no-op");
  await tokens[1]!.revokeToken(kept.refreshToken, user.id, later(2));
  assert.deepEqual(await tokens[0]!.exchangeToken(kept.refreshToken, later(3), DAY), { ok: false });

  await tokens[0]!.startFamily(user.id, later(3 * DAY), DAY);
  const [row] = await sql()<{ n: number }[]>`SELECT count(*)::integer AS n FROM refresh_tokens WHERE user_id = ${user.id}`;
  assert.equal(row!.n, 1, 'the tokens that expired over a day earlier were dropped');
});

test('race: 20 exchanges of one refresh token at once: exactly one succeeds, and the family is revoked', async () => {
  const user = await newUser();
  const token = await tokens[0]!.startFamily(user.id, now, DAY);
  const outcomes = await race(20, (i) => tokens[i]!.exchangeToken(token, later(1), DAY));
  const results = outcomes.map((o) => (o.status === 'fulfilled' ? o.value : assert.fail(String(o.reason))));
  const winners = results.filter((r) => r.ok);
  assert.equal(winners.length, 1, 'exactly one exchange succeeds');
  const [winner] = winners as { ok: true; refreshToken: string }[];
  assert.deepEqual(await tokens[0]!.exchangeToken(winner!.refreshToken, later(2), DAY), { ok: false }, 'the reuse revoked the new token too');
  const rows = await sql()<{ revoked_reason: string | null }[]>`SELECT revoked_reason FROM refresh_tokens WHERE user_id = ${user.id}`;
  assert.equal(rows.length, 2, 'one new token, not several');
  assert.ok(rows.every((r) => r.revoked_reason !== null), 'no token of the family is usable');
});

test('race: a reuse of an old token while the newest is exchanged leaves no usable token in the family', async () => {
  // Without the family's lock, the revocation could miss the token the exchange adds meanwhile. Several rounds.
  for (let round = 0; round < 20; round++) {
    const user = await newUser();
    const old = await tokens[0]!.startFamily(user.id, now, DAY);
    const newest = await tokens[0]!.exchangeToken(old, later(1), DAY);
    assert.ok(newest.ok);
    const [reuse, exchange] = await Promise.all([tokens[0]!.exchangeToken(old, later(2), DAY), tokens[1]!.exchangeToken(newest.refreshToken, later(2), DAY)]);
    assert.deepEqual(reuse, { ok: false });
    const active = await sql()<{ n: number }[]>`SELECT count(*)::integer AS n FROM refresh_tokens WHERE user_id = ${user.id} AND revoked_at IS NULL`;
    assert.equal(active[0]!.n, 0, `round ${round}: the family is revoked (the exchange ${exchange.ok ? 'ran first' : 'came after'})`);
  }
});

test('idempotency keys: claimed, running, mismatch, replay after completion, claimable again after release', async () => {
  const keys = createPgIdempotencyKeyRepository(engines[0]!, 'process-a');
  const user = randomUUID();
  let marked = 0;
  const claim = (key: string, hash = 'h1', at = now) => keys.claimKey(user, key, 'POST /things', hash, at, 60_000, () => marked++);
  assert.deepEqual(await claim('k1'), { kind: 'claimed' });
  assert.equal(marked, 1, 'onClaimed ran with the claim');
  assert.deepEqual(await claim('k1'), { kind: 'running' });
  assert.deepEqual(await claim('k1', 'h2'), { kind: 'mismatch' });
  await keys.completeKey(user, 'k1', 201, '{"id":1}');
  assert.deepEqual(await claim('k1'), { kind: 'replay', status: 201, body: '{"id":1}' });
  assert.deepEqual(await claim('k1', 'h2'), { kind: 'mismatch' });

  assert.deepEqual(await claim('k2'), { kind: 'claimed' });
  await keys.releaseKey(user, 'k2');
  assert.deepEqual(await claim('k2'), { kind: 'claimed' });
  assert.deepEqual(await claim('k1', 'h1', new Date(now.getTime() + 60_000)), { kind: 'claimed' }, 'an expired key was swept');
  assert.equal(marked, 4);
});

test("idempotency keys: another process's marker is taken over; its completion and release then do nothing", async () => {
  const a = createPgIdempotencyKeyRepository(engines[0]!, 'process-a');
  const b = createPgIdempotencyKeyRepository(engines[1]!, 'process-b');
  const user = randomUUID();
  const claim = (keys: typeof a) => keys.claimKey(user, 'k', 'POST /things', 'h', now, 60_000, () => {});
  assert.deepEqual(await claim(a), { kind: 'claimed' });
  assert.deepEqual(await claim(b), { kind: 'claimed' });
  await a.completeKey(user, 'k', 200, 'stale');
  await a.releaseKey(user, 'k');
  assert.deepEqual(await claim(b), { kind: 'running' });
  await b.completeKey(user, 'k', 200, 'fresh');
  assert.deepEqual(await claim(a), { kind: 'replay', status: 200, body: 'fresh' });
});

test('race: 20 claims of one idempotency key at once: exactly one claimant, the others find it running', async () => {
  const keys = engines.map((e) => createPgIdempotencyKeyRepository(e, 'one-process'));
  const user = randomUUID();
  let marked = 0;
  const outcomes = await race(20, (i) => keys[i]!.claimKey(user, 'k', 'POST /things', 'h', now, 60_000, () => marked++));
  const kinds = outcomes.map((o) => (o.status === 'fulfilled' ? o.value.kind : assert.fail(String(o.reason))));
  assert.equal(kinds.filter((k) => k === 'claimed').length, 1);
  assert.equal(kinds.filter((k) => k === 'running').length, 19);
  assert.equal(marked, 1);
});

test('race: instances starting at once on an empty database store one first admin', async () => {
  const empty = await freshInstances('first_user', 3);
  try {
    const repositories = empty.map(createPgUserRepository);
    // Connections open first, so that the three transactions really run at once.
    await Promise.all(empty.map((e) => e.sql`SELECT 1`));
    const made = await Promise.all(
      repositories.map((r, i) => r.insertFirstUser({ email: `admin${i}@example.com`, fullName: 'Admin', role: 'admin', passwordHash: 'x' }, now)),
    );
    assert.equal(made.filter((user) => user !== undefined).length, 1, 'one of the three stored its admin');
    assert.equal(await repositories[0]!.countUsers(), 1);
    assert.equal(await repositories[1]!.insertFirstUser({ email: 'late@example.com', fullName: 'Late', role: 'admin', passwordHash: 'x' }, now), undefined);
  } finally {
    await Promise.all(empty.map((e) => e.close()));
  }
});
