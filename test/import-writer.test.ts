// SQLite's import writer and bulk load (the connection of a writer thread beside the service's, the FTS5 index built
// on a second thread, the write turns a CSV job gives the service): SQLite only. PostgreSQL's writes, seed and job
// chunks are tested in test/pg/ (customers, seed, import-jobs).
import assert from 'node:assert/strict';
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { bulkInsertCustomers, openCustomers, openImportJobs, type ImportJob } from '../src/customers/index.ts';
import { openSqliteEngine } from '../src/db/engine.ts';
import { compileConditions } from '../src/domain/segments.ts';
import { writeCustomersCsv } from '../scripts/csv-file.ts';
import { syntheticCustomers } from '../scripts/synthetic-customers.ts';
import { assertRecomputed, queryOf } from './support/aggregates.ts';

const NOW_MS = Date.parse('2026-11-20T12:00:00.000Z');

// The import writer thread and the service connection of SQLite: test/pg/customers.test.ts covers PostgreSQL's writes.
test('a write on the service connection that commits before an import reply arrives is counted after it, not lost', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'campaigns-imports-'));
  const engine = openSqliteEngine(join(folder, 'i.db'));
  const { db } = engine;
  try {
    const { audience, store: customers } = openCustomers(engine);
    const record = (n: number) => ({
      name: `R${n}`,
      email: `r${n}@order.example.com`,
      country: 'France',
      totalTransactions: 1,
      amountCents: 100,
      lastActivityAt: NOW_MS,
      status: 'active' as const,
    });
    await customers.insertCustomers([record(0)], new Date(NOW_MS));
    assert.equal(await audience.count(compileConditions([], new Date(NOW_MS))), 1);

    // Wait, without yielding, until the writer thread has committed: its reply cannot be handled before this write.
    const other = new Database(db.name, { readonly: true });
    const generation = other.prepare("SELECT value FROM meta WHERE key = 'customers_generation'").pluck();
    const before = generation.get() as number;
    const imported = customers.importCustomers([record(1), record(2)], new Date(NOW_MS));
    const deadline = Date.now() + 20_000;
    while ((generation.get() as number) === before) assert.ok(Date.now() < deadline, 'the writer thread never committed');
    other.close();
    await customers.insertCustomers([record(3)], new Date(NOW_MS));

    assert.equal(await audience.count(compileConditions([], new Date(NOW_MS))), 4);
    assert.deepEqual((await imported).length, 2);
    assert.equal(await audience.count(compileConditions([{ field: 'country', operator: 'eq', value: 'france' }], new Date(NOW_MS))), 4);
  } finally {
    db.close();
    rmSync(folder, { recursive: true, force: true });
  }
});

// SQLite's bulk load and its FTS5 index built on a second thread; PostgreSQL's seed is seed.ts's, tested in test/pg/.
test('a bulk load into an empty database builds the search index on a second thread; later writes keep it exact', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'campaigns-bulk-'));
  const engine = openSqliteEngine(join(folder, 'b.db'));
  const { db } = engine;
  try {
    const customers = [...syntheticCustomers(3000, { seed: 5, now: new Date(NOW_MS) })];
    assert.equal(bulkInsertCustomers(db, customers, new Date(NOW_MS)), 3000);
    assert.equal(db.prepare('SELECT count(*) FROM customers').pluck().get(), 3000);
    await assertRecomputed(queryOf(db), true);
    const repository = openCustomers(engine).store;
    await repository.insertCustomers([{ ...customers[0]!, email: 'late.smith@example.com', name: 'Late Smith' }], new Date(NOW_MS));
    await repository.updateCustomer('7', { name: 'Renamed Smith', email: 'renamed@a.bexample.com' }, new Date(NOW_MS));
    await repository.deleteCustomer('8');
    await assertRecomputed(queryOf(db), true);
    // Adding more to a loaded base goes through the same statements, without the second thread.
    bulkInsertCustomers(db, syntheticCustomers(500, { seed: 6, now: new Date(NOW_MS), firstSerial: 10_000 }), new Date(NOW_MS));
    await assertRecomputed(queryOf(db), true);
  } finally {
    db.close();
    rmSync(folder, { recursive: true, force: true });
  }
});

// The SQLite import writer's turns; test/pg/import-jobs.test.ts has the same test for PostgreSQL's job chunks.
test('a CSV job gives way to writes of the service: edits go through while it runs, and its counts and aggregates stay exact', { timeout: 120_000 }, async () => {
  const folder = mkdtempSync(join(tmpdir(), 'campaigns-turns-'));
  const engine = openSqliteEngine(join(folder, 't.db'));
  const { db } = engine;
  try {
    const { store, imports } = openCustomers(engine);
    const [id] = await store.insertCustomers([{ ...[...syntheticCustomers(1, { seed: 1, now: new Date(NOW_MS), firstSerial: 9_000_000 })][0]!, email: 'edited@turns.example.com' }], new Date(NOW_MS));
    const file = join(folder, 'job.csv');
    const rows = 60_000;
    await writeCustomersCsv(file, rows, { seed: 12, now: new Date(NOW_MS) });
    let ended: ImportJob | undefined;
    const jobs = openImportJobs(imports, store, { folder: join(folder, 'uploads'), maxBytes: 1e9, clock: () => new Date(NOW_MS), onEnd: (job) => (ended = job) });
    await jobs.accept(createReadStream(file)[Symbol.asyncIterator](), { fileName: 'job.csv', declaredBytes: undefined, createdBy: 'test' });
    // Edits one after another while the job runs: each waits for at most a part of one of the job's transactions.
    const waits: number[] = [];
    while (!ended) {
      const started = performance.now();
      await store.updateCustomer(id!, { totalTransactions: waits.length + 1 }, new Date(NOW_MS));
      waits.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(ended.status, 'completed');
    assert.deepEqual([ended.rowsRead, ended.imported, ended.skipped], [rows, rows, 0]);
    assert.ok(waits.length >= 5, `${waits.length} edits during the job`);
    assert.ok(Math.max(...waits) < 2000, `an edit waited ${Math.round(Math.max(...waits))} ms`);
    assert.equal((await store.findCustomer(id!))!.totalTransactions, waits.length, 'every edit is stored');
    assert.equal(db.prepare('SELECT count(*) FROM customers').pluck().get(), rows + 1);
    await assertRecomputed(queryOf(db), true);
  } finally {
    db.close();
    rmSync(folder, { recursive: true, force: true });
  }
});
