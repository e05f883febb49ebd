// customers.imports.* operations: CSV import jobs (upload, preview, list, get, the skipped rows as CSV).
import type { IncomingMessage } from 'node:http';
import type { ImportJobs } from '../customers/index.ts';
import { csvLine, streamCsv } from '../http/csv-download.ts';
import { Accepted, operation, STREAMED } from '../http/operation.ts';
import { IdParams } from '../schemas/common.ts';
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

/** Returns the import job operations. */
export function importJobOperations({ jobs }: { jobs: ImportJobs }) {
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
    async handle({ query }) {
      return { ...(await jobs.listJobs(query.page, query.limit)), page: query.page, limit: query.limit };
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
      const pages = await jobs.skippedRows(params.id);
      // One piece of text a page of skipped rows (each read when the client has taken the piece before).
      await streamCsv(ctx, `import-${params.id}-failures.csv`, ['line', 'email', 'reason'], (async function* () {
        for await (const page of pages) yield page.map((row) => csvLine([row.line, row.email, row.reason])).join('');
      })());
      return STREAMED;
    },
  });

  return { importFile, previewImport, listImports, getImport, importFailures };
}
