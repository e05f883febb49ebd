// Customers: get, insert, import, update, delete, top spenders, and the list of search.ts. Every write keeps the
// search index and the aggregate tables in its transaction (writes.ts) and is published to the change feed in commit
// order. Knows no HTTP.
import { AppError } from '../../domain/errors.ts';
import type { Customer, CustomerRecord } from '../../domain/customers.ts';
import { createCustomerImports } from '../imports/imports.ts';
import type { CustomerChangeFeed } from '../change-feed.ts';
import { parseId, toCustomer, type CustomerRow } from './rows.ts';
import { createCustomerSearch } from './search.ts';
import { createCustomerWrites, type OnExisting } from './writes.ts';
import { writeTurn, type Db } from '../../db/database.ts';

export type { CustomerQuery } from './search.ts';

export type CustomerRepository = ReturnType<typeof createCustomerRepository>;

/** Returns the customer queries; every committed write is published to `feed`, in commit order. */
export function createCustomerRepository(db: Db, feed: CustomerChangeFeed, { importCacheMiB = 32 } = {}) {
  const writes = createCustomerWrites(db);
  const { stats } = writes;
  const search = createCustomerSearch(db, stats, feed);
  const imports = createCustomerImports(db, writes, feed, importCacheMiB);
  const byId = db.prepare<[number], CustomerRow>('SELECT * FROM customers WHERE id = ?');
  const emailStored = db.prepare<[string], number>('SELECT 1 FROM customers WHERE email = ?').pluck();
  const top = db.prepare<[number], CustomerRow>('SELECT * FROM customers ORDER BY amount_cents DESC, last_activity_at DESC, id DESC LIMIT ?');
  // One spelling per country that has customers: the per-country totals list them, customers_by_country finds a row.
  const countries = db
    .prepare<[], string>(
      `SELECT (SELECT country FROM customers WHERE country_key = k.country_key LIMIT 1) AS name
       FROM (SELECT country_key FROM customer_countries GROUP BY country_key HAVING sum(customers) > 0) AS k ORDER BY k.country_key`,
    )
    .pluck();

  return {
    stats,

    listCustomers: search.listCustomers,

    /** Returns the countries customers live in, each spelled as one of its customers has it, in alphabetical order. */
    countryNames(): string[] {
      return countries.all().filter((name): name is string => name !== null);
    },

    /** Returns the highest spenders, ties by most recent activity. */
    topCustomers(limit: number): Customer[] {
      return top.all(limit).map(toCustomer);
    },

    /** Returns the customer with this id, or undefined. */
    findCustomer(id: string): Customer | undefined {
      const numeric = parseId(id);
      const row = numeric === undefined ? undefined : byId.get(numeric);
      return row && toCustomer(row);
    },

    /** Stores the records in one transaction; returns each one's new id, or null when its email was taken. */
    insertCustomers(records: readonly CustomerRecord[], now: Date): (string | null)[] {
      return imports.insertNow(records, now);
    },

    /** Returns which of the (lower-cased) emails belong to stored customers. */
    emailsStored(emails: readonly string[]): Set<string> {
      return new Set(emails.filter((email) => emailStored.get(email) !== undefined));
    },

    /**
     * Stores the records in one transaction, possibly shared with other imports that arrive meanwhile, off the
     * event loop where the database allows. A stored email is left as it is (`skip`: null) or has its customer's
     * fields replaced (`update`); resolves to each record's customer id and whether it was an update.
     */
    importCustomers(records: readonly CustomerRecord[], now: Date, onExisting: OnExisting = 'skip') {
      return imports.importLater(records, now, onExisting);
    },

    /** Runs a CSV import job on the import writer (see imports.ts `runJob`); import-jobs.ts queues them. */
    runImportJob: imports.runJob,

    /**
     * Applies the changes and returns the customer; throws `not_found` or `conflict` (email taken). While a CSV job's
     * transaction holds the lock, waits for it to commit without blocking the event loop (db/database.ts writeTurn).
     */
    async updateCustomer(id: string, changes: Partial<CustomerRecord>, now: Date): Promise<Customer> {
      const numeric = parseId(id);
      if (numeric === undefined) throw new AppError('not_found', `No customer with id ${id}.`);
      const done = await writeTurn(db);
      try {
        const { change, generation } = writes.updateOne.immediate(numeric, changes, now.getTime());
        feed.publish([change], generation);
        return toCustomer(byId.get(numeric)!);
      } finally {
        done();
      }
    },

    /** Deletes the customer; throws `not_found` for an unknown id. Waits for its turn as `updateCustomer` does. */
    async deleteCustomer(id: string): Promise<void> {
      const numeric = parseId(id);
      if (numeric === undefined) throw new AppError('not_found', `No customer with id ${id}.`);
      const done = await writeTurn(db);
      try {
        const { change, generation } = writes.deleteOne.immediate(numeric);
        feed.publish([change], generation);
      } finally {
        done();
      }
    },
  };
}
