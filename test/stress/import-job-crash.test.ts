// kill -9 in the middle of a CSV import job: after the restart the job is `interrupted`, its counts equal the rows
// the file committed (and its skipped rows), the aggregates and the search index match the rows, and importing
// the same file again stores only the rest.
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeCustomersCsv } from '../../scripts/csv-file.ts';
import { tempDir } from '../support/temp-dir.ts';
import { call, launchService, signInAdmin, type ChildService } from './child-service.ts';
import { assertCustomersConsistent, openReadOnly } from './store-invariants.ts';

const dir = tempDir('campaigns-job-crash-');
const ROWS = 150_000;
const NOW = new Date('2026-11-20T12:00:00.000Z');

/** Uploads the file as an import job; returns its id. */
async function upload(service: ChildService, token: string, path: string): Promise<string> {
  const response = await fetch(`${service.url}/v1/customers/imports?fileName=customers.csv`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
    body: readFileSync(path),
  });
  assert.equal(response.status, 202, await response.clone().text());
  return ((await response.json()) as { id: string }).id;
}

/** Polls the job until `done` says so; returns the job as last seen. */
async function watch(service: ChildService, token: string, id: string, done: (job: { status: string; imported: number }) => boolean) {
  for (;;) {
    const reply = await call(service.url, 'GET', `/v1/customers/imports/${id}`, { token });
    assert.equal(reply.status, 200);
    if (done(reply.body)) return reply.body;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('kill -9 mid-job: interrupted with the committed counts, aggregates exact, and the same file again stores only the rest', { timeout: 180_000 }, async () => {
  const database = join(dir, 'jobs.db');
  const file = join(dir, 'customers.csv');
  await writeCustomersCsv(file, ROWS, { seed: 11, now: NOW });

  let service = await launchService({ DATABASE_PATH: database });
  let token = await signInAdmin(service.url);
  const first = await upload(service, token, file);
  // Killed once a part of the file is in, well before the end.
  await watch(service, token, first, (job) => job.imported >= ROWS / 10 || job.status !== 'running');
  await service.kill();

  const db = openReadOnly(database);
  const stored = db.prepare('SELECT count(*) FROM customers').pluck().get() as number;
  db.close();
  assert.ok(stored > 0 && stored < ROWS, `${stored} rows stored before the kill`);
  assertCustomersConsistent(database);

  service = await launchService({ DATABASE_PATH: database });
  try {
    token = await signInAdmin(service.url);
    const interrupted = (await call(service.url, 'GET', `/v1/customers/imports/${first}`, { token })).body;
    assert.equal(interrupted.status, 'interrupted');
    assert.equal(interrupted.imported, stored, 'the counts are those of the committed transactions');
    assert.equal(interrupted.skipped, 0);
    assert.equal(interrupted.rowsRead, stored);
    assert.ok(interrupted.finishedAt);
    const kpis = (await call(service.url, 'GET', '/v1/customers/kpis', { token })).body;
    assert.equal(kpis.totalCustomers, stored);

    const again = await upload(service, token, file);
    // The writer starts the log over every JOB_CHECKPOINT_ROWS (50,000) rows of a job: without that, the log holds
    // every page each of the job's transactions wrote (gigabytes for a million rows), and its index grows in memory
    // with it. For these 135,000 rows the log reaches about the database's size with the restarts, about twice
    // without (0.99 and 1.87 times when this was written).
    let largestLog = 0;
    const done = await watch(service, token, again, (job) => {
      largestLog = Math.max(largestLog, statSync(`${database}-wal`, { throwIfNoEntry: false })?.size ?? 0);
      return job.status !== 'running';
    });
    assert.equal(done.status, 'completed');
    assert.deepEqual([done.rowsRead, done.imported, done.skipped], [ROWS, ROWS - stored, stored], 'the rows stored before are skipped as already there');
    assert.equal((await call(service.url, 'GET', '/v1/customers/kpis', { token })).body.totalCustomers, ROWS);
    const logical = openReadOnly(database);
    const databaseBytes = (logical.pragma('page_count', { simple: true }) as number) * (logical.pragma('page_size', { simple: true }) as number);
    logical.close();
    assert.ok(largestLog < 1.4 * databaseBytes, `the log reached ${largestLog} bytes during the job, for a database of ${databaseBytes}`);
    assertCustomersConsistent(database);
  } finally {
    await service.stop();
  }
});
