// The engine seam on SQLite (src/db/engine.ts) and the write gate it takes its turns from (src/db/write-gate.ts).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { openSqliteEngine, type SqliteEngine } from '../src/db/engine.ts';
import { WriterTurns } from '../src/db/write-gate.ts';
import { tempDir } from './support/temp-dir.ts';

function engineWithTable(): SqliteEngine {
  const engine = openSqliteEngine(join(tempDir(), 'engine.db'));
  engine.db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)');
  return engine;
}

const notes = (engine: SqliteEngine) => engine.db.prepare('SELECT text FROM notes ORDER BY id').pluck().all();

/** Lets the event loop run a few turns: what a promise that is not blocked would need to settle. */
const turnsOfTheLoop = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

test('a write commits all of its work or none of it', async () => {
  const engine = engineWithTable();
  const insert = engine.db.prepare('INSERT INTO notes (text) VALUES (?)');
  assert.equal(await engine.write(() => insert.run('one').changes), 1);
  await assert.rejects(
    engine.write(() => {
      insert.run('two');
      throw new Error('halfway');
    }),
    /halfway/,
  );
  assert.deepEqual(notes(engine), ['one']);
  await engine.close();
});

test('a write started inside another joins its transaction', async () => {
  const engine = engineWithTable();
  const insert = engine.db.prepare('INSERT INTO notes (text) VALUES (?)');
  await assert.rejects(
    engine.write(() => {
      insert.run('outer');
      void engine.write(() => insert.run('inner'));
      assert.equal(engine.db.inTransaction, true);
      throw new Error('the outer one fails');
    }),
    /outer one fails/,
  );
  assert.deepEqual(notes(engine), [], 'the joined write rolled back with the transaction it joined');
  await engine.write(() => {
    insert.run('outer');
    void engine.write(() => insert.run('inner'));
  });
  assert.deepEqual(notes(engine), ['outer', 'inner']);
  await engine.close();
});

test('work that returns a promise is refused and nothing of it commits', async () => {
  const engine = engineWithTable();
  const insert = engine.db.prepare('INSERT INTO notes (text) VALUES (?)');
  await assert.rejects(
    engine.write(async () => insert.run('awaited')),
    /must be synchronous/,
  );
  assert.deepEqual(notes(engine), []);
  await assert.rejects(engine.read(async () => 1), /must be synchronous/);
  await engine.close();
});

test('a read answers from one snapshot, and ping answers while the database is open', async () => {
  const engine = engineWithTable();
  await engine.write((db) => db.prepare("INSERT INTO notes (text) VALUES ('a'), ('b')").run());
  assert.deepEqual(await engine.read((db) => db.prepare('SELECT count(*) AS n FROM notes').get()), { n: 2 });
  await engine.ping();
  await engine.close();
  await assert.rejects(engine.ping());
});

test('a notification reaches the listeners of its channel after the work that sent it, until they stop', async () => {
  const engine = engineWithTable();
  const heard: string[] = [];
  const stop = engine.listen('customers', (payload) => heard.push(payload));
  engine.listen('other', (payload) => heard.push(`other:${payload}`));
  await engine.write(() => {
    engine.notify('customers', '7');
    assert.deepEqual(heard, [], 'not while the transaction is open');
  });
  await turnsOfTheLoop();
  assert.deepEqual(heard, ['7']);
  stop();
  engine.notify('customers', '8');
  await turnsOfTheLoop();
  assert.deepEqual(heard, ['7']);
  await engine.close();
});

test('a write waits, without blocking the event loop, while the import writer holds its turn, and goes once released', async () => {
  const engine = engineWithTable();
  const writer = new WriterTurns(engine.gate.shared);
  writer.hold(0);
  let written = false;
  const write = engine.write((db) => {
    db.prepare("INSERT INTO notes (text) VALUES ('waited')").run();
    written = true;
  });
  assert.equal(writer.wanted(), true, 'the writer is told a write of the service wants the lock');
  let loopRan = false;
  setImmediate(() => (loopRan = true));
  await turnsOfTheLoop();
  assert.equal(loopRan, true, 'the event loop kept running');
  assert.equal(written, false, 'the write waited for the writer to let go');
  writer.release();
  await write;
  assert.equal(written, true);
  assert.equal(writer.wanted(), false, 'its turn is given back once it has run');
  assert.deepEqual(notes(engine), ['waited']);
  await engine.close();
});

test('the writer gives way to a waiting write before it takes its next turn', async () => {
  const engine = engineWithTable();
  const writer = new WriterTurns(engine.gate.shared);
  const release = await engine.gate.turn();
  assert.equal(writer.wanted(), true);
  const before = performance.now();
  writer.hold(30); // the write keeps its turn: the writer waits its whole patience, then goes anyway
  assert.ok(performance.now() - before >= 25, 'the writer waited for the write that wanted the lock');
  writer.release();
  release();
  assert.equal(writer.wanted(), false);
  await engine.close();
});
