// The change source of the customer subsystem (src/customers/change-feed.ts): the contract any implementation keeps
// (support/change-source-contract.ts, run here on the in-process feed over SQLite and by pg/change-feed.test.ts on
// the PostgreSQL change log), then how the store publishes to it, and another process's writes reaching the counts.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { bulkInsertCustomers, openCustomers } from '../src/customers/index.ts';
import { openDatabase } from '../src/db/database.ts';
import { openSqliteEngine } from '../src/db/engine.ts';
import { startService } from './helpers.ts';
import { segmentCount } from './support/aggregates.ts';
import { createCustomer, customerRow } from './support/customers.ts';
import { changeSourceContract, type Harness } from './support/change-source-contract.ts';
import { tempDir } from './support/temp-dir.ts';

/** The SQLite change feed of a fresh database; another process writes through a connection of its own. */
function sqliteFeed(): Harness {
  const engine = openSqliteEngine(join(tempDir('campaigns-changes-'), 'changes.db'));
  const { feed } = openCustomers(engine);
  return {
    source: feed,
    async writeByAnother() {
      const other = new Database(engine.db.name);
      other
        .prepare(`INSERT INTO meta (key, value) VALUES ('customers_generation', 1) ON CONFLICT (key) DO UPDATE SET value = value + 1`)
        .run();
      other.close();
    },
    close: () => engine.close(),
  };
}

changeSourceContract('CustomerChangeFeed on SQLite', sqliteFeed);

test('the store publishes each committed write with the generation it committed, in commit order', async () => {
  const engine = openSqliteEngine(join(tempDir('campaigns-changes-'), 'store.db'));
  try {
    const { store, feed } = openCustomers(engine);
    const heard: { ids: (number | undefined)[]; generation: number }[] = [];
    feed.subscribe((changes, generation) => heard.push({ ids: changes.map((c) => (c.after ?? c.before)?.id), generation }));
    const record = (n: number) => ({
      name: `Feed ${n}`,
      email: `feed${n}@changes.example.com`,
      country: 'France',
      totalTransactions: 1,
      amountCents: 100,
      lastActivityAt: Date.parse('2026-11-01T00:00:00Z'),
      status: 'active' as const,
    });
    // Started together: each is told in the order it committed, never a later generation before an earlier one.
    const inserted = await Promise.all([1, 2, 3].map((n) => store.insertCustomers([record(n)], new Date())));
    const [a, b, c] = inserted.map(([id]) => id!);
    await Promise.all([store.updateCustomer(a!, { name: 'Renamed' }, new Date()), store.deleteCustomer(b!), store.updateCustomer(c!, { name: 'Renamed too' }, new Date())]);
    const generations = heard.map((h) => h.generation);
    const first = generations[0]!;
    assert.deepEqual(generations, [0, 1, 2, 3, 4, 5].map((i) => first + i));
    assert.deepEqual(
      heard.map((h) => h.ids),
      [a, b, c, a, b, c].map((id) => [Number(id)]),
    );
    assert.equal(feed.generation(), generations.at(-1));
  } finally {
    await engine.close();
  }
});

// The service's readers (the audience index) hearing another process's writes, over HTTP.
const NOW_MS = Date.parse('2026-11-20T12:00:00.000Z'); // TestClock's default
const DAY_MS = 86_400_000;
const country = (value: string) => ({ field: 'country', operator: 'eq', value });
const tx = (operator: string, value: number) => ({ field: 'totalTransactions', operator, value });
const amount = (operator: string, value: number) => ({ field: 'totalAmountSpent', operator, value });
const days = (operator: string, value: number) => ({ field: 'lastActivityDays', operator, value });

// Another process writing the same SQLite file (its own connection, the generation in `meta`); PostgreSQL's other
// writers are other instances, whose changes arrive through the change log (test/pg/change-feed.test.ts).
test('customers inserted by another process are noticed: the next preview counts them', async (t) => {
  const service = await startService();
  t.after(() => service.close());
  const lead = await service.tokenFor('marketing_lead');
  const preview = (conditions: unknown[]) => segmentCount(service, lead, conditions);
  const before = await preview([tx('gte', 0)]);
  assert.equal(await preview([country('Elsewhere')]), 0);

  const other = openDatabase(service.config.databasePath);
  try {
    const inserted = bulkInsertCustomers(
      other,
      [1, 2, 3].map((n) => ({
        name: `Outside ${n}`,
        email: `outside${n}@other.example.com`,
        country: 'Elsewhere',
        totalTransactions: 100 + n,
        amountCents: 12_345,
        lastActivityAt: NOW_MS - n * DAY_MS,
        status: 'active' as const,
      })),
      new Date(NOW_MS),
    );
    assert.equal(inserted, 3);
  } finally {
    other.close();
  }
  assert.equal(await preview([country('elsewhere')]), 3);
  assert.equal(await preview([tx('gte', 0)]), before + 3);
  assert.equal(await preview([amount('gte', 123.45), amount('lte', 123.45), days('lte', 2)]), 2);

  // Another process writes, then this one writes before any count: both are counted.
  const again = openDatabase(service.config.databasePath);
  try {
    bulkInsertCustomers(
      again,
      [{ name: 'Outside 4', email: 'outside4@other.example.com', country: 'Elsewhere', totalTransactions: 7, amountCents: 1, lastActivityAt: NOW_MS, status: 'inactive' as const }],
      new Date(NOW_MS),
    );
  } finally {
    again.close();
  }
  await createCustomer(service, lead, customerRow({ country: 'Elsewhere', totalTransactions: 8 }));
  assert.equal(await preview([country('Elsewhere')]), 5);
  assert.equal(await preview([country('Elsewhere'), tx('lt', 100)]), 2);

  // A delete by another process that moves the generation on, as every customer write must.
  const raw = new Database(service.config.databasePath);
  try {
    raw.transaction(() => {
      raw.prepare("DELETE FROM customers WHERE email IN ('outside1@other.example.com', 'outside2@other.example.com')").run();
      raw.prepare("UPDATE meta SET value = value + 1 WHERE key = 'customers_generation'").run();
    }).immediate();
  } finally {
    raw.close();
  }
  assert.equal(await preview([country('Elsewhere')]), 3);
  assert.equal(await preview([country('Elsewhere'), tx('gt', 100)]), 1);
});
