// customers.* operations: list, create, get, update, delete, the JSON import, and the live aggregates.
import { duplicateReason, repeatedReason, rowChecker, toRecord, type CustomerRepository } from '../customers/index.ts';
import type { Clock } from '../domain/clock.ts';
import { activityTrend, customerHealth, customerKpis, topCustomers } from '../domain/customer-summary.ts';
import type { CustomerRecord } from '../domain/customers.ts';
import { AppError, type FieldError } from '../domain/errors.ts';
import { operation } from '../http/operation.ts';
import { IdParams, NullBody } from '../schemas/common.ts';
import {
  Customer,
  CustomerChanges,
  CustomerInput,
  CustomerListQuery,
  CustomerPage,
  Health,
  ImportReport,
  ImportRequest,
  ImportRequestDocumented,
  Kpis,
  TopCustomers,
  TopQuery,
  Trend,
  TrendQuery,
} from '../schemas/customers.ts';

/** Returns the customers operations. */
export function customerOperations({ customers, clock }: { customers: CustomerRepository; clock: Clock }) {
  const input = CustomerInput(clock);
  const checkRow = rowChecker(clock);

  const list = operation({
    operationId: 'customers.list',
    summary: 'Customers with server-side search (name or email substring), filters, sort and pagination.',
    tag: 'customers',
    query: CustomerListQuery,
    response: CustomerPage,
    async handle({ query }) {
      return { ...(await customers.listCustomers(query)), page: query.page, limit: query.limit };
    },
  });

  const create = operation({
    operationId: 'customers.create',
    summary: 'Create one customer. A duplicate email is a conflict; nothing is merged.',
    tag: 'customers',
    body: input,
    response: Customer,
    problems: ['conflict'],
    async handle({ body }) {
      const [id] = await customers.insertCustomers([toRecord(body) as CustomerRecord], clock());
      if (!id) throw new AppError('conflict', duplicateReason(body.email));
      return customers.findCustomer(id);
    },
  });

  const get = operation({
    operationId: 'customers.get',
    summary: 'One customer.',
    tag: 'customers',
    params: IdParams,
    response: Customer,
    problems: ['not_found'],
    async handle({ params }) {
      const found = await customers.findCustomer(params.id);
      if (!found) throw new AppError('not_found', `No customer with id ${params.id}.`);
      return found;
    },
  });

  const update = operation({
    operationId: 'customers.update',
    summary: 'Change any fields of a customer; the email stays unique.',
    tag: 'customers',
    params: IdParams,
    body: CustomerChanges(clock),
    response: Customer,
    problems: ['not_found', 'conflict'],
    handle({ params, body }) {
      return customers.updateCustomer(params.id, toRecord(body), clock());
    },
  });

  const remove = operation({
    operationId: 'customers.delete',
    summary: 'Delete a customer.',
    tag: 'customers',
    params: IdParams,
    response: NullBody,
    problems: ['not_found'],
    async handle({ params }) {
      await customers.deleteCustomer(params.id);
      return null;
    },
  });

  const importMany = operation({
    operationId: 'customers.import',
    summary:
      'Import up to 1000 customers: valid rows are stored in one transaction, invalid or duplicate rows are reported; with onExisting=update a ' +
      'row whose email is stored replaces that customer\'s fields.',
    tag: 'customers',
    body: ImportRequest,
    documentedBody: ImportRequestDocumented,
    response: ImportReport,
    async handle({ body }) {
      type Failure = { row: number; email: string | null; reason: string; errors: FieldError[] };
      const failures: Failure[] = [];
      const fail = (row: number, email: string, reason: string) => failures.push({ row, email, reason, errors: [{ field: 'email', message: reason }] });
      const valid: { row: number; record: CustomerRecord }[] = [];
      const emails = new Set<string>();
      body.customers.forEach((raw, index) => {
        const checked = checkRow(raw);
        if (!checked.ok) failures.push({ row: index + 1, email: checked.email, reason: checked.reason, errors: checked.errors });
        // Updating, a repeat would overwrite the row before it: the first row with an email is the one imported.
        else if (body.onExisting === 'update' && emails.has(checked.record.email)) fail(index + 1, checked.record.email, repeatedReason(checked.record.email));
        else {
          emails.add(checked.record.email);
          valid.push({ row: index + 1, record: checked.record });
        }
      });
      const stored = await customers.importCustomers(valid.map((r) => r.record), clock(), body.onExisting);
      let updated = 0;
      stored.forEach((customer, i) => {
        if (customer) {
          if (customer.updated) updated++;
          return;
        }
        const { row, record } = valid[i]!;
        fail(row, record.email, duplicateReason(record.email));
      });
      failures.sort((a, b) => a.row - b.row);
      return { imported: body.customers.length - failures.length - updated, updated, skipped: failures.length, failures };
    },
  });

  const kpis = operation({
    operationId: 'customers.kpis',
    summary: 'Headline numbers of the whole base, computed from current data.',
    tag: 'customers',
    response: Kpis,
    handle() {
      return customerKpis(customers);
    },
  });

  const trend = operation({
    operationId: 'customers.activityTrend',
    summary: 'Customers bucketed by the UTC month of their last activity, over the trailing months ending with this one.',
    tag: 'customers',
    query: TrendQuery,
    response: Trend,
    handle({ query }) {
      return activityTrend(customers, clock(), query.months);
    },
  });

  const health = operation({
    operationId: 'customers.health',
    summary: 'A 0-100 health score of the base, with its level and the shares behind it.',
    tag: 'customers',
    response: Health,
    handle() {
      return customerHealth(customers, clock());
    },
  });

  const top = operation({
    operationId: 'customers.top',
    summary: 'The highest-value customers by totalAmountSpent, and the value of the whole base.',
    tag: 'customers',
    query: TopQuery,
    response: TopCustomers,
    handle({ query }) {
      return topCustomers(customers, query.limit);
    },
  });

  return { list, create, get, update, remove, importMany, kpis, trend, health, top };
}
