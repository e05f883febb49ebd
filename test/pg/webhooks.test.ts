// The webhook endpoints and outbox on PostgreSQL (src/db/postgres/webhooks.ts, webhook-deliveries.ts), against the
// real server `npm run test:pg` starts (TEST_DATABASE_URL), in a database of this file's own. The same calls run on
// the SQLite repositories (a temp file) must answer the same, ids and seqs aside; then the races PostgreSQL exposes,
// run for real: two engines on one database stand for two instances, and racing calls all start before any is awaited.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openSqliteEngine, type SqliteEngine } from '../../src/db/engine.ts';
import type { PostgresEngine } from '../../src/db/pg-engine.ts';
import { createPgDeliveryRepository, type PgDeliveryRepository } from '../../src/db/postgres/webhook-deliveries.ts';
import { createPgWebhookRepository, type PgWebhookRepository } from '../../src/db/postgres/webhooks.ts';
import { createDeliveryRepository, type AttemptResult } from '../../src/db/webhook-deliveries.ts';
import { createWebhookRepository } from '../../src/db/webhooks.ts';
import { AppError } from '../../src/domain/errors.ts';
import type { EventType } from '../../src/domain/webhooks.ts';
import { tempDir } from '../support/temp-dir.ts';
import { freshInstances } from '../support/postgres.ts';

const now = new Date('2026-03-01T12:00:00.000Z');
const later = (ms: number) => new Date(now.getTime() + ms);

/** One engine's repositories, as PostgreSQL types them (SQLite's synchronous ones wrapped), and how to count rows. */
interface Side {
  write<T>(work: () => Promise<T>): Promise<T>;
  webhooks: PgWebhookRepository;
  deliveries: Omit<PgDeliveryRepository, 'releaseClaims'>;
  count(table: 'webhook_events' | 'webhook_deliveries'): Promise<number>;
  addUser(id: string, fullName: string): Promise<void>;
}

let sqlite: SqliteEngine;
let engines: PostgresEngine[] = [];
let hooks: PgWebhookRepository[] = [];
let outbox: PgDeliveryRepository[] = [];

before(async () => {
  engines = await freshInstances('webhooks');
  hooks = engines.map(createPgWebhookRepository);
  outbox = engines.map((engine, i) => createPgDeliveryRepository(engine, hooks[i]!));
  sqlite = openSqliteEngine(join(tempDir('campaigns-pg-webhooks-'), 'same.db'));
});
after(async () => {
  await Promise.all(outbox.map((o) => o.releaseClaims()));
  await Promise.all(engines.map((e) => e.close()));
  await sqlite.close();
});

const sql = () => engines[0]!.sql;

function pgSide(i = 0): Side {
  return {
    write: (work) => engines[i]!.write(work),
    webhooks: hooks[i]!,
    deliveries: outbox[i]!,
    count: async (table) => (await sql()<{ n: number }[]>`SELECT count(*) AS n FROM ${sql()(table)}`)[0]!.n,
    addUser: async (id, fullName) => {
      await sql()`INSERT INTO users (id, email, full_name, role, password_hash, created_at, updated_at)
        VALUES (${id}, ${`${id}@example.com`}, ${fullName}, 'admin', 'x', 0, 0)`;
    },
  };
}

