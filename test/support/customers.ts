// Customer builders shared by the test files: valid rows with unique emails, created or imported over HTTP.
import assert from 'node:assert/strict';
import type { Customer } from '../../src/domain/customers.ts';
import type { TestService } from '../helpers.ts';

export type CustomerRow = Omit<Customer, 'id'>;

let serial = 0;

/** Returns a valid customer body with a unique email; `fields` replace any of its values. */
export function customerRow(fields: Partial<CustomerRow> = {}): CustomerRow {
  serial++;
  return {
    name: `Customer ${serial}`,
    email: `customer${serial}@builder.example.com`,
    country: 'France',
    totalTransactions: 1,
    totalAmountSpent: 10,
    lastActivityDate: '2026-11-01T00:00:00.000Z',
    status: 'active',
    ...fields,
  };
}

/** Creates the customer over HTTP (asserting 200) and returns it. */
export async function createCustomer(service: TestService, token: string, body: Record<string, unknown>): Promise<Customer> {
  const reply = await service.request('POST', '/v1/customers', { token, body });
  assert.equal(reply.status, 200, reply.text);
  return reply.body as Customer;
}

/** Imports the rows over HTTP and asserts every one was stored. */
export async function importRows(service: TestService, token: string, rows: readonly CustomerRow[]): Promise<void> {
  const reply = await service.request('POST', '/v1/customers/import', { token, body: { customers: rows } });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(reply.body, { imported: rows.length, updated: 0, skipped: 0, failures: [] });
}
