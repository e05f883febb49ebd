// The customer's fields, declared once: for each, its name in the API, its column in the customers table, the kind
// of value it holds (which gives the column's SQL type, how a CSV job reads its cell, how a packed row carries it and
// how the API and the exports show it), its header in an export and the headers a CSV job reads as it. Every path
// that goes field by field (the INSERT and UPDATE and their binds, the bulk load, the export's SELECT and lines, the
// checked record, a CSV job's headers and packed rows, the DTO) is derived from this list: a field declared here
// reaches all of them, and a field of CustomerRecord or Customer that is not declared here does not compile.
import { countryKey, type Customer, type CustomerRecord, type CustomerStatus } from '../../domain/customers.ts';
import type { CsvField } from '../../domain/imports.ts';

/**
 * What a field holds. `text`: any characters (so a packed row gives its length); `email`: a checked address (never a
 * NUL); `status`: one of CUSTOMER_STATUSES; `count`: a whole number; `cents`: money in cents, shown in units;
 * `instant`: epoch milliseconds, shown as an ISO 8601 UTC date-time.
 */
export type FieldKind = 'text' | 'email' | 'status' | 'count' | 'cents' | 'instant';

/** The kinds a stored value of type T may have. */
type KindOf<T> = T extends CustomerStatus ? 'status' : T extends string ? 'text' | 'email' : 'count' | 'cents' | 'instant';

/** A field of Customer, the API's names (also the JSON import's and a CSV job's `columns` mapping's). */
export type ApiField = Exclude<keyof Customer, 'id'>;

interface Declared<K extends keyof CustomerRecord> {
  api: ApiField;
  column: string;
  kind: KindOf<CustomerRecord[K]>;
  /** The column's header in an export, and the attribute's name in listmonk's format. */
  exportHeader: string;
  /** The headers a CSV job reads as this field, as csv-columns.ts compares them: no case, spaces, underscores or hyphens. */
  aliases: readonly string[];
}

// In the API's order: a Customer's keys, a preview row's and the documented field lists follow it.
const DECLARED = {
  name: { api: 'name', column: 'name', kind: 'text', exportHeader: 'name', aliases: ['name', 'fullname', 'customername'] },
  email: { api: 'email', column: 'email', kind: 'email', exportHeader: 'email', aliases: ['email', 'emailaddress', 'mail'] },
  country: { api: 'country', column: 'country', kind: 'text', exportHeader: 'country', aliases: ['country'] },
  totalTransactions: {
    api: 'totalTransactions',
    column: 'total_transactions',
    kind: 'count',
    exportHeader: 'total_transactions',
    aliases: ['totaltransactions', 'transactions', 'orders', 'totalorders'],
  },
  amountCents: {
    api: 'totalAmountSpent',
    column: 'amount_cents',
    kind: 'cents',
    exportHeader: 'total_amount_spent',
    aliases: ['totalamountspent', 'totalspent', 'amountspent', 'amount'],
  },
  lastActivityAt: {
    api: 'lastActivityDate',
    column: 'last_activity_at',
    kind: 'instant',
    exportHeader: 'last_activity_date',
    aliases: ['lastactivitydate', 'lastactivity', 'lastactivityat'],
  },
  status: { api: 'status', column: 'status', kind: 'status', exportHeader: 'status', aliases: ['status'] },
} as const satisfies { [K in keyof CustomerRecord]: Declared<K> };

type Declaration = typeof DECLARED;

/** The order of an export's columns: email and name first, as listmonk's subscriber import takes them. */
const EXPORT_ORDER = ['email', 'name', 'country', 'status', 'amountCents', 'totalTransactions', 'lastActivityAt'] as const;

// Compile-time checks: every field of Customer (but its id) and every field a CSV column can hold is declared under
// one name, and the export has a column for every field.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type ApiNames = Declaration[keyof Declaration]['api'];
const covered: [Same<ApiNames, ApiField>, Same<ApiNames, CsvField>, Same<(typeof EXPORT_ORDER)[number], keyof CustomerRecord>] = [true, true, true];
void covered;