function sqliteSide(): Side {
  const webhooks = createWebhookRepository(sqlite);
  const deliveries = createDeliveryRepository(sqlite, webhooks);
  const write = <T>(work: () => T) => sqlite.write(work);
  return {
    // SQLite's work is synchronous: the scenario's async work runs its joined calls as SQLite's, in one transaction.
    write: async (work) => work(),
    webhooks: {
      ...webhooks,
      subscribersIn: async (type) => write(() => webhooks.subscribersIn(type)),
      endpointIn: async (id) => write(() => webhooks.endpointIn(id)),
      disableWebhook: async (seq, reason, at) => write(() => webhooks.disableWebhook(seq, reason, at)),
    },
    deliveries: {
      ...deliveries,
      writeEventIn: async (event, seqs) => write(() => deliveries.writeEventIn(event, seqs)),
      userNameIn: async (id) => write(() => deliveries.userNameIn(id)),
    },
    count: async (table) => sqlite.db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${table}`).get()!.n,
    addUser: async (id, fullName) => {
      await write(() =>
        sqlite.db
          .prepare(`INSERT INTO users (id, email, full_name, role, password_hash, created_at, updated_at) VALUES (?, ?, ?, 'admin', 'x', 0, 0)`)
          .run(id, `${id}@example.com`, fullName),
      );
    },
  };
}

/** What rejects with an AppError answers: its code and message. */
async function failure(call: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof AppError, String(error));
    return { code: error.code, message: error.message.replace(/[0-9a-f-]{36}/g, 'ID') };
  }
  assert.fail('expected a rejection');
}

const event = (type: EventType, at = now) => ({ id: randomUUID(), type, body: JSON.stringify({ type, n: randomUUID() }), createdAt: at });

/**
 * Runs every function of both repositories on one side and returns what they answered, with the ids and seqs this
 * scenario made replaced by their order of appearance, so that both engines' answers compare.
 */
async function scenario(side: Side): Promise<unknown[]> {
  const { webhooks, deliveries } = side;
  const out: unknown[] = [];
  const userId = randomUUID();
  await side.addUser(userId, 'Ada Admin');

  const a = await webhooks.insertWebhook({ url: 'https://a.example/hook', events: ['campaign.status_changed', 'webhook.test'], description: 'A' }, 'whsec_a', now);
  const b = await webhooks.insertWebhook({ url: 'https://b.example/hook', events: ['campaign.status_changed'], description: undefined }, 'whsec_b', later(1));
  const c = await webhooks.insertWebhook({ url: 'https://c.example/hook', events: ['campaign.approved'], description: '' }, 'whsec_c', later(2));
  const [sa, sb, sc] = [await webhooks.seqOf(a.id), await webhooks.seqOf(b.id), await webhooks.seqOf(c.id)];
  const mine = new Set([sa, sb, sc]);
  out.push(a, b, c, await webhooks.getWebhook(b.id), (await webhooks.listWebhooks()).filter((w) => [a.id, b.id, c.id].includes(w.id)));
  out.push(await failure(webhooks.getWebhook('missing')), await failure(webhooks.seqOf('missing')));
  out.push(await failure(webhooks.updateWebhook('missing', { url: 'https://x.example/' }, now)), await failure(webhooks.rotateSecret('missing', 's', now, now)));
  out.push(await failure(webhooks.deleteWebhook('missing')), await failure(side.write(() => webhooks.endpointIn('missing'))));

  // Changes: the description kept, replaced, removed; events replaced.
  out.push(await webhooks.updateWebhook(a.id, { url: 'https://a2.example/hook' }, later(10)));
  out.push(await webhooks.updateWebhook(a.id, { description: 'A2', events: ['campaign.status_changed', 'campaign.approved', 'webhook.test'] }, later(11)));
  out.push(await webhooks.updateWebhook(c.id, { description: null }, later(12)));
  out.push(await webhooks.updateWebhook(b.id, { description: 'B' }, later(13)));
  out.push((await webhooks.enabledWebhooks()).filter((s) => mine.has(s)));
  out.push((await side.write(() => webhooks.subscribersIn('campaign.approved'))).filter((s) => mine.has(s)));
  out.push(await side.write(() => webhooks.endpointIn(b.id)));

  // Rotation: both secrets until the previous one expires, then only the new one.
  out.push(await webhooks.rotateSecret(a.id, 'whsec_a2', later(1000), later(20)));
  out.push(await webhooks.findTarget(sa, later(999)), await webhooks.findTarget(sa, later(1000)), await webhooks.findTarget(999_999, now));

  // The outbox: an event for the subscribers, written in a transaction with the user's name read in it.
  const first = event('campaign.status_changed', later(30));
  const ids = await side.write(async () => {
    const to = await webhooks.subscribersIn('campaign.status_changed');
    out.push(await deliveries.userNameIn(userId), await deliveries.userNameIn('nobody'));
    return deliveries.writeEventIn(first, to.filter((s) => mine.has(s)));
  });
  out.push(ids.length, await side.write(() => deliveries.writeEventIn(event('campaign.approved'), [])));
  const more = [];
  for (let i = 0; i < 4; i++) more.push(...(await side.write(() => deliveries.writeEventIn(event('webhook.test', later(40 + i)), [sa]))));
  out.push(await deliveries.getDelivery(ids[0]!), await failure(deliveries.getDelivery('missing')));
  out.push(await deliveries.listDeliveries(sa, 1, 2), await deliveries.listDeliveries(sa, 3, 2), await deliveries.listDeliveries(sa, 4, 2));
  out.push(await deliveries.dueDeliveries(sa, later(41), 10), await deliveries.dueDeliveries(sa, later(50), 2), await deliveries.dueDeliveries(sc, later(50), 10));
  out.push(await deliveries.findPending(more[3]!), await deliveries.findPending('missing'));

  // Attempts: a retry later, a success, a failure for good; then a 410 disables the endpoint and ends the rest.
  const retry: AttemptResult = { status: 'pending', responseStatus: 500, error: 'The endpoint answered 500.', nextAttemptAt: later(5000) };
  out.push(await deliveries.recordAttempt(more[0]!, sa, retry, later(60)));
  out.push(await deliveries.nextDueAfter(later(60)), await deliveries.nextDueAfter(later(5000)));
  out.push(await deliveries.recordAttempt(more[0]!, sa, { status: 'succeeded', responseStatus: 204, error: undefined, nextAttemptAt: undefined }, later(61)));
  out.push(await deliveries.recordAttempt(more[0]!, sa, retry, later(62)), 'no longer pending');
  out.push(await deliveries.recordAttempt(more[1]!, sa, { status: 'failed', responseStatus: undefined, error: 'Refused.', nextAttemptAt: undefined }, later(63)));
  const gone: AttemptResult = { status: 'failed', responseStatus: 410, error: 'Gone.', nextAttemptAt: undefined, disable: 'It answered 410.' };
  out.push(await deliveries.recordAttempt(more[2]!, sa, gone, later(64)));
  out.push(await webhooks.getWebhook(a.id), (await deliveries.listDeliveries(sa, 1, 10)).items);
  out.push(await webhooks.updateWebhook(a.id, { enabled: true }, later(70)), await webhooks.updateWebhook(b.id, { enabled: false }, later(71)));
  out.push(await webhooks.getWebhook(b.id), (await deliveries.listDeliveries(sb, 1, 10)).items);
  await side.write(() => webhooks.disableWebhook(sb, 'again', later(72))); // disabled already: nothing changes
  out.push(await webhooks.getWebhook(b.id));

  // Deleting: the endpoint's deliveries go, and the events no other endpoint receives.
  const events = await side.count('webhook_events');
  await webhooks.deleteWebhook(a.id);
  out.push(events - (await side.count('webhook_events')), await failure(webhooks.getWebhook(a.id)), (await deliveries.listDeliveries(sa, 1, 10)).total);
  await webhooks.deleteWebhook(b.id);
  out.push(events - (await side.count('webhook_events')), await failure(deliveries.getDelivery(ids[0]!)));
  return normalize(out, [a.id, b.id, c.id, ...ids, ...more], [sa, sb, sc]);
}

/** Replaces the ids and seqs given by names, event ids by their order of appearance. */
function normalize(out: unknown[], ids: string[], seqs: number[]): unknown[] {
  const events = new Map<string, string>();
  const text = JSON.stringify(out, (key, value: unknown) => {
    if (typeof value === 'number' && seqs.includes(value) && key !== 'attempt' && key !== 'responseStatus') return `seq${seqs.indexOf(value)}`;
    if (typeof value !== 'string') return value;
    if (ids.includes(value)) return `id${ids.indexOf(value)}`;
    if (key === 'eventId') return events.get(value) ?? (events.set(value, `event${events.size}`), events.get(value));
    if (key === 'body') return value.replace(/"n":"[^"]+"/, '"n":"N"');
    return value;
  });
  return JSON.parse(text) as unknown[];
}

test('every function answers as on SQLite: endpoints, rotation, the outbox, attempts, disabling and deleting', async () => {
  const onSqlite = await scenario(sqliteSide());
  const onPg = await scenario(pgSide());
  assert.deepEqual(onPg, onSqlite);
  assert.ok(onSqlite.length > 40, `${onSqlite.length} answers compared`);
});

/** A new enabled endpoint subscribed to everything, and its seq. */
async function endpoint(): Promise<{ id: string; seq: number }> {
  const all: EventType[] = ['campaign.status_changed', 'campaign.approved', 'customers.import_completed', 'webhook.test'];
  const { id } = await hooks[0]!.insertWebhook({ url: 'https://r.example/hook', events: all, description: undefined }, 'whsec_r', now);
  return { id, seq: await hooks[0]!.seqOf(id) };
}

/** Writes `n` events for the endpoint, one transaction each; returns their deliveries' ids. */
async function pending(seq: number, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(...(await engines[0]!.write(() => outbox[0]!.writeEventIn(event('webhook.test', later(i)), [seq]))));
  return ids;
}

const ok: AttemptResult = { status: 'succeeded', responseStatus: 200, error: undefined, nextAttemptAt: undefined };

test('an event written in a transaction that rolls back leaves no event and no delivery', async () => {
  const { seq } = await endpoint();
  const [events, deliveries] = [await pgSide().count('webhook_events'), await pgSide().count('webhook_deliveries')];
  const written: string[] = [];
  await assert.rejects(
    engines[0]!.write(async () => {
      const to = await hooks[0]!.subscribersIn('campaign.status_changed');
      assert.ok(to.includes(seq));
      written.push(...(await outbox[0]!.writeEventIn(event('campaign.status_changed'), to)));
      throw new Error('the move is refused');
    }),
    /the move is refused/,
  );
  assert.ok(written.length >= 1, 'the event was written before the rollback');
  assert.deepEqual([await pgSide().count('webhook_events'), await pgSide().count('webhook_deliveries')], [events, deliveries]);
  assert.equal(await outbox[0]!.findPending(written[0]!), undefined);
  assert.deepEqual(await outbox[0]!.dueDeliveries(seq, later(60_000), 10), []);
});

test('two dispatchers taking due deliveries at once never take the same one; a claim ends with its recorded attempt', async () => {
  const { seq } = await endpoint();
  const ids = await pending(seq, 30);
  for (let round = 0; round < 5; round++) {
    const [one, two] = await Promise.all([outbox[0]!.dueDeliveries(seq, later(60_000), 20), outbox[1]!.dueDeliveries(seq, later(60_000), 20)]);
    const taken = [...one, ...two].map((d) => d.id);
    assert.equal(new Set(taken).size, taken.length, `round ${round}: no delivery taken twice`);
    assert.deepEqual(new Set(taken), new Set(ids), 'together they take every due delivery (20 + 10)');
    // Each dispatcher asks again: it finds those it holds (it has them under way), never the other's.
    assert.deepEqual((await outbox[0]!.dueDeliveries(seq, later(60_000), 30)).map((d) => d.id), one.map((d) => d.id));
    assert.equal(await outbox[1]!.findPending(one[0]!.id), undefined, "the other's test send does not attempt it");
    await outbox[0]!.releaseClaims(); // as an instance that stops (or dies): its claims are free again
    await outbox[1]!.releaseClaims();
  }
  // Attempts recorded by one instance, then the other takes what is left, and nothing recorded.
  const [one] = await Promise.all([outbox[0]!.dueDeliveries(seq, later(60_000), 10)]);
  await Promise.all(one.map((d) => outbox[0]!.recordAttempt(d.id, seq, ok, later(1))));
  const rest = await outbox[1]!.dueDeliveries(seq, later(60_000), 30);
  assert.equal(rest.length, 20);
  assert.ok(rest.every((d) => !one.some((o) => o.id === d.id)));
  await Promise.all(rest.map((d) => outbox[1]!.recordAttempt(d.id, seq, ok, later(2))));
  assert.deepEqual(await outbox[0]!.dueDeliveries(seq, later(60_000), 30), []);
});

test('a claim ends with the session of the instance holding it: another instance attempts the delivery at once', async () => {
  const { seq } = await endpoint();
  const [id] = await pending(seq, 1);
  assert.equal((await outbox[0]!.findPending(id!))?.id, id);
  assert.equal(await outbox[1]!.findPending(id!), undefined);
  // The claiming session dies (a crashed instance, a cut connection).
  const claim = () => sql()`SELECT l.pid FROM pg_locks l JOIN webhook_deliveries d ON d.id = ${id!}
    WHERE l.locktype = 'advisory' AND l.classid = ${0x7768}::int::oid AND l.objid = d.seq::oid AND l.objsubid = 2 AND l.granted`;
  const [holder] = await claim();
  await sql()`SELECT pg_terminate_backend(${holder!.pid}::int)`;
  while ((await claim()).length > 0) await new Promise(setImmediate); // the backend exits a moment after the signal
  assert.equal((await outbox[1]!.findPending(id!))?.id, id, 'the other instance claims it');
  // The first instance no longer returns it as its own (its first call may fail with the lost connection).
  const due = () => outbox[0]!.dueDeliveries(seq, later(60_000), 10);
  assert.deepEqual(await due().catch(due), []);
  assert.equal(await outbox[1]!.recordAttempt(id!, seq, ok, later(1)), true);
  assert.equal((await outbox[0]!.getDelivery(id!)).attempt, 1);
});

test('attempts recorded at once are each counted; a 410 from several at once disables the endpoint once', async () => {
  const { id, seq } = await endpoint();
  const [one] = await pending(seq, 1);
  const retry: AttemptResult = { status: 'pending', responseStatus: 503, error: 'Busy.', nextAttemptAt: later(1000) };
  const results = await Promise.all(Array.from({ length: 12 }, (_, i) => outbox[i % 2]!.recordAttempt(one!, seq, retry, later(1))));
  assert.ok(results.every(Boolean));
  assert.equal((await outbox[0]!.getDelivery(one!)).attempt, 12);

  const ids = await pending(seq, 10);
  const gone: AttemptResult = { status: 'failed', responseStatus: 410, error: 'Gone.', nextAttemptAt: undefined, disable: 'It answered 410.' };
  const recorded = await Promise.all(ids.map((d, i) => outbox[i % 2]!.recordAttempt(d, seq, gone, later(2 + i))));
  const webhook = await hooks[0]!.getWebhook(id);
  assert.deepEqual([webhook.enabled, webhook.disabledReason], [false, 'It answered 410.']);
  const deliveries = await Promise.all(ids.map((d) => outbox[0]!.getDelivery(d)));
  assert.ok(deliveries.every((d) => d.status === 'failed'));
  // Each delivery has either its 410 recorded or was ended by the disabling, never both; the first 410 always records.
  assert.equal(deliveries.filter((d) => d.attempt === 1 && d.responseStatus === 410).length, recorded.filter(Boolean).length);
  assert.equal(deliveries.filter((d) => d.attempt === 0 && d.error === 'Not sent: the endpoint was disabled.').length, recorded.filter((r) => !r).length);
  assert.ok(recorded.some(Boolean));
  assert.equal((await outbox[0]!.getDelivery(one!)).status, 'failed', 'the retrying delivery was ended too');
});

test('rotations at once chain (none lost) and a delivery reading the endpoint meanwhile sees one secret pair', async () => {
  const { id, seq } = await endpoint();
  // Each change of the secrets, in the order the row took them.
  const log = `rotations_${randomUUID().replaceAll('-', '')}`;
  await sql().unsafe(`CREATE TABLE ${log} (n bigserial PRIMARY KEY, secret text, previous text)`);
  await sql().unsafe(`CREATE FUNCTION ${log}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    INSERT INTO ${log} (secret, previous) VALUES (NEW.secret, NEW.previous_secret); RETURN NEW; END $$`);
  await sql().unsafe(`CREATE TRIGGER ${log} AFTER UPDATE OF secret ON webhooks FOR EACH ROW WHEN (NEW.seq = ${seq}) EXECUTE FUNCTION ${log}()`);
  try {
    const secrets = Array.from({ length: 16 }, (_, i) => `whsec_${i}`);
    const seen: string[][] = [];
    await Promise.all([
      ...secrets.map((s, i) => hooks[i % 2]!.rotateSecret(id, s, later(86_400_000), later(1))),
      ...secrets.map(async () => seen.push((await hooks[1]!.findTarget(seq, later(2)))!.secrets)),
    ]);
    const chain = await sql().unsafe<{ secret: string; previous: string }[]>(`SELECT secret, previous FROM ${log} ORDER BY n`);
    assert.equal(chain.length, secrets.length);
    assert.deepEqual(new Set(chain.map((c) => c.secret)), new Set(secrets), 'every rotation applied once');
    chain.forEach((c, i) => assert.equal(c.previous, i === 0 ? 'whsec_r' : chain[i - 1]!.secret, 'each rotation moved the one before aside'));
    const pairs = new Set(['whsec_r', ...chain.map((c) => `${c.secret},${c.previous}`)]);
    for (const s of seen) assert.ok(pairs.has(s.join(',')), `${s.join(',')} was a state of the endpoint`);
    assert.deepEqual((await hooks[0]!.findTarget(seq, later(3)))!.secrets, [chain.at(-1)!.secret, chain.at(-1)!.previous]);
  } finally {
    await sql().unsafe(`DROP TRIGGER ${log} ON webhooks`);
  }
});

test('disabling an endpoint while an event for it is being written ends that delivery too', async () => {
  const { id, seq } = await endpoint();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let written!: () => void;
  const wrote = new Promise<void>((resolve) => (written = resolve));
  const move = engines[0]!.write(async () => {
    const to = await hooks[0]!.subscribersIn('campaign.approved');
    assert.ok(to.includes(seq));
    const ids = await outbox[0]!.writeEventIn(event('campaign.approved'), [seq]);
    written();
    await held; // the change's transaction still open
    return ids[0]!;
  });
  await wrote;
  const disabling = hooks[1]!.updateWebhook(id, { enabled: false }, later(1));
  // Wait until the disabling waits for a lock in this database (the change's on the endpoint), or has ended.
  let ended = false;
  void disabling.finally(() => (ended = true)).catch(() => {});
  const waiting = async () =>
    (await sql()<{ n: number }[]>`SELECT count(*) AS n FROM pg_locks
      WHERE NOT granted AND pid IN (SELECT pid FROM pg_stat_activity WHERE datname = current_database())`)[0]!.n;
  while (!ended && (await waiting()) === 0) await new Promise(setImmediate);
  release();
  const delivery = await move;
  assert.equal((await disabling).enabled, false);
  const after = await outbox[0]!.getDelivery(delivery);
  assert.deepEqual([after.status, after.error], ['failed', 'Not sent: the endpoint was disabled.']);
});

test('endpoints deleted at once that share an event leave no orphaned event', async () => {
  const [x, y] = [await endpoint(), await endpoint()];
  const events = await pgSide().count('webhook_events');
  await engines[0]!.write(() => outbox[0]!.writeEventIn(event('campaign.approved'), [x.seq, y.seq]));
  assert.equal(await pgSide().count('webhook_events'), events + 1);
  await Promise.all([hooks[0]!.deleteWebhook(x.id), hooks[1]!.deleteWebhook(y.id)]);
  assert.equal(await pgSide().count('webhook_events'), events);
});
