// Schemas of CSV import jobs: the upload's query, a job, and pages of jobs.
import * as v from 'valibot';
import { IMPORT_JOB_STATUSES } from '../customers/index.ts';
import { Counter, MAX_COUNTER, Timestamp, TrimmedText } from './common.ts';

export const ImportUploadQuery = v.object({
  fileName: v.optional(v.pipe(TrimmedText(1, 255), v.description('The name of the uploaded file, shown with the job.'))),
});

export const ImportJob = v.strictObject({
  id: v.string(),
  status: v.pipe(
    v.picklist(IMPORT_JOB_STATUSES),
    v.description('`running` from upload until the last row (jobs wait their turn, oldest first); `interrupted` when the service stopped during it.'),
  ),
  fileName: v.optional(v.string()),
  bytesRead: v.pipe(Counter, v.description('Bytes of the file read so far: with its size, the progress.')),
  rowsRead: v.pipe(Counter, v.description('Rows read so far, the header not counted; imported + skipped.')),
  imported: Counter,
  skipped: v.pipe(Counter, v.description('Rows not stored; each is a line of failures.csv.')),
  ignoredColumns: v.pipe(v.array(v.string()), v.description('Header names that match no customer field; their cells are not read.')),
  startedAt: Timestamp,
  finishedAt: v.optional(Timestamp),
  createdBy: v.pipe(v.string(), v.description('The id of the user who uploaded the file.')),
});

const positive = (max: number, fallback: number) =>
  v.optional(v.pipe(v.number(), v.integer('Must be a whole number.'), v.minValue(1, 'Must be at least 1.'), v.maxValue(max, `Must be at most ${max}.`)), fallback);

/** The body of failures.csv, for the route table; the document describes the file by its media type. */
export const FailuresCsv = v.pipe(v.string(), v.description('line,email,reason'));

export const ImportJobListQuery = v.object({ page: positive(MAX_COUNTER, 1), limit: positive(200, 20) });

export const ImportJobPage = v.object({
  items: v.array(ImportJob),
  total: Counter,
  page: v.pipe(v.number(), v.integer(), v.minValue(1)),
  limit: v.pipe(v.number(), v.integer(), v.minValue(1)),
});
