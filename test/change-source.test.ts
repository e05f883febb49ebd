// The change source of the customer subsystem (src/customers/change-feed.ts): the contract any implementation keeps
// (support/change-source-contract.ts, run here on the in-process feed over SQLite and by pg/change-feed.test.ts on
// the PostgreSQL change log), then how the store publishes to it.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { openCustomers } from '../src/customers/index.ts';
import { openSqliteEngine } from '../src/db/engine.ts';
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
