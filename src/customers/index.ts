// The customer subsystem's one door: nothing outside src/customers/ imports anything but this file.
//
//   store/      the customers table, its search index and aggregate tables: queries and write transactions;
//               store/export.ts reads a segment's customers in id order for a download
//   imports/    the import runner (import-runner.ts): the writer thread that writes imports in groups, the thread
//               that checkpoints its log, and the runs of CSV import jobs on that writer
//   bulk/       the bulk load of a seed (its search index built on search-index.thread.ts) and its recovery
//   audience/   the in-memory columns every segment count runs on
//   change-feed.ts  the change source: every committed write, in commit order; what derives state from customers
//               subscribes to it
import type { SqliteEngine } from '../db/engine.ts';
import type { PostgresEngine } from '../db/pg-engine.ts';
import { PgAudienceSource } from './postgres/audience-source.ts';
import { PgChangeFeed } from './postgres/change-feed.ts';
import { createPgCustomerExport } from './postgres/export.ts';
import { createPgImportJobs, type PgImportJobs, type PgImportJobsOptions } from './postgres/import-jobs.ts';
import { createPgCustomerRepository } from './postgres/store.ts';
import { AudienceIndex } from './audience/audience-index.ts';
import { SqliteAudienceSource } from './audience/sqlite-source.ts';
import { CustomerChangeFeed, type ChangeSource } from './change-feed.ts';
import { ImportRunner } from './imports/import-runner.ts';
import { createImportJobs, type ImportJobs, type ImportJobsOptions } from './imports/jobs.ts';
import { createCustomerRepository, type CustomerRepository } from './store/repository.ts';
import { createCustomerExport, type CustomerExport } from './store/export.ts';
import { createCustomerWrites } from './store/writes.ts';

export { BULK_LOAD_KEY, bulkInsertCustomers } from './bulk/bulk-load.ts';
export { RECOMPUTE_AGGREGATES_SQL, repairInterruptedBulkLoad } from './bulk/recovery.ts';
// The parts of the PostgreSQL subsystem its tests and move-to-postgres reach for; the service uses openPgCustomers.
export { AudienceIndex } from './audience/audience-index.ts';
export { PgAudienceSource } from './postgres/audience-source.ts';
export { CHANGES_CHANNEL, PgChangeFeed } from './postgres/change-feed.ts';
export { createPgCustomerExport } from './postgres/export.ts';
export { createPgImportJobs, type JobInstance, type PgImportJobs } from './postgres/import-jobs.ts';
export { createPgCustomerRepository } from './postgres/store.ts';
export type { Upload } from './imports/jobs.ts';
export { customersCopyText, nextSeedSerial, seedPostgres, type PgSeedResult } from './postgres/seed.ts';
export { duplicateReason, repeatedReason, rowChecker, toRecord } from './imports/row-check.ts';
export type { CsvPreview } from './imports/csv-preview.ts';
export type { ImportedRow } from './imports/imports.ts';
export type { ImportRunner } from './imports/import-runner.ts';
export type { OnExisting } from './store/writes.ts';
export type { ImportJob, SkippedRow } from './imports/job-store.ts';
export type { ImportJobs } from './imports/jobs.ts';
export type { ChangeSource, CustomerChangeFeed, CustomerChangeListener } from './change-feed.ts';
export type { CustomerQuery, CustomerRepository, CustomerStatsReads } from './store/repository.ts';
export type { CustomerChange, CustomerRow, StoredCustomer } from './store/rows.ts';
export type { CustomerExport, ExportRow } from './store/export.ts';
export { CUSTOMER_FIELDS, customerFields, EXPORT_FIELDS, INTERNAL_COLUMNS, shownValue, type CustomerField } from './store/fields.ts';

/** The customer subsystem on one engine: the store, the import runner, the audience index kept current by the feed, and the feed. */
export interface Customers {
  store: CustomerRepository;
  /** The one owner of imports: the import writer's threads and the runs of CSV jobs (started by `openImportJobs`). */
  imports: ImportRunner;
  audience: AudienceIndex;
  feed: ChangeSource;
  /** The customers within a segment's bounds, read in id order for a download. */
  export: CustomerExport;
}

/**
 * Returns the CSV import jobs of the service, run by the subsystem's import runner. Only the service opens them:
 * opening marks the jobs a stopped process left running as `interrupted` and empties `folder`.
 */
export function openImportJobs(imports: ImportRunner, store: CustomerRepository, options: ImportJobsOptions): ImportJobs {
  const { folder, clock, onEnd, onFinish } = options;
  imports.startJobs({ folder, clock, onEnd, onFinish });
  return createImportJobs(imports, (emails) => store.emailsStored(emails), options);
}

/**
 * Returns the customer subsystem on `engine`. The audience index starts loading in the background when `warm` is set
 * (the service), else on its first count; `importCacheMiB` is the import writer's page cache.
 */
export function openCustomers(engine: SqliteEngine, { warm = false, importCacheMiB = 32 } = {}): Customers {
  const { db } = engine;
  const feed = new CustomerChangeFeed(db);
  const audience = new AudienceIndex(new SqliteAudienceSource(db, feed), feed);
  const writes = createCustomerWrites(db);
  const imports = new ImportRunner(engine, writes, feed, { cacheMiB: importCacheMiB });
  const store = createCustomerRepository(engine, { writes, feed, imports });
  if (warm) audience.warm();
  return { store, imports, audience, feed, export: createCustomerExport(db) };
}

/** The customer subsystem on PostgreSQL: the CSV import jobs run on the service's pool; `close()` before the engine. */
export interface PgCustomers extends Omit<Customers, 'imports'> {
  jobs: PgImportJobs;
  /** Settles once the change feed listens and the jobs of instances gone are marked interrupted. */
  ready: Promise<void>;
  /** Stops the import jobs (the running one after its chunk) and the change feed. */
  close(): Promise<void>;
}

/**
 * Returns the customer subsystem on PostgreSQL, its import jobs started on `jobOptions.instance` (the service's
 * instance: its jobs name it, and run in one queue with every other instance's): the change feed listens to every
 * instance's writes (and catches up from the log), the audience index loads in the background once it does.
 * `onError` is told of failures nobody awaits.
 */
export function openPgCustomers(engine: PostgresEngine, jobOptions: PgImportJobsOptions, onError: (error: unknown) => void): PgCustomers {
  const feed = new PgChangeFeed(engine, { onError });
  const audience = new AudienceIndex(new PgAudienceSource(engine, feed), feed);
  // Loading after the feed has started: a load from before would be followed by a second one.
  const started = feed.start();
  started.then(() => audience.warm(), onError);
  const store = createPgCustomerRepository(engine, feed);
  const jobs = createPgImportJobs(engine, store, feed, { onError, ...jobOptions });
  const ready = Promise.all([started, jobs.ready]).then(() => {});
  ready.catch(() => {}); // reported by whoever awaits it (the start of the service), or by onError
  return {
    store,
    audience,
    feed,
    export: createPgCustomerExport(engine),
    jobs,
    ready,
    async close() {
      await jobs.close();
      await feed.close();
    },
  };
}
