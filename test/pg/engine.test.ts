// The engine seam on PostgreSQL (src/db/pg-engine.ts), against the real server `npm run test:pg` starts
// (TEST_DATABASE_URL). Two engines on one database stand for two instances of the service.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { PostgresEngine, type PgSql } from '../../src/db/pg-engine.ts';
import { AppError } from '../../src/domain/errors.ts';
import { serverUrl } from '../support/postgres.ts';

const URL = serverUrl();

const engines: PostgresEngine[] = [];
/** Returns a new engine on the test database (an instance of the service), closed after the tests. */
function instance(): PostgresEngine {
  const engine = new PostgresEngine(URL, { max: 4 });
  engines.push(engine);
  return engine;
}

let engine: PostgresEngine;
before(() => {
  engine = instance();
});
after(async () => {
  await Promise.all(engines.map((e) => e.close()));
});

/** Creates a table of notes of its own for one test. */
async function notesTable(): Promise<string> {
  const table = `notes_${randomUUID().replaceAll('-', '')}`;
  await engine.sql.unsafe(`CREATE TABLE ${table} (id serial PRIMARY KEY, text text NOT NULL)`);
  return table;
}

const insert = (tx: PgSql, table: string, text: string) => tx.unsafe(`INSERT INTO ${table} (text) VALUES ($1)`, [text]);
const texts = async (table: string) => (await engine.sql.unsafe(`SELECT text FROM ${table} ORDER BY id`)).map((r) => r.text as string);

test('a write commits all of its work or none of it', async () => {
  const table = await notesTable();
  await engine.write(async (tx) => {
    await insert(tx, table, 'one');
  });
  await assert.rejects(
    engine.write(async (tx) => {
      await insert(tx, table, 'two');
      throw new Error('halfway');
    }),
    /halfway/,
  );
  assert.deepEqual(await texts(table), ['one']);
});

test('a write started inside another joins its transaction', async () => {
  const table = await notesTable();
  await assert.rejects(
    engine.write(async (tx) => {
      await insert(tx, table, 'outer');
      await engine.write((inner) => insert(inner, table, 'inner'));
      throw new Error('the outer one fails');
    }),
    /outer one fails/,
  );
  assert.deepEqual(await texts(table), [], 'the joined write rolled back with the transaction it joined');
  await engine.write(async (tx) => {
    await insert(tx, table, 'outer');
    await engine.write((inner) => insert(inner, table, 'inner'));
  });
  assert.deepEqual(await texts(table), ['outer', 'inner']);
});

