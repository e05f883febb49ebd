// The customer change feed on PostgreSQL (src/customers/postgres/change-feed.ts) and the audience index fed by it,
// against the real server `npm run test:pg` starts. Two engines on one database stand for two instances of the
// service; customers are written with plain SQL, so what the feed sees is what the triggers on customers log.
import { AudienceIndex, PgAudienceSource, PgChangeFeed } from '../../src/customers/index.ts';
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { CustomerChange } from '../../src/customers/index.ts';
import { compileConditions, type Condition } from '../../src/domain/segments.ts';
import type { PostgresEngine } from '../../src/db/pg-engine.ts';
import { changeSourceContract } from '../support/change-source-contract.ts';
import { freshInstances } from '../support/postgres.ts';

const ACTIVITY = Date.parse('2026-11-01T00:00:00Z');

const opened: { close(): Promise<void> }[] = [];
after(async () => {
  // Feeds before engines: a feed's catch-up under way ends on its engine.
  for (const thing of opened.splice(0).reverse()) await thing.close();
});

/** A fresh database and `n` engines on it (instances), closed after the tests. */
async function instances(n = 2): Promise<PostgresEngine[]> {
  const engines = await freshInstances('feed', n);
  opened.push(...engines);
  return engines;
}

/** A started change feed on `engine` (no pruning on a timer), closed after the tests. */
async function startedFeed(engine: PostgresEngine, options: ConstructorParameters<typeof PgChangeFeed>[1] = {}): Promise<PgChangeFeed> {
  const feed = new PgChangeFeed(engine, { pruneEvery: 0, ...options });
  await feed.start();
  opened.push(feed);
  return feed;
}

