// Customers: get, insert, import, update, delete, top spenders, the aggregate reads, and the list of search.ts. Every
// write keeps the search index and the aggregate tables in its transaction (writes.ts), takes its turn with the import
// writer (the engine's write gate), and is published to the change source in commit order. Knows no HTTP.
import { AppError } from '../../domain/errors.ts';
import type { Customer, CustomerRecord, CustomerStatus, StatusCounts } from '../../domain/customers.ts';
import type { SqliteEngine } from '../../db/engine.ts';
import type { ChangeSource } from '../change-feed.ts';
import type { ImportedRow } from '../imports/imports.ts';
import { parseId, toCustomer, type CustomerRow, type StoredCustomer } from './rows.ts';
import { createCustomerSearch, type CustomerQuery } from './search.ts';
import type { CustomerWrites, OnExisting } from './writes.ts';

export type { CustomerQuery } from './search.ts';

/** One day's customers and cents of one status (customer_days). */
export interface DayBucket {
  status: CustomerStatus;
  day: number;
  customers: number;
  amount_cents: number;
}

/** The aggregate reads: what KPIs, health, trend, top and list totals are computed from, without scanning customers. */
export interface CustomerStatsReads {
  /** Resolves to customers and cents per status, zeros included. */
  totalsByStatus(): Promise<Record<CustomerStatus, { customers: number; cents: number }>>;
  /** Resolves to how many customers match a status and country filter. */
  countMatching(status: CustomerStatus | undefined, countryKey: string | undefined): Promise<number>;
  /** Resolves to the status counts and the number of active customers idle for more than 60 days at `now`. */
  healthInputs(now: Date): Promise<{ counts: StatusCounts; staleActives: number }>;
  /** Resolves to the per-day buckets of days `[fromDay, toDay)`, in day order. */
  daysBetween(fromDay: number, toDay: number): Promise<DayBucket[]>;
}

/** The customers as the rest of the service sees them: every function asynchronous, as on every engine. */
export interface CustomerRepository {
  stats: CustomerStatsReads;
  /** Resolves to one page of customers matching the query, and how many match in all. */
  listCustomers(query: CustomerQuery): Promise<{ items: Customer[]; total: number }>;
  /** Resolves to the countries customers live in, each spelled as one of its customers has it, in alphabetical order. */
  countryNames(): Promise<string[]>;
  /** Resolves to the highest spenders, ties by most recent activity. */
  topCustomers(limit: number): Promise<Customer[]>;
  /** Resolves to the customer with this id, or undefined. */
  findCustomer(id: string): Promise<Customer | undefined>;
  /** Stores the records in one transaction; resolves to each one's new id, or null when its email was taken. */
  insertCustomers(records: readonly CustomerRecord[], now: Date): Promise<(string | null)[]>;
  /** Resolves to which of the (lower-cased) emails belong to stored customers. */
  emailsStored(emails: readonly string[]): Promise<Set<string>>;
  /**
   * Stores the records in one transaction, possibly shared with other imports that arrive meanwhile, off the event
   * loop where the database allows. A stored email is left as it is (`skip`: null) or has its customer's fields
   * replaced (`update`); resolves to each record's customer id and whether it was an update.
   */
  importCustomers(records: readonly CustomerRecord[], now: Date, onExisting?: OnExisting): Promise<ImportedRow[]>;
  /** Applies the changes and resolves to the customer; rejects with `not_found` or `conflict` (email taken). */
  updateCustomer(id: string, changes: Partial<CustomerRecord>, now: Date): Promise<Customer>;
  /** Deletes the customer; rejects with `not_found` for an unknown id. */
  deleteCustomer(id: string): Promise<void>;
}

/** What the repository is built on besides the engine. */
export interface CustomerStoreParts {
  /** The write transactions of the engine's connection. */
  writes: CustomerWrites;
  /** Where every committed write is published, in commit order. */
  feed: ChangeSource;
  /** Where imports go: the import runner (imports/import-runner.ts), which owns the import writer. */
  imports: { importLater(records: readonly CustomerRecord[], now: Date, onExisting?: OnExisting): Promise<ImportedRow[]> };
}

