// customers.* operations: list, create, get, update, delete, import, and the live aggregates.
import type { IncomingMessage } from 'node:http';
import { duplicateReason, repeatedReason, rowChecker, toRecord, type CustomerRepository, type ImportJobs } from '../customers/index.ts';
import type { Clock } from '../domain/clock.ts';
import { activityTrend, customerHealth, customerKpis, topCustomers } from '../domain/customer-summary.ts';
import type { CustomerRecord } from '../domain/customers.ts';
import { AppError, type FieldError } from '../domain/errors.ts';
import { sendCsv } from '../http/csv-download.ts';
import { Accepted, operation, STREAMED } from '../http/operation.ts';
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
import {
  FailuresCsv,
  ImportJob,
  ImportJobListQuery,
  ImportJobPage,
  ImportPreview,
  ImportPreviewQuery,
  ImportUploadQuery,
  PREVIEW_NOTE,
} from '../schemas/imports.ts';

/**
 * Discards what the client still sends of a body whose answer needs no more of it, so the connection can carry its
 * next request; past `limit` more bytes the connection is closed instead (the answer is out by then).
 */
function discardRest(req: IncomingMessage, limit: number): void {
  if (req.complete) return;
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > limit) req.socket.destroy();
  });
  req.resume();
}

/** Returns the customers operations. */
export function customerOperations({ customers, jobs, clock }: { customers: CustomerRepository; jobs: ImportJobs; clock: Clock }) {
  const input = CustomerInput(clock);
  const checkRow = rowChecker(clock);

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

  const importFile = operation({
    operationId: 'customers.imports.create',
    summary: 'Import a CSV file of any size as a job: answered 202 with the job once the file is on disk; follow it at Location.',
    tag: 'customers',
    upload: {
      mediaType: 'text/csv',
      description:
        'UTF-8, an optional byte order mark, RFC 4180 quoting, and a header row. Columns are matched to fields by name without case ' +
        '(aliases: name / full name / full_name, total_amount_spent / total_spent / amount, total_transactions / transactions / orders, ' +
        'last_activity_date / last_activity), after the `columns` mapping; an email column is required, other columns are ignored and listed. ' +
        'Rows follow customers.import, onExisting included.',
    },
    query: ImportUploadQuery,
    accepted: true,
    response: ImportJob,
    problems: ['payload_too_large', 'unsupported_media_type'],
    async handle({ query, user, ctx }) {
      const declared = Number(ctx.req.headers['content-length']);
      try {
        const job = await jobs.accept(ctx.req.iterator({ destroyOnReturn: false }), {
          fileName: query.fileName,
          declaredBytes: Number.isFinite(declared) ? declared : undefined,
          createdBy: user.id,
          columns: query.columns,
          onExisting: query.onExisting,
        });
        return new Accepted(job, `/v1/customers/imports/${job.id}`);
      } catch (error) {
        ctx.req.resume(); // the rest of a refused file is discarded, so the client reads the answer
        throw error;
      }
    },
  });

  const previewImport = operation({
    operationId: 'customers.imports.preview',
    summary: 'Look at a CSV file before importing it: how each column will be read, its first records as they would be stored, and their problems.',
    tag: 'customers',
    upload: { mediaType: 'text/csv', description: `The same file as for customers.imports.create. ${PREVIEW_NOTE}` },
    query: ImportPreviewQuery,
    response: ImportPreview,
    problems: ['payload_too_large', 'unsupported_media_type'],
    async handle({ query, ctx }) {
      const declared = Number(ctx.req.headers['content-length']);
      try {
        return await jobs.preview(ctx.req.iterator({ destroyOnReturn: false }), {
          declaredBytes: Number.isFinite(declared) ? declared : undefined,
          columns: query.columns,
          onExisting: query.onExisting,
        });
      } finally {
        discardRest(ctx.req, jobs.maxBytes); // the answer goes out at once; the rest of the file is not looked at
      }
    },
  });

  const listImports = operation({
    operationId: 'customers.imports.list',
    summary: 'CSV import jobs, newest first, in pages.',
    tag: 'customers',
    query: ImportJobListQuery,
    response: ImportJobPage,
    handle({ query }) {
      return { ...jobs.listJobs(query.page, query.limit), page: query.page, limit: query.limit };
    },
  });

  const getImport = operation({
    operationId: 'customers.imports.get',
    summary: 'One CSV import job, with its progress.',
    tag: 'customers',
    params: IdParams,
    response: ImportJob,
    problems: ['not_found'],
    handle({ params }) {
      return jobs.getJob(params.id);
    },
  });

  const importFailures = operation({
    operationId: 'customers.imports.failures',
    summary: 'The rows a CSV import job skipped, as CSV: line, email, reason, in line order.',
    tag: 'customers',
    params: IdParams,
    response: FailuresCsv,
    download: { mediaType: 'text/csv', description: '`line,email,reason`, one row per skipped row; the header of the file is line 1.' },
    problems: ['not_found'],
    async handle({ params, ctx }) {
      const rows = jobs.skippedRows(params.id);
      await sendCsv(ctx, `import-${params.id}-failures.csv`, ['line', 'email', 'reason'], (function* () {
        for (const row of rows) yield [row.line, row.email, row.reason];
      })());
      return STREAMED;
    },
  });

  return { list, create, get, update, remove, importMany, importFile, previewImport, listImports, getImport, importFailures, kpis, trend, health, top };
}