/** Inserts customers of `country` in one transaction (one generation); resolves to their ids. */
async function insertCustomers(engine: PostgresEngine, n: number, country = 'France', status = 'active'): Promise<number[]> {
  const rows = await engine.sql<{ id: number }[]>`
    INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
    SELECT 'Feed ' || i, gen_random_uuid() || '@feed.example.com', ${country}, lower(${country}), i, i * 100, ${ACTIVITY}, ${status}, 0, 0
    FROM generate_series(1, ${n}) AS i
    RETURNING id`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

/** The committed customers generation. */
async function committed(engine: PostgresEngine): Promise<number> {
  const [row] = await engine.sql<{ value: number }[]>`SELECT coalesce((SELECT value FROM meta WHERE key = 'customers_generation'), 0) AS value`;
  return row!.value;
}

/** Resolves once `feed` has published `generation`: told by a notification, as another instance's write is. */
async function published(feed: PgChangeFeed, generation: number): Promise<void> {
  while (feed.generation() < generation) await feed.nextChange();
}

/**
 * Commits a 'reload' row as a seed or a move does. With `unlogged`, first inserts customers with the triggers off
 * (what a bulk load does), so only a reload shows them.
 */
async function commitReload(engine: PostgresEngine, unlogged = 0): Promise<number> {
  return engine.write(async (tx) => {
    if (unlogged > 0) {
      await tx`SET LOCAL session_replication_role = replica`;
      await tx`
        INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
        SELECT 'Seeded ' || i, gen_random_uuid() || '@seed.example.com', 'Chile', 'chile', 1, 100, ${ACTIVITY}, 'active', 0, 0
        FROM generate_series(1, ${unlogged}) AS i`;
      await tx`SET LOCAL session_replication_role = origin`;
    }
    const [row] = await tx<{ value: number }[]>`
      INSERT INTO meta AS m (key, value) VALUES ('customers_generation', 1)
      ON CONFLICT (key) DO UPDATE SET value = m.value + 1 RETURNING value`;
    const generation = row!.value;
    await tx`INSERT INTO customer_changes (generation, op) VALUES (${generation}, 'reload')`;
    await tx`SELECT pg_notify('customer_changes', ${String(generation)})`;
    return generation;
  });
}

/** Counts with the audience index and with SQL, for the customers of `country` (or all). */
async function counts(audience: AudienceIndex, engine: PostgresEngine, country?: string): Promise<[number, number]> {
  const conditions: Condition[] = country ? [{ field: 'country', operator: 'eq', value: country }] : [];
  const counted = await audience.count(compileConditions(conditions, new Date(ACTIVITY)), ACTIVITY);
  const [row] = country
    ? await engine.sql<{ n: number }[]>`SELECT count(*) AS n FROM customers WHERE country_key = lower(${country})`
    : await engine.sql<{ n: number }[]>`SELECT count(*) AS n FROM customers`;
  return [counted, row!.n];
}

changeSourceContract('PgChangeFeed on PostgreSQL', async () => {
  const [one, two] = await freshInstances('contract', 2);
  const source = new PgChangeFeed(one!, { pruneEvery: 0 });
  await source.start();
  return {
    source,
    // A customer written by the other instance, published here when the notification arrives.
    async writeByAnother() {
      await insertCustomers(two!, 1);
      await published(source, await committed(two!));
    },
    async close() {
      await source.close();
      await Promise.all([one!.close(), two!.close()]);
    },
  };
});

describe('PgChangeFeed', () => {
  test("another instance's writes are published in generation order, each with what it changed", { timeout: 30_000 }, async () => {
    const [one, two] = await instances();
    const feed = await startedFeed(one!);
    const heard: [CustomerChange[], number][] = [];
    feed.subscribe((changes, generation) => heard.push([changes, generation]));
    const start = feed.generation();

    // Ten transactions at once on the other instance, then an update and a delete.
    const inserted = await Promise.all(Array.from({ length: 10 }, (_, i) => insertCustomers(two!, i + 1)));
    const [updated] = await two!.sql<{ id: number }[]>`
      UPDATE customers SET status = 'churned', amount_cents = 7 WHERE id = ${inserted[2]![0]!} RETURNING id`;
    await two!.sql`DELETE FROM customers WHERE id = ${inserted[3]![0]!}`;
    const end = await committed(two!);
    await published(feed, end);

    assert.equal(end, start + 12);
    assert.deepEqual(
      heard.map(([, generation]) => generation),
      Array.from({ length: 12 }, (_, i) => start + 1 + i),
      'every generation once, in order',
    );
    const insertedIds = heard.slice(0, 10).flatMap(([changes]) => changes.map((c) => c.after!.id));
    assert.deepEqual(insertedIds.sort((a, b) => a - b), inserted.flat().sort((a, b) => a - b));
    assert.ok(heard.slice(0, 10).every(([changes]) => changes.every((c) => c.before === undefined && c.after?.countryKey === 'france')));
    assert.deepEqual(heard[10]![0], [
      { before: undefined, after: { id: updated!.id, countryKey: 'france', status: 'churned', totalTransactions: 1, amountCents: 7, lastActivityAt: ACTIVITY } },
    ]);
    assert.deepEqual(heard[11]![0], [{ before: { id: inserted[3]![0]! }, after: undefined }]);
  });

  test('catchUp resolves once a write committed before it is published, without waiting for its notification', async () => {
    const [one, two] = await instances();
    const feed = await startedFeed(one!);
    await feed.close(); // stops listening: only catchUp can publish now
    const heard: number[] = [];
    feed.subscribe((changes) => heard.push(...changes.map((c) => c.after!.id)));
    const ids = await insertCustomers(two!, 3);
    await feed.catchUp();
    assert.equal(feed.generation(), await committed(two!));
    assert.deepEqual(heard, ids);
  });

  test('catchUp calls made while a read runs each resolve after the writes committed before them', async () => {
    const [one] = await instances(1);
    const feed = await startedFeed(one!);
    await feed.close();
    const checks: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      await insertCustomers(one!, 1);
      const due = await committed(one!);
      checks.push(feed.catchUp().then(() => assert.ok(feed.generation() >= due, `generation ${due} published`)));
    }
    await Promise.all(checks);
    assert.equal(feed.generation(), await committed(one!));
  });

  test("a 'reload' row makes subscribers reload instead of hearing changes", async () => {
    const [one, two] = await instances();
    const feed = await startedFeed(one!);
    const heard: number[] = [];
    feed.subscribe((_, generation) => heard.push(generation));
    const reloaded = new Promise<number>((resolve) => feed.onReload(resolve));
    const generation = await commitReload(two!);
    assert.equal(await reloaded, generation);
    assert.equal(feed.generation(), generation);
    assert.deepEqual(heard, [], 'a reload is no list of changes');
  });

  test('a reader the log was pruned past reloads; only the leader of change-log prunes', async () => {
    const [one, two] = await instances();
    const leader = await startedFeed(one!, { keepFor: 0 });
    const other = await startedFeed(two!, { keepFor: 0 });
    const behind = await startedFeed(two!);
    await behind.close(); // hears nothing: it stays behind until it catches up
    const reloads: number[] = [];
    behind.onReload((generation) => reloads.push(generation));

    await insertCustomers(one!, 2);
    await insertCustomers(one!, 3);
    await leader.catchUp();
    assert.equal(await leader.prune(), 5, 'the five rows of both generations');
    assert.equal(await other.prune(), 0, 'another instance leads change-log');
    const [left] = await one!.sql<{ n: number }[]>`SELECT count(*) AS n FROM customer_changes`;
    assert.equal(left!.n, 0);

    await behind.catchUp();
    assert.deepEqual(reloads, [await committed(one!)]);
    assert.equal(behind.generation(), await committed(one!));
  });

  test('the log keeps what was published within keepFor', async () => {
    const [one] = await instances(1);
    let now = 0;
    const feed = await startedFeed(one!, { keepFor: 60_000, clock: () => now });
    await insertCustomers(one!, 1);
    await feed.catchUp();
    assert.equal(await feed.prune(), 0, 'nothing published a minute ago yet');
    now = 30_000;
    await insertCustomers(one!, 1);
    await feed.catchUp();
    assert.equal(await feed.prune(), 0);
    now = 60_000;
    assert.equal(await feed.prune(), 1, 'what was published at 0 only');
  });
});

