// customers.* operations: list, create, get, update, delete, import, and the live aggregates.
import * as v from 'valibot';
import type { CustomerRepository } from '../customers/index.ts';
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

type CustomerOutput = v.InferOutput<ReturnType<typeof CustomerInput>>;

/** Maps validated input (cents, epoch ms) to the stored field names. */
function toRecord(input: Partial<CustomerOutput>): Partial<CustomerRecord> {
  const { totalAmountSpent, lastActivityDate, ...rest } = input;
  const record: Partial<CustomerRecord> = { ...rest };
  if (totalAmountSpent !== undefined) record.amountCents = totalAmountSpent;
  if (lastActivityDate !== undefined) record.lastActivityAt = lastActivityDate;
  return record;
}

/** Returns the customers operations. */
export function customerOperations({ customers, clock }: { customers: CustomerRepository; clock: Clock }) {
  const input = CustomerInput(clock);
  const duplicate = (email: string) => `A customer with the email ${email} already exists.`;

  const list = operation({
    operationId: 'customers.list',
    summary: 'Customers with server-side search (name or email substring), filters, sort and pagination.',
    tag: 'customers',
    query: CustomerListQuery,
    response: CustomerPage,
    handle({ query }) {
      return { ...customers.listCustomers(query), page: query.page, limit: query.limit };
    },
  });

  const create = operation({
    operationId: 'customers.create',
    summary: 'Create one customer. A duplicate email is a conflict; nothing is merged.',
    tag: 'customers',
    body: input,
    response: Customer,
    problems: ['conflict'],
    handle({ body }) {
      const [id] = customers.insertCustomers([toRecord(body) as CustomerRecord], clock());
      if (!id) throw new AppError('conflict', duplicate(body.email));
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
    handle({ params }) {
      const found = customers.findCustomer(params.id);
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
    handle({ params }) {
      customers.deleteCustomer(params.id);
      return null;
    },
  });

  const importMany = operation({
    operationId: 'customers.import',
    summary: 'Import up to 1000 customers: valid rows are stored in one transaction, invalid or duplicate rows are reported.',
    tag: 'customers',
    body: ImportRequest,
    documentedBody: ImportRequestDocumented,
    response: ImportReport,
    async handle({ body }) {
      type Failure = { row: number; email: string | null; reason: string; errors: FieldError[] };
      const failures: Failure[] = [];
      const valid: { row: number; record: CustomerRecord }[] = [];
      body.customers.forEach((raw, index) => {
        const result = v.safeParse(input, raw, { abortPipeEarly: true });
        if (result.success) {
          valid.push({ row: index + 1, record: toRecord(result.output) as CustomerRecord });
          return;
        }
        const errors: FieldError[] = [];
        for (const issue of result.issues) {
          const field = v.getDotPath(issue) || 'row';
          if (!errors.some((e) => e.field === field)) errors.push({ field, message: issue.message });
        }
        const email = (raw as { email?: unknown } | null)?.email;
        failures.push({
          row: index + 1,
          email: typeof email === 'string' ? email.trim().toLowerCase() : null,
          reason: `Invalid ${errors.map((e) => e.field).join(', ')}.`,
          errors,
        });
      });
      const ids = await customers.importCustomers(valid.map((r) => r.record), clock());
      ids.forEach((id, i) => {
        if (id) return;
        const { row, record } = valid[i]!;
        const reason = duplicate(record.email);
        failures.push({ row, email: record.email, reason, errors: [{ field: 'email', message: reason }] });
      });
      failures.sort((a, b) => a.row - b.row);
      return { imported: body.customers.length - failures.length, skipped: failures.length, failures };
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