test('a read sees one snapshot while another instance writes', async () => {
  const table = await notesTable();
  const other = instance();
  await other.write((tx) => insert(tx, table, 'before'));
  const counts = await engine.read(async (tx) => {
    const first = (await tx.unsafe(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n as number;
    await other.write((w) => insert(w, table, 'meanwhile'));
    const second = (await tx.unsafe(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n as number;
    return [first, second];
  });
  assert.deepEqual(counts, [1, 1]);
  assert.deepEqual(await texts(table), ['before', 'meanwhile']);
});

test('a notification reaches every instance once its transaction commits, and never from one rolled back', async () => {
  const channel = `test_${randomUUID().replaceAll('-', '')}`;
  const other = instance();
  const heard: string[] = [];
  let hear: () => void = () => {};
  let stop!: () => void;
  // Notifications sent before the server has acknowledged LISTEN are not heard: wait for it.
  await new Promise<void>((listening) => {
    stop = other.listen(
      channel,
      (payload) => {
        heard.push(payload);
        hear();
      },
      listening,
    );
  });
  await assert.rejects(
    engine.write(async () => {
      engine.notify(channel, 'rolled back');
      throw new Error('no');
    }),
  );
  const arrived = new Promise<void>((resolve) => (hear = resolve));
  await engine.write(async (tx) => {
    engine.notify(channel, 'committed');
    await tx`SELECT 1`;
  });
  await arrived;
  assert.deepEqual(heard, ['committed']);
  stop();
});

test('one instance leads a loop at a time, and another takes over once it resigns or its connection dies', async () => {
  const name = `loop-${randomUUID()}`;
  const first = instance();
  const second = instance();
  assert.equal(await first.leadership.tryLead(name), true);
  assert.equal(await first.leadership.tryLead(name), true, 'the leader asking again still leads');
  assert.equal(await second.leadership.tryLead(name), false);
  assert.equal(await second.leadership.tryLead(`${name}-other`), true, 'each loop has its own leader');
  await first.leadership.resign(name);
  assert.equal(await second.leadership.tryLead(name), true);

  const third = instance();
  const fourth = instance();
  const loop = `${name}-dies`;
  assert.equal(await third.leadership.tryLead(loop), true);
  // The leader's session ends (its process killed, its connection cut): the lock goes with it.
  await engine.sql`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = hashtext(${loop})::oid AND objsubid = 2`;
  let led = false;
  for (let attempt = 0; attempt < 50 && !led; attempt++) led = await fourth.leadership.tryLead(loop);
  assert.equal(led, true);
  assert.equal(await third.leadership.tryLead(loop), false, 'the old leader, reconnected, knows it no longer leads');
});

test('ping answers while the database does, and not once the engine is closed', async () => {
  const closing = instance();
  await closing.ping();
  await closing.close();
  await assert.rejects(closing.ping());
});

/** Ends the session of backend `pid` from another connection, as a primary going away ends it. */
const cut = (pid: number) => engine.sql`SELECT pg_terminate_backend(${pid})`;
const backendOf = async (tx: PgSql) => (await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`)[0]!.pid;
const isUnavailable = (error: unknown) => error instanceof AppError && error.code === 'unavailable';

// postgres.js 3.4 writes a transaction's ROLLBACK (or any later statement) on its connection even once that
// connection has closed, and the write then throws from a timer: uncaught, the process would end (node:test fails
// the test it runs in). Each test below asks the engine again afterwards, past that timer.
test('a transaction whose connection is cut under a statement fails unavailable; the process and the connection go on', async () => {
  // One connection: the next transaction takes the one that was cut (postgres.js 3.4 then hands its first statement
  // the old session's shutdown error, 57P01: the engine begins again once, so that it is not answered `unavailable`).
  const cutting = new PostgresEngine(URL, { max: 1 });
  engines.push(cutting);
  const table = await notesTable();
  const failed = cutting.write(async (tx) => {
    await insert(tx, table, 'lost with the session');
    const pid = await backendOf(tx);
    await Promise.all([tx`SELECT pg_sleep(5)`, cut(pid)]);
  });
  await assert.rejects(failed, isUnavailable);
  for (let i = 0; i < 3; i++) await cutting.write((tx) => insert(tx, table, `after ${i}`));
  assert.deepEqual(await texts(table), ['after 0', 'after 1', 'after 2']);
});

test('a transaction whose connection closes while its work waits on something else fails at once, and sends nothing more', async () => {
  const cutting = instance();
  const table = await notesTable();
  let resume!: () => void;
  const waiting = new Promise<void>((resolve) => (resume = resolve));
  let sentAfter: unknown;
  const failed = cutting.write(async (tx) => {
    await cut(await backendOf(tx));
    await waiting; // a model's answer, a password hash: anything but this connection
    try {
      await insert(tx, table, 'after the cut');
    } catch (error) {
      sentAfter = error;
      throw error;
    }
  });
  await assert.rejects(failed, isUnavailable);
  resume();
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal((sentAfter as { code?: string } | undefined)?.code, 'CONNECTION_CLOSED');
  await cutting.write((tx) => insert(tx, table, 'next'));
  assert.deepEqual(await texts(table), ['next']);
});

test('work that fails for its own reasons still rolls back, and its connection serves the next transaction', async () => {
  const single = new PostgresEngine(URL, { max: 1 });
  engines.push(single);
  const table = await notesTable();
  await assert.rejects(
    single.write(async (tx) => {
      await insert(tx, table, 'undone');
      throw new AppError('conflict', 'no');
    }),
    (error) => error instanceof AppError && error.code === 'conflict',
  );
  await single.write((tx) => insert(tx, table, 'kept'));
  assert.deepEqual(await texts(table), ['kept']);
});
