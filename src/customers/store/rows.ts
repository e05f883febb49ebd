// A row of the customers table and what it becomes: the API's Customer, or the stored record that writes and the
// audience index pass around.
import type { Customer, CustomerRecord, CustomerStatus } from '../../domain/customers.ts';

export interface CustomerRow {
  id: number;
  name: string;
  email: string;
  country: string;
  country_key: string;
  total_transactions: number;
  amount_cents: number;
  last_activity_at: number;
  status: CustomerStatus;
}

/** A stored customer and its numeric id, as change listeners see it. */
export type StoredCustomer = CustomerRecord & { id: number; countryKey: string };

/** What state derived from customers (the audience index) reads of one: its id and the four matchable fields. */
export type CustomerFacts = Pick<StoredCustomer, 'id' | 'countryKey' | 'totalTransactions' | 'amountCents' | 'lastActivityAt'>;

/** One customer write: what was stored (`after`) and what it replaced (`before`); undefined for none. */
export type CustomerChange = { before: CustomerFacts | undefined; after: CustomerFacts | undefined };

/**
 * New customers' facts as columns, one entry per customer in each: how a CSV job's transaction (up to 20,000
 * customers) travels from the writer thread, in four transferable buffers and one array of strings rather than an
 * object per customer for the event loop to copy and collect.
 */
export interface InsertedColumns {
  ids: Float64Array;
  countryKeys: string[];
  transactions: Float64Array;
  cents: Float64Array;
  lastActivityAt: Float64Array;
}

/** Returns the customers' facts as columns. */
export function toColumns(customers: readonly CustomerFacts[]): InsertedColumns {
  const n = customers.length;
  const columns: InsertedColumns = { ids: new Float64Array(n), countryKeys: new Array<string>(n), transactions: new Float64Array(n), cents: new Float64Array(n), lastActivityAt: new Float64Array(n) };
  customers.forEach((c, i) => {
    columns.ids[i] = c.id;
    columns.countryKeys[i] = c.countryKey;
    columns.transactions[i] = c.totalTransactions;
    columns.cents[i] = c.amountCents;
    columns.lastActivityAt[i] = c.lastActivityAt;
  });
  return columns;
}

/** Returns the insertions the columns describe, as changes. */
export function insertionsOf({ ids, countryKeys, transactions, cents, lastActivityAt }: InsertedColumns): CustomerChange[] {
  const changes = new Array<CustomerChange>(ids.length);
  for (let i = 0; i < ids.length; i++) {
    changes[i] = { before: undefined, after: { id: ids[i]!, countryKey: countryKeys[i]!, totalTransactions: transactions[i]!, amountCents: cents[i]!, lastActivityAt: lastActivityAt[i]! } };
  }
  return changes;
}

/** Returns the customer as the API shows it. */
export function toCustomer(row: CustomerRow): Customer {
  return {
    id: String(row.id),
    name: row.name,
    email: row.email,
    country: row.country,
    totalTransactions: row.total_transactions,
    totalAmountSpent: row.amount_cents / 100,
    lastActivityDate: new Date(row.last_activity_at).toISOString(),
    status: row.status,
  };
}

/** Returns the row as a stored record. */
export function toStored(row: CustomerRow): StoredCustomer {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    country: row.country,
    countryKey: row.country_key,
    totalTransactions: row.total_transactions,
    amountCents: row.amount_cents,
    lastActivityAt: row.last_activity_at,
    status: row.status,
  };
}

/** Returns the numeric id of an opaque customer id, or undefined when it cannot name a customer. */
export function parseId(id: string): number | undefined {
  return /^[1-9]\d{0,15}$/.test(id) && Number.isSafeInteger(Number(id)) ? Number(id) : undefined;
}

/** Returns the text the search index holds for a customer: name and email on two lines. */
export function searchText(name: string, email: string): string {
  return `${name}\n${email}`;
}
