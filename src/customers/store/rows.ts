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

/** One customer write: what was stored (`after`) and what it replaced (`before`); undefined for none. */
export type CustomerChange = { before: StoredCustomer | undefined; after: StoredCustomer | undefined };

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
