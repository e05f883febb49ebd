// The checks every implementation of ChangeSource (src/customers/change-feed.ts) must pass: run by
// test/change-source.test.ts on SQLite's in-process feed and by test/pg/change-feed.test.ts on PostgreSQL's change log.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ChangeSource, CustomerChange } from '../../src/customers/index.ts';

/** A change source under test, and a customer write committed by another process (or instance) of the service. */
export interface Harness {
  source: ChangeSource;
  /** Commits a customer write elsewhere; resolves once the source could know of it (on PostgreSQL: has published it). */
  writeByAnother(): Promise<void>;
  close(): Promise<void>;
}

/** Lets the event loop run a few turns: what a promise that is not blocked would need to settle. */
const turnsOfTheLoop = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** Whether `promise` has settled once the loop has turned a few times. */
export async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await turnsOfTheLoop();
  return done;
}

/** The checks every implementation of ChangeSource must pass. */
export function changeSourceContract(name: string, open: () => Harness | Promise<Harness>): void {
  describe(`ChangeSource contract: ${name}`, () => {
    test('subscribers hear every published write, in order, with its generation; one that stopped hears no more', async () => {
      const { source, close } = await open();
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
      const { source, writeByAnother, close } = await open();
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
      const { source, close } = await open();
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
      const { source, close } = await open();
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
