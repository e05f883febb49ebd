// A look at a CSV file before its job: how each header will be read, its first records as they would be stored, and
// what is wrong among them, read from the first PREVIEW_BYTES of the upload with the same column mapping, row rules
// and reasons as the job. Stores nothing.
import { parse, type Options } from 'csv-parse/sync';
import type { Clock } from '../../domain/clock.ts';
import type { AppError } from '../../domain/errors.ts';
import type { Customer } from '../../domain/customers.ts';
import { PREVIEW_BYTES, PREVIEW_RECORDS } from '../../domain/imports.ts';
import { customerFields } from '../store/fields.ts';
import type { OnExisting } from '../store/writes.ts';
import { readHeader, rowInput, type ColumnMapping, type CsvField } from './csv-columns.ts';
import { duplicateReason, repeatedReason, unreadableReason } from './reasons.ts';
import { recordLines } from './record-lines.ts';
import { rowChecker } from './row-check.ts';
import type { SkippedRow } from './job-store.ts';

/** A record as it would be stored: the customer's fields (no id yet), its line, and whether it updates a stored customer. */
export type PreviewRow = Omit<Customer, 'id'> & { line: number; existing: boolean };

/** What the preview answers. */
export interface CsvPreview {
  columns: { header: string; field: CsvField | null }[];
  rows: PreviewRow[];
  problems: SkippedRow[];
}

export interface PreviewOptions {
  maxBytes: number;
  /** Whether the upload's length was declared (and within `maxBytes`): else only its end tells whether it is too large. */
  lengthKnown: boolean;
  tooLarge: () => AppError;
  clock: Clock;
  columns: ColumnMapping | undefined;
  onExisting: OnExisting;
  /** Which of the emails are stored already. */
  emailsStored: (emails: readonly string[]) => Promise<Set<string>>;
}

/**
 * Reads the upload only until it has PREVIEW_BYTES and one byte more (to tell whether a record was cut), then lets go
 * of `body` (its `return()`, so the caller can discard the rest); returns the preview of those bytes. A body whose
 * length was not declared is read to its end first, its size counted and the rest dropped, as only then can it be 413. Throws
 * `payload_too_large` when what it reads passes `maxBytes`, and `validation_failed` as a job's header does.
 */
export async function previewCsv(body: AsyncIterator<Buffer>, options: PreviewOptions): Promise<CsvPreview> {
  const kept: Buffer[] = [];
  let size = 0;
  try {
    while (size <= PREVIEW_BYTES) {
      const next = await body.next();
      if (next.done) break;
      size += next.value.length;
      if (size > options.maxBytes) throw options.tooLarge();
      kept.push(next.value);
    }
    // A body of undeclared length is read to its end (the rest uncounted but its size), so one over the limit is 413.
    if (!options.lengthKnown && size > PREVIEW_BYTES) {
      for (let next = await body.next(); !next.done; next = await body.next()) {
        size += next.value.length;
        if (size > options.maxBytes) throw options.tooLarge();
      }
    }
  } finally {
    await body.return?.();
  }
  const all = Buffer.concat(kept);
  const head = all.subarray(0, PREVIEW_BYTES);
  const { header, columns, fields } = readHeader(head, options.columns);
  const records = firstRecords(head, all.length > head.length);

  const check = rowChecker(options.clock);
  const checked = records.map((record) => {
    if ('reason' in record) return record;
    const result = check(rowInput(record.cells, columns));
    return result.ok ? { line: record.line, record: result.record } : { line: record.line, email: result.email, reason: result.reason };
  });
  const stored = await options.emailsStored(checked.flatMap((c) => ('record' in c ? [c.record.email] : [])));
  const seen = new Set<string>();
  const rows: PreviewRow[] = [];
  const problems: SkippedRow[] = [];
  for (const c of checked) {
    if (!('record' in c)) {
      problems.push(c);
      continue;
    }
    const { line, record } = c;
    const existing = stored.has(record.email);
    // As the job decides: skipping, a stored or repeated email is taken; updating, only a repeat is.
    if (seen.has(record.email)) problems.push({ line, email: record.email, reason: options.onExisting === 'update' ? repeatedReason(record.email) : duplicateReason(record.email) });
    else if (existing && options.onExisting === 'skip') problems.push({ line, email: record.email, reason: duplicateReason(record.email) });
    else {
      rows.push({ line, ...customerFields(record), existing });
    }
    seen.add(record.email);
  }
  return { columns: header.map((name, i) => ({ header: name, field: fields[i] ?? null })), rows, problems };
}

type ReadRecord = { line: number; cells: string[]; bytes: number } | SkippedRow;

/** Returns the first PREVIEW_RECORDS records after the header (or the line and reason of one that cannot be read). */
function firstRecords(head: Buffer, cut: boolean): ReadRecord[] {
  const firstLine = recordLines();
  const events: ReadRecord[] = [];
  const options: Options<ReadRecord, string[]> = {
    bom: true,
    relax_quotes: true,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    // The header and PREVIEW_RECORDS records, and one more to tell a last record the cut left whole.
    to: PREVIEW_RECORDS + 2,
    on_record: (cells, context) => {
      const record = { cells, line: firstLine(cells, context.lines), bytes: context.bytes };
      events.push(record);
      return record;
    },
    on_skip: (error) => {
      const line = firstLine.afterLast();
      if (events.at(-1)?.line === line) return;
      events.push({ line, email: null, reason: unreadableReason(error?.code) });
    },
  };
  // parse()'s typings only know records that stay arrays of cells.
  parse(head, options as unknown as Options);
  const last = events.at(-1);
  // The record the cut went through: the last one read, unless it ended with its line break right at the cut.
  if (cut && last) {
    const ended = 'cells' in last && (last.bytes < head.length || head.at(-1) === 0x0a || head.at(-1) === 0x0d);
    if (!ended) events.pop();
  }
  return events.slice(1, PREVIEW_RECORDS + 1);
}
