// The CSV parser of an import job: a worker thread the import writer starts per job, so parsing and checking rows
// (csv-parse, then the customer rules) runs beside the writer's transactions instead of between them. It reads the
// file as a stream and posts batches of checked rows to `workerData.port`, only as many as the writer has asked
// for, so a file of any size holds a few batches in memory at most.
import { createReadStream } from 'node:fs';
import { workerData, type MessagePort } from 'node:worker_threads';
import { parse } from 'csv-parse';
import type { CustomerRecord } from '../../domain/customers.ts';
import { rowInput, type ColumnMap } from './csv-columns.ts';
import type { SkippedRow } from './job-store.ts';
import { rowChecker } from './row-check.ts';

/** Rows per batch posted to the writer. */
const BATCH_ROWS = 2_000;

/** A batch of the file: its checked rows with their lines, its skipped rows, and how far into the file it reaches. */
export interface ParsedBatch {
  records: { line: number; record: CustomerRecord }[];
  skipped: SkippedRow[];
  rows: number;
  bytes: number;
}

/** What the parser posts: batches, then the end (with the reason when the file could not be read to its end). */
export type ParserMessage = ({ type: 'batch' } & ParsedBatch) | { type: 'end'; bytes: number; broken?: SkippedRow };

const { path, columns, startedAt, port } = workerData as { path: string; columns: ColumnMap; startedAt: number; port: MessagePort };
const check = rowChecker(() => new Date(startedAt));
const post = (message: ParserMessage) => port.postMessage(message);

let credit = 0;
let line = 0;
let lastSkipped = 0;
let header = true;
let batch: ParsedBatch = { records: [], skipped: [], rows: 0, bytes: 0 };

const parser = createReadStream(path).pipe(
  parse({
    bom: true,
    // A quote inside an unquoted cell is taken as a character: exports by hand often have them.
    relax_quotes: true,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    on_record: (record: string[], context: { lines: number }) => {
      line = context.lines;
      return record;
    },
    on_skip: (error) => {
      const at = typeof error?.lines === 'number' ? error.lines : line + 1;
      if (at === lastSkipped) return undefined; // one row may break more than one rule
      lastSkipped = at;
      batch.rows++;
      batch.skipped.push({ line: at, email: null, reason: `Not a CSV row: ${error?.message ?? 'unreadable'}` });
      return undefined;
    },
  }),
);

const flush = () => {
  batch.bytes = parser.info.bytes;
  post({ type: 'batch', ...batch });
  batch = { records: [], skipped: [], rows: 0, bytes: 0 };
  if (--credit <= 0) parser.pause();
};

parser.pause();
port.on('message', (more: number) => {
  credit += more;
  if (credit > 0) parser.resume();
});
parser.on('data', (cells: string[]) => {
  if (header) {
    header = false; // read by the service when the file arrived
    return;
  }
  batch.rows++;
  const checked = check(rowInput(cells, columns));
  if (checked.ok) batch.records.push({ line, record: checked.record });
  else batch.skipped.push({ line, email: checked.email, reason: checked.reason });
  if (batch.rows >= BATCH_ROWS) flush();
});
parser.on('end', () => {
  if (batch.rows > 0) post({ type: 'batch', ...batch, bytes: parser.info.bytes });
  post({ type: 'end', bytes: parser.info.bytes });
  port.close();
});
parser.on('error', (error) => {
  if (batch.rows > 0) post({ type: 'batch', ...batch, bytes: parser.info.bytes });
  const reason = `The file could not be read from here on: ${error instanceof Error ? error.message : String(error)}`;
  post({ type: 'end', bytes: parser.info.bytes, broken: { line: parser.info.lines, email: null, reason } });
  port.close();
});