describe('AudienceIndex on PostgreSQL', () => {
  /** An instance's index over its feed. */
  const indexOn = (engine: PostgresEngine, feed: PgChangeFeed) => new AudienceIndex(new PgAudienceSource(engine, feed), feed);

  test('counts exactly after writes by its own instance (awaiting catchUp) and by another (told by NOTIFY)', async () => {
    const [one, two] = await instances();
    const feed = await startedFeed(one!);
    const audience = indexOn(one!, feed);
    await insertCustomers(one!, 4, 'France');
    await feed.catchUp();
    assert.deepEqual(await counts(audience, one!), [4, 4]);

    // Its own write: what a repository does, catching up before it answers.
    const [first] = await insertCustomers(one!, 2, 'Peru');
    await one!.sql`DELETE FROM customers WHERE id = ${first!}`;
    await feed.catchUp();
    assert.deepEqual(await counts(audience, one!, 'Peru'), [1, 1]);

    // Another instance's write.
    await insertCustomers(two!, 3, 'Peru');
    await two!.sql`UPDATE customers SET country = 'Japan', country_key = 'japan' WHERE country_key = 'france' AND total_transactions <= 2`;
    await published(feed, await committed(two!));
    assert.deepEqual(await counts(audience, one!, 'Peru'), [4, 4]);
    assert.deepEqual(await counts(audience, one!, 'France'), [2, 2]);
    assert.deepEqual(await counts(audience, one!, 'Japan'), [2, 2]);
    assert.deepEqual(await counts(audience, one!), [8, 8]);
  });

  test('writes committed while it loads are neither lost nor applied twice', { timeout: 30_000 }, async () => {
    const [one, two] = await instances();
    await insertCustomers(two!, 20_000, 'France');
    const feed = await startedFeed(one!);
    const audience = indexOn(one!, feed);
    // The first count loads; the other instance writes meanwhile, inserts, moves and deletes.
    const loading = counts(audience, one!);
    const writes = Promise.all([
      insertCustomers(two!, 50, 'Peru'),
      two!.sql`UPDATE customers SET country = 'Peru', country_key = 'peru' WHERE id % 7 = 0 AND country_key = 'france'`,
      two!.sql`DELETE FROM customers WHERE id % 11 = 0`,
      insertCustomers(two!, 5, 'Japan'),
    ]);
    await Promise.all([loading, writes]);
    await published(feed, await committed(two!));
    for (const country of [undefined, 'France', 'Peru', 'Japan']) {
      const [counted, stored] = await counts(audience, one!, country);
      assert.equal(counted, stored, `customers of ${country ?? 'every country'}`);
    }
  });

  test('a reload brings in customers the log never listed', async () => {
    const [one, two] = await instances();
    const feed = await startedFeed(one!);
    const audience = indexOn(one!, feed);
    await insertCustomers(one!, 2, 'Chile');
    await feed.catchUp();
    assert.deepEqual(await counts(audience, one!, 'Chile'), [2, 2]);
    const generation = await commitReload(two!, 5);
    await published(feed, generation);
    assert.deepEqual(await counts(audience, one!, 'Chile'), [7, 7]);
    // And it follows writes again after the reload.
    await insertCustomers(two!, 1, 'Chile');
    await published(feed, await committed(two!));
    assert.deepEqual(await counts(audience, one!, 'Chile'), [8, 8]);
  });
});
