// The change source of the customer subsystem (src/customers/change-feed.ts): the contract any implementation keeps
// (today's in-process feed over SQLite; the PostgreSQL change log will run the same checks), then how the store
// publishes to it.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { openCustomers, type ChangeSource, type CustomerChange } from '../src/customers/index.ts';
import { openSqliteEngine } from '../src/db/engine.ts';
import { tempDir } from './support/temp-dir.ts';

/** A change source under test, and a customer write committed by another process (or instance) of the service. */
interface Harness {
  source: ChangeSource;
  writeByAnother(): Promise<void>;
  close(): Promise<void>;
}

/** Lets the event loop run a few turns: what a promise that is not blocked would need to settle. */
const turnsOfTheLoop = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** Whether `promise` has settled once the loop has turned a few times. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await turnsOfTheLoop();
  return done;
}

/** The checks every implementation of ChangeSource must pass. */
function changeSourceContract(name: string, open: () => Harness): void {
  describe(`ChangeSource contract: ${name}`, () => {
    test('subscribers hear every published write, in order, with its generation; one that stopped hears no more', async () => {
      const { source, close } = open();
      try {
        const heard: [CustomerChange[], number][] = [];
        const stopped: number[] = [];
        source.subscribe((changes, generation) => heard.push([changes, generation]));
        const stop = source.subscribe((_, generation) => stopped.push(generation));
        const first: CustomerChange[] = [];
        const second: CustomerChange[] = [];
        source.publish(first, 7);
        stop();
        source.publish(second, 8);
        assert.equal(heard.length, 2);
        assert.equal(heard[0]![0], first, 'the changes as published');
        assert.equal(heard[1]![0], second);
        assert.deepEqual(heard.map(([, generation]) => generation), [7, 8]);
        assert.deepEqual(stopped, [7]);
      } finally {
        await close();
      }
    });

    test('the generation is the committed one, moved by writes of other processes too', async () => {
      const { source, writeByAnother, close } = open();
      try {
        const before = source.generation();
        await writeByAnother();
        assert.equal(source.generation(), before + 1);
        await writeByAnother();
        assert.equal(source.generation(), before + 2);
      } finally {
        await close();
      }
    });

    test('a write handed elsewhere is counted until it ends, each end counted once', async () => {
      const { source, close } = open();
      try {
        assert.equal(source.writingElsewhere(), false);
        const endFirst = source.beginWriteElsewhere();
        const endSecond = source.beginWriteElsewhere();
        assert.equal(source.writingElsewhere(), true);
        endFirst();
        endFirst();
        assert.equal(source.writingElsewhere(), true, 'ending one write twice does not end the other');
        endSecond();
        assert.equal(source.writingElsewhere(), false);
      } finally {
        await close();
      }
    });

    test('nextChange resolves at the next publish, or when a write handed elsewhere ends, and not before', async () => {
      const { source, close } = open();
      try {
        const published = source.nextChange();
        assert.equal(await settled(published), false, 'nothing happened yet');
        source.publish([], 1);
        assert.equal(await settled(published), true);

        const end = source.beginWriteElsewhere();
        const ended = source.nextChange();
        assert.equal(await settled(ended), false);
        end();
        assert.equal(await settled(ended), true);
      } finally {
        await close();
      }
    });
  });
}

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
