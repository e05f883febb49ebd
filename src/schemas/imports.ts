// Schemas of CSV import jobs: the upload's query, a job, pages of jobs, and the preview of a file.
import * as v from 'valibot';
import { CSV_FIELDS, IMPORT_JOB_STATUSES, PREVIEW_BYTES, PREVIEW_RECORDS, type ColumnMapping } from '../domain/imports.ts';
import { Counter, Email, MAX_COUNTER, Page, PositiveParam, Timestamp, TrimmedText } from './common.ts';
import { CustomerStatus, OnExisting } from './customers.ts';

const COLUMNS_RULE = `a JSON object from header names (trimmed, without case) to field names (${CSV_FIELDS.join(', ')}) or null`;

const COLUMNS_EXAMPLE = '{"Mail":"email","Notes":null}';

/**
 * `columns`: a JSON object from header names to the field each column holds, or null to ignore it, applied before
 * the built-in names and aliases; parsed into a Map so any name ("__proto__" too) is an ordinary key. Two keys naming
 * one header, keys that name no header of the file, and two headers for one field are refused against the file's
 * header row (mapColumns). The description comes before the transform: the OpenAPI converter stops reading a pipe there.
 */
const ColumnsParam = v.pipe(
  v.string(),
  v.description(
    `How to read some columns: ${COLUMNS_RULE}, such as ${COLUMNS_EXAMPLE}; applied before the built-in names and aliases. ` +
      'A key that names no header, two keys naming one header, or two headers for one field, is 400.',
  ),
  v.metadata({ examples: [COLUMNS_EXAMPLE, '{"Mail":"email","Spent (EUR)":"totalAmountSpent","Notes":null}'] }),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(dataset.value);
    } catch {
      parsed = undefined;
    }
    const fields: readonly unknown[] = CSV_FIELDS;
    // Object.entries keeps an own "__proto__" key, which JSON.parse makes; nothing here assigns into a plain object.
    const entries = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? Object.entries(parsed) : undefined;
    if (!entries?.every(([, field]) => field === null || fields.includes(field))) {
      addIssue({ message: `Must be ${COLUMNS_RULE}, such as ${COLUMNS_EXAMPLE}.` });
      return NEVER;
    }
    return new Map(entries as [string, (typeof CSV_FIELDS)[number] | null][]) satisfies ColumnMapping;
  }),
);

export const ImportUploadQuery = v.object({
  fileName: v.optional(v.pipe(TrimmedText(1, 255), v.description('The name of the uploaded file, shown with the job.'))),
  columns: v.optional(ColumnsParam),
  onExisting: v.optional(OnExisting, 'skip'),
});

export const ImportPreviewQuery = v.object({
  columns: v.optional(ColumnsParam),
  onExisting: v.optional(OnExisting, 'skip'),
});

export const ImportPreview = v.object({
  columns: v.pipe(
    v.array(v.object({ header: v.string(), field: v.nullable(v.picklist(CSV_FIELDS)) })),
    v.description('Every header of the file, in order, with the field its column will be read as; null for a column that is ignored.'),
  ),
  rows: v.pipe(
    v.array(
      v.object({
        line: v.pipe(v.number(), v.integer(), v.minValue(2), v.description('The line the record starts on; the header is line 1.')),
        name: v.string(),
        email: Email,
        country: v.string(),
        totalTransactions: Counter,
        totalAmountSpent: v.pipe(v.number(), v.minValue(0)),
        lastActivityDate: Timestamp,
        status: CustomerStatus,
        existing: v.pipe(v.boolean(), v.description('A customer with this email is stored: with onExisting=update the row replaces its fields.')),
      }),
    ),
    v.description(
      `The valid records among the first ${PREVIEW_RECORDS} after the header, as they would be stored (trimmed, the email lower-cased, ` +
        'amounts rounded to cents, dates in UTC); a customer without its id.',
    ),
  ),
  problems: v.pipe(
    v.array(v.object({ line: v.pipe(v.number(), v.integer(), v.minValue(2)), email: v.nullable(v.string()), reason: v.string() })),
    v.description(`The records among the first ${PREVIEW_RECORDS} the job would skip, with their first line and the reason it would give in failures.csv.`),
  ),
});

/** The preview's note on how much of the file is read. */
export const PREVIEW_NOTE = `Only the first ${PREVIEW_BYTES / 1024} KB of the body are read; a record they cut is left out. Nothing is stored.`;

export const ImportJob = v.strictObject({
  id: v.string(),
  status: v.pipe(
    v.picklist(IMPORT_JOB_STATUSES),
    v.description('`running` from upload until the last row (jobs wait their turn, oldest first); `interrupted` when the service stopped during it.'),
  ),
  fileName: v.optional(v.string()),
  bytesRead: v.pipe(Counter, v.description('Bytes of the file read so far: with its size, the progress.')),
  rowsRead: v.pipe(Counter, v.description('Rows read so far, the header not counted; imported + updated + skipped.')),
  imported: v.pipe(Counter, v.description('Rows stored as new customers.')),
  updated: v.pipe(Counter, v.description('Rows that replaced the fields of a stored customer with the same email (onExisting=update); 0 when skipping.')),
  skipped: v.pipe(Counter, v.description('Rows not stored; each is a line of failures.csv. imported + updated + skipped = rowsRead.')),
  onExisting: v.pipe(OnExisting, v.description('What the job does with a row whose email is stored.')),
  ignoredColumns: v.pipe(v.array(v.string()), v.description('Header names that match no customer field; their cells are not read.')),
  startedAt: Timestamp,
  finishedAt: v.optional(Timestamp),
  createdBy: v.pipe(v.string(), v.description('The id of the user who uploaded the file.')),
});

/** The body of failures.csv, for the route table; the document describes the file by its media type. */
export const FailuresCsv = v.pipe(v.string(), v.description('line,email,reason'));

export const ImportJobListQuery = v.object({ page: PositiveParam(MAX_COUNTER, 1), limit: PositiveParam(200, 20) });

export const ImportJobPage = Page(ImportJob);
