// CSV imports as the API describes them: the fields a column can hold, the states of a job, and how much of a file a
// preview reads. Here, not in src/customers/, so the request schemas can name them without importing a feature.

/** The customer fields a CSV column can hold. */
export const CSV_FIELDS = ['name', 'email', 'country', 'totalTransactions', 'totalAmountSpent', 'lastActivityDate', 'status'] as const;
export type CsvField = (typeof CSV_FIELDS)[number];

/**
 * What a client says of some header names, keyed as it wrote them (no two the same header): the field each holds,
 * or null for a column to ignore. Applied before the built-in names and aliases. A Map, so any name (even
 * "__proto__") is an ordinary key.
 */
export type ColumnMapping = ReadonlyMap<string, CsvField | null>;

/** The states of an import job: `interrupted` when the service stopped during it. */
export const IMPORT_JOB_STATUSES = ['running', 'completed', 'failed', 'interrupted'] as const;
export type ImportJobStatus = (typeof IMPORT_JOB_STATUSES)[number];

/** Only this much of a previewed upload is read; a record it cuts is left out. */
export const PREVIEW_BYTES = 64 * 1024;
/** Records a preview shows. */
export const PREVIEW_RECORDS = 10;