/**
 * One spelling per country that has customers, in key order: the per-country totals list them, customers_by_country
 * finds a row. The same text on PostgreSQL.
 */
export const COUNTRY_NAMES_SQL = `SELECT (SELECT country FROM customers WHERE country_key = k.country_key LIMIT 1) AS name
  FROM (SELECT country_key FROM customer_countries GROUP BY country_key HAVING sum(customers) > 0) AS k ORDER BY k.country_key`;

/** Returns the customer queries on `engine`; every committed write is published to `feed`, in commit order. */
export function createCustomerRepository(engine: SqliteEngine, { writes, feed, imports }: CustomerStoreParts): CustomerRepository {
  const { db } = engine;
  const { stats } = writes;
  const search = createCustomerSearch(db, stats, feed);
  const byId = db.prepare<[number], CustomerRow>('SELECT * FROM customers WHERE id = ?');
  const emailStored = db.prepare<[string], number>('SELECT 1 FROM customers WHERE email = ?').pluck();
  const top = db.prepare<[number], CustomerRow>('SELECT * FROM customers ORDER BY amount_cents DESC, last_activity_at DESC, id DESC LIMIT ?');
  const countries = db.prepare<[], string>(COUNTRY_NAMES_SQL).pluck();
  /**
   * Runs `work` (writes.ts transactions, then the publish of what they committed) once the write gate gives this write
   * its turn: while a CSV job's transaction holds the lock, it waits for its commit without blocking the event loop.
   * Not engine.write: the insert runs transactions of its own (a failed group retried batch by batch), and publishing
   * right after the commit, before any other write can commit, tells subscribers in commit order (what engine.write
   * resolves to comes a few microtasks later, when another write may have committed).
   */
  const inTurn = async <T>(work: () => T): Promise<T> => {
    const done = await engine.gate.turn();
    try {
      return work();
    } finally {
      done();
    }
  };
  const idOf = (id: string): number => {
    const numeric = parseId(id);
    if (numeric === undefined) throw new AppError('not_found', `No customer with id ${id}.`);
    return numeric;
  };

  return {
    stats: {
      totalsByStatus: async () => stats.totalsByStatus(),
      countMatching: async (status, countryKey) => stats.countMatching(status, countryKey),
      healthInputs: async (now) => stats.healthInputs(now),
      daysBetween: async (fromDay, toDay) => stats.daysBetween(fromDay, toDay),
    },

    listCustomers: async (query) => search.listCustomers(query),

    async countryNames() {
      return countries.all().filter((name): name is string => name !== null);
    },

    async topCustomers(limit) {
      return top.all(limit).map(toCustomer);
    },

    async findCustomer(id) {
      const numeric = parseId(id);
      const row = numeric === undefined ? undefined : byId.get(numeric);
      return row && toCustomer(row);
    },

    insertCustomers(records, now) {
      return inTurn(() => {
        const { results, commits } = writes.insertBatches([{ records, now: now.getTime() }]);
        const [result] = results;
        if ('error' in result!) throw result.error;
        // Skipping stored emails, every outcome is a new customer or undefined.
        const stored = result!.stored as (StoredCustomer | undefined)[];
        feed.publish(stored.filter((s) => s !== undefined).map((after) => ({ before: undefined, after })), commits[0]!.generation);
        return stored.map((s) => (s ? String(s.id) : null));
      });
    },

    async emailsStored(emails) {
      return new Set(emails.filter((email) => emailStored.get(email) !== undefined));
    },

    importCustomers(records, now, onExisting = 'skip') {
      return imports.importLater(records, now, onExisting);
    },

    async updateCustomer(id, changes, now) {
      const numeric = idOf(id);
      return inTurn(() => {
        const { change, generation } = writes.updateOne.immediate(numeric, changes, now.getTime());
        feed.publish([change], generation);
        return toCustomer(byId.get(numeric)!);
      });
    },

    async deleteCustomer(id) {
      const numeric = idOf(id);
      return inTurn(() => {
        const { change, generation } = writes.deleteOne.immediate(numeric);
        feed.publish([change], generation);
      });
    },
  };
}