/** One declared field. */
export interface CustomerField {
  /** Its name in CustomerRecord and StoredCustomer (money in cents, time in epoch ms). */
  key: keyof CustomerRecord;
  api: ApiField;
  column: string;
  /** The column's type in schema.sql. */
  sqlType: 'TEXT' | 'INTEGER';
  kind: FieldKind;
  exportHeader: string;
  aliases: readonly string[];
}

/** Returns the SQL type of a column holding values of the kind. */
const sqlTypeOf = (kind: FieldKind): 'TEXT' | 'INTEGER' => (kind === 'text' || kind === 'email' || kind === 'status' ? 'TEXT' : 'INTEGER');

/** Every field of a customer, in the API's order. */
export const CUSTOMER_FIELDS: readonly CustomerField[] = (Object.keys(DECLARED) as (keyof Declaration)[]).map((key) => ({
  key,
  ...DECLARED[key],
  sqlType: sqlTypeOf(DECLARED[key].kind),
}));

/** Columns of the customers table that no field declares: the id, the country as filters compare it, the time stamps. */
export const INTERNAL_COLUMNS = ['id', 'country_key', 'created_at', 'updated_at'] as const;

/** A customers row as `SELECT *` reads it (time stamps left out): the id, the country key and every field's column. */
export type CustomerRow = { [K in keyof Declaration as Declaration[K]['column']]: CustomerRecord[K] } & { id: number; country_key: string };

/**
 * Returns a function compiled from JavaScript written out of the declaration, for the paths that run once per row
 * (a bulk load, a CSV job, a page of customers): straight-line code as fast as the hand-written code it replaced,
 * where a loop over the fields ran two to five times slower. `scope` holds what the body may call.
 */
export function compiled<F>(name: string, params: readonly string[], body: string, scope: Record<string, unknown> = {}): F {
  const make = new Function(...Object.keys(scope), `return function ${name}(${params.join(', ')}) {\n${body}\n};`);
  return make(...Object.values(scope)) as F;
}

/** Returns the JavaScript reading `key` of the object `object` names. */
export const read = (object: string, key: string): string => `${object}[${JSON.stringify(key)}]`;

/** Returns the JavaScript of a stored value (the expression `value`, of the kind) as the API shows it. */
function shownSource(kind: FieldKind, value: string): string {
  if (kind === 'cents') return `${value} / 100`;
  if (kind === 'instant') return `new Date(${value}).toISOString()`;
  return value;
}

/** Returns a stored value as the API shows it: cents in units, an instant as an ISO 8601 UTC date-time, others as they are. */
export function shownValue(kind: FieldKind, value: string | number): string | number {
  if (kind === 'cents') return (value as number) / 100;
  if (kind === 'instant') return new Date(value).toISOString();
  return value;
}

/** Returns the JavaScript of an object literal: `first` entries, then each field under its API name as the API shows it. */
const apiObjectSource = (first: string, value: (f: CustomerField) => string) =>
  `return { ${first}${CUSTOMER_FIELDS.map((f) => `${JSON.stringify(f.api)}: ${shownSource(f.kind, value(f))}`).join(', ')} };`;

const INSERT_COLUMN_NAMES = [...CUSTOMER_FIELDS.map((f) => f.column), 'country_key', 'created_at', 'updated_at'];

/** The column list of an INSERT of customers, in the order `bindInsert` writes the values. */
export const INSERT_COLUMNS = `(${INSERT_COLUMN_NAMES.join(', ')})`;

/** Values `bindInsert` writes per customer. */
export const INSERT_WIDTH = INSERT_COLUMN_NAMES.length;

/** Returns the VALUES of an INSERT of `rows` customers: one `(?, ...)` group each. */
export function insertPlaceholders(rows: number): string {
  return Array(rows).fill(`(${Array(INSERT_WIDTH).fill('?').join(', ')})`).join(', ');
}

