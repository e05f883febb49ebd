// The customer subsystem's one door: nothing outside src/customers/ imports anything but this file.
//
//   store/      the customers table, its search index and aggregate tables: queries and write transactions;
//               store/export.ts reads a segment's customers in id order for a download
//   imports/    imports written in groups on the writer thread (writer.thread.ts), the log checkpointed on another
//   bulk/       the bulk load of a seed (its search index built on search-index.thread.ts) and its recovery
//   audience/   the in-memory columns every segment count runs on
//   change-feed.ts  every committed write, in commit order; what derives state from customers subscribes to it
import type { Db } from '../db/database.ts';
import { AudienceIndex } from './audience/audience-index.ts';
import { CustomerChangeFeed } from './change-feed.ts';
import { createImportJobs, type ImportJobs, type ImportJobsOptions } from './imports/jobs.ts';
import { createCustomerRepository, type CustomerRepository } from './store/repository.ts';
import { createCustomerExport, type CustomerExport } from './store/export.ts';

export { bulkInsertCustomers } from './bulk/bulk-load.ts';
export { repairInterruptedBulkLoad } from './bulk/recovery.ts';
export { duplicateReason, repeatedReason, rowChecker, toRecord } from './imports/row-check.ts';
export type { CsvPreview } from './imports/csv-preview.ts';
export type { ImportedRow } from './imports/imports.ts';
export type { OnExisting } from './store/writes.ts';
export type { ImportJob } from './imports/job-store.ts';
export type { ImportJobs } from './imports/jobs.ts';
export type { AudienceIndex } from './audience/audience-index.ts';
export type { CustomerChangeFeed, CustomerChangeListener } from './change-feed.ts';
export type { CustomerQuery, CustomerRepository } from './store/repository.ts';
export type { CustomerChange, CustomerRow, StoredCustomer } from './store/rows.ts';
export type { CustomerExport, ExportRow } from './store/export.ts';

/** The customer subsystem on one connection: the store, the audience index kept current by the feed, and the feed. */
export interface Customers {
  store: CustomerRepository;
  audience: AudienceIndex;
  feed: CustomerChangeFeed;
  /** The customers within a segment's bounds, read in id order for a download. */
  export: CustomerExport;
}

/**
 * Returns the CSV import jobs of the service, running on the store's import writer. Only the service opens them:
 * opening marks the jobs a stopped process left running as `interrupted` and empties `folder`.
 */
export function openImportJobs(db: Db, store: CustomerRepository, options: ImportJobsOptions): ImportJobs {
  return createImportJobs(db, { runJob: store.runImportJob, emailsStored: store.emailsStored }, options);
}

/**
 * Returns the customer subsystem on `db`. The audience index starts loading in the background when `warm` is set
 * (the service), else on its first count; `importCacheMiB` is the import writer's page cache.
 */
export function openCustomers(db: Db, { warm = false, importCacheMiB = 32 } = {}): Customers {
  const feed = new CustomerChangeFeed(db);
  const audience = new AudienceIndex(db, feed);
  const store = createCustomerRepository(db, feed, { importCacheMiB });
  if (warm) audience.warm();
  return { store, audience, feed, export: createCustomerExport(db) };
}
