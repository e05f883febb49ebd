// A row of the customers table and what it becomes: the API's Customer, or the stored record that writes and the
// audience index pass around.
import { CUSTOMER_STATUSES, type Customer, type CustomerRecord, type CustomerStatus } from '../../domain/customers.ts';
import { customerOfRow, storedOfRow, type CustomerRow } from './fields.ts';

export type { CustomerRow };

/** A stored customer and its numeric id, as change listeners see it. */
export type StoredCustomer = CustomerRecord & { id: number; countryKey: string };

/** What state derived from customers (the audience index) reads of one: its id and the five matchable fields. */
export type CustomerFacts = Pick<StoredCustomer, 'id' | 'countryKey' | 'status' | 'totalTransactions' | 'amountCents' | 'lastActivityAt'>;

/** Returns a status as columns hold it: its place in CUSTOMER_STATUSES. */
export const statusIndex = (status: CustomerStatus): number => CUSTOMER_STATUSES.indexOf(status);

/** One customer write: what was stored (`after`) and what it replaced (`before`); undefined for none. */
export type CustomerChange = { before: CustomerFacts | undefined; after: CustomerFacts | undefined };

/**
 * New customers' facts as columns, one entry per customer in each: how a CSV job's transaction (up to 20,000
 * customers) travels from the writer thread, in five transferable buffers and one array of strings rather than an
 * object per customer for the event loop to copy and collect.
 */
export interface InsertedColumns {
  ids: Float64Array;
  countryKeys: string[];
  /** Each status's place in CUSTOMER_STATUSES. */
  statuses: Uint8Array;
  transactions: Float64Array;
  cents: Float64Array;
  lastActivityAt: Float64Array;
}

/** Returns the customers' facts as columns. */
export function toColumns(customers: readonly CustomerFacts[]): InsertedColumns {
  const n = customers.length;
  const columns: InsertedColumns = {
    ids: new Float64Array(n),
    countryKeys: new Array<string>(n),
    statuses: new Uint8Array(n),
    transactions: new Float64Array(n),
    cents: new Float64Array(n),
    lastActivityAt: new Float64Array(n),
  };
  customers.forEach((c, i) => {
    columns.ids[i] = c.id;
    columns.countryKeys[i] = c.countryKey;
    columns.statuses[i] = statusIndex(c.status);
    columns.transactions[i] = c.totalTransactions;
    columns.cents[i] = c.amountCents;
    columns.lastActivityAt[i] = c.lastActivityAt;
  });
  return columns;
}

/** Returns the insertions the columns describe, as changes. */
export function insertionsOf({ ids, countryKeys, statuses, transactions, cents, lastActivityAt }: InsertedColumns): CustomerChange[] {
  const changes = new Array<CustomerChange>(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const after = { id: ids[i]!, countryKey: countryKeys[i]!, status: CUSTOMER_STATUSES[statuses[i]!]!, totalTransactions: transactions[i]!, amountCents: cents[i]!, lastActivityAt: lastActivityAt[i]! };
    changes[i] = { before: undefined, after };
  }
  return changes;
}

/** Returns the customer as the API shows it: its id, then every declared field in the API's order. */
export const toCustomer: (row: CustomerRow) => Customer = customerOfRow;

/** Returns the row as a stored record: its id, its country key and every declared field. */
export const toStored: (row: CustomerRow) => StoredCustomer = storedOfRow;

/** Returns the numeric id of an opaque customer id, or undefined when it cannot name a customer. */
export function parseId(id: string): number | undefined {
  return /^[1-9]\d{0,15}$/.test(id) && Number.isSafeInteger(Number(id)) ? Number(id) : undefined;
}

/** Returns the text the search index holds for a customer: name and email on two lines. */
export function searchText(name: string, email: string): string {
  return `${name}\n${email}`;
}

/** The SQL expression of `searchText` over a customers row, for statements that index many rows at once. */
export const SEARCH_TEXT_SQL = 'name || char(10) || email';