/**
 * Writes the record's values for INSERT_COLUMNS (its fields, its country key, `at` as creation and update time) into
 * `values` from `offset`; returns `values`.
 */
export const bindInsert = compiled<(values: unknown[], offset: number, r: CustomerRecord, at: number) => unknown[]>(
  'bindInsert',
  ['values', 'offset', 'r', 'at'],
  [
    ...CUSTOMER_FIELDS.map((f, i) => `values[offset + ${i}] = ${read('r', f.key)};`),
    `values[offset + ${CUSTOMER_FIELDS.length}] = countryKey(r.country);`,
    `values[offset + ${CUSTOMER_FIELDS.length + 1}] = at;`,
    `values[offset + ${CUSTOMER_FIELDS.length + 2}] = at;`,
    'return values;',
  ].join('\n'),
  { countryKey },
);

/** The SET list of an UPDATE of one customer from named parameters: a StoredCustomer's keys, and `now`. */
export const UPDATE_ASSIGNMENTS = [...CUSTOMER_FIELDS.map((f) => `${f.column} = @${f.key}`), 'country_key = @countryKey', 'updated_at = @now'].join(', ');

/** Whether the two hold the same value in every field. */
export const sameFields = compiled<(a: CustomerRecord, b: CustomerRecord) => boolean>(
  'sameFields',
  ['a', 'b'],
  `return ${CUSTOMER_FIELDS.map((f) => `${read('a', f.key)} === ${read('b', f.key)}`).join(' && ')};`,
);

/** Returns a stored record's fields as the API shows them (every field of Customer but its id), in the API's order. */
export const customerFields = compiled<(record: CustomerRecord) => Omit<Customer, 'id'>>(
  'customerFields',
  ['record'],
  apiObjectSource('', (f) => read('record', f.key)),
);

/** Returns a customers row as the API shows the customer: its id, then every field in the API's order. */
export const customerOfRow = compiled<(row: CustomerRow) => Customer>(
  'customerOfRow',
  ['row'],
  apiObjectSource('id: String(row.id), ', (f) => read('row', f.column)),
);

/** Returns a customers row as a stored record with its id and country key. */
export const storedOfRow = compiled<(row: CustomerRow) => CustomerRecord & { id: number; countryKey: string }>(
  'storedOfRow',
  ['row'],
  `return { id: row.id, countryKey: row.country_key, ${CUSTOMER_FIELDS.map((f) => `${JSON.stringify(f.key)}: ${read('row', f.column)}`).join(', ')} };`,
);

/** Returns the fields a checked input holds (API names; amount in cents, date in epoch ms) under their stored names. */
export const recordOfInput = compiled<(input: Partial<Record<ApiField, unknown>>) => Partial<CustomerRecord>>(
  'recordOfInput',
  ['input'],
  [
    'const record = {};',
    ...CUSTOMER_FIELDS.map((f) => `if (${read('input', f.api)} !== undefined) ${read('record', f.key)} = ${read('input', f.api)};`),
    'return record;',
  ].join('\n'),
);

/** The fields of an export's columns, in the download's order. */
export const EXPORT_FIELDS: readonly CustomerField[] = EXPORT_ORDER.map((key) => CUSTOMER_FIELDS.find((f) => f.key === key)!);

/** The columns an export selects: the id, then EXPORT_FIELDS' columns. */
export const EXPORT_COLUMNS = ['id', ...EXPORT_FIELDS.map((f) => f.column)].join(', ');

/** One exported customer as stored, as the export reads it: its id, then EXPORT_FIELDS' values in their order. */
export type ExportRow = [id: number, ...ExportValues<typeof EXPORT_ORDER>];

/** The stored types of the fields named in T, in its order. */
type ExportValues<T extends readonly (keyof CustomerRecord)[]> = { -readonly [I in keyof T]: T[I] extends keyof CustomerRecord ? CustomerRecord[T[I]] : never };
