// An instance's lease on PostgreSQL (src/db/postgres/instances.ts): alive while it renews, gone once it stops or its
// lease runs out, whichever clock the instances run on (the database server's decides).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PostgresEngine } from '../../src/db/pg-engine.ts';
import { registerInstance, renewLapsedDuring } from '../../src/db/postgres/instances.ts';
import { createDatabase, dropDatabase } from '../support/postgres.ts';

let url: string;
let engine: PostgresEngine;
before(async () => {
  url = await createDatabase('lease', { withSchema: true });
  engine = new PostgresEngine(url, { max: 2 });
});
after(async () => {
  await engine.close();
  await dropDatabase(url);
});

const alive = async (id: string) => (await engine.sql<{ alive: boolean }[]>`SELECT campaigns_instance_alive(${id}) AS alive`)[0]!.alive;
/** Resolves once `holds` does, asked every 20 ms; fails naming `what` after 5 s (heartbeats here are 20 to 50 ms). */
async function until(holds: () => Promise<boolean>, what: string): Promise<void> {
  for (const deadline = performance.now() + 5_000; !(await holds()); ) {
    assert.ok(performance.now() < deadline, `${what} within 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const expiresAt = async (id: string) => (await engine.sql<{ expires_at: number }[]>`SELECT expires_at FROM service_instances WHERE id = ${id}`)[0]?.expires_at;

test('an instance is alive from its first lease, renews it on its heartbeat, and is gone once stopped', async () => {
  const errors: unknown[] = [];
  const instance = registerInstance(engine, { leaseMs: 5_000, heartbeatMs: 50, onError: (error) => errors.push(error) });
  await instance.ready;
  assert.equal(await alive(instance.id), true);
  const first = await expiresAt(instance.id);
  // Renewed: woken by the heartbeat's own statement, seen as the row's end moving on.
  await until(async () => (await expiresAt(instance.id))! > first!, 'the lease is renewed');
  await instance.stop();
  assert.equal(await alive(instance.id), false);
  assert.equal(await expiresAt(instance.id), undefined, 'a stopped instance deletes its row');
  assert.deepEqual(errors, []);
});

test('an instance whose lease has run out is not alive, and an id never registered is not either', async () => {
  await engine.sql`INSERT INTO service_instances (id, started_at, expires_at) VALUES ('gone', 0, campaigns_now_ms() - 1)`;
  assert.equal(await alive('gone'), false);
  assert.equal(await alive('never-registered'), false);
});

test('a live instance whose row was swept behind its back writes it again on its next heartbeat', async () => {
  const errors: unknown[] = [];
  const instance = registerInstance(engine, { leaseMs: 5_000, heartbeatMs: 20, onError: (error) => errors.push(error) });
  await instance.ready;
  // The row deleted behind the instance's back (an instance that took it for gone swept it): the next beat writes it again.
  await engine.sql`DELETE FROM service_instances WHERE id = ${instance.id}`;
  await until(() => alive(instance.id), 'the row is written again');
  await instance.stop();
  assert.deepEqual(errors, []);
});

test('after an outage, the leases that ran out during it are renewed, and only those', async () => {
  await engine.sql`
    INSERT INTO service_instances (id, started_at, expires_at) VALUES
      ('lapsed-during', 0, campaigns_now_ms() - 3000), ('lapsed-before', 0, campaigns_now_ms() - 60000), ('running', 0, campaigns_now_ms() + 60000)`;
  const runningUntil = await expiresAt('running');
  await renewLapsedDuring(engine.sql, 10_000, 5_000);
  assert.equal(await alive('lapsed-during'), true, 'its instance could not renew during the outage');
  assert.equal(await alive('lapsed-before'), false, 'gone before the outage began');
  assert.equal(await expiresAt('running'), runningUntil, 'a lease running longer is left as it is');
});
