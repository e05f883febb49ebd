// The header row of an imported CSV file: which column holds which customer field, by name or a common alias,
// compared without case, spaces, underscores or hyphens; and a row's cells turned into the fields customers.import
// takes, so one check serves both imports.
import { parse } from 'csv-parse/sync';
import { invalidField } from '../../domain/errors.ts';
import type { ColumnMapping, CsvField } from '../../domain/imports.ts';
import { CUSTOMER_FIELDS, type CustomerField, type FieldKind } from '../store/fields.ts';

export type { ColumnMapping, CsvField };

/** Each field's column index in the file. */
export type ColumnMap = Partial<Record<CsvField, number>>;

const key = (name: string) => name.trim().toLowerCase().replace(/[\s_\-]+/g, '');

/** Returns what makes two header names (or `columns` keys) name the same header: trimmed, without case. */
export const sameHeader = (name: string) => name.trim().toLowerCase();

/**
 * Each header name (as `key()` makes it: "Full Name", "full_name" and "fullname" are one) a field is read from, as the
 * declaration lists them. A Map, so a header such as "constructor" or "__proto__" finds no property of a plain object.
 */
const ALIASES: ReadonlyMap<string, CsvField> = aliasesOf(CUSTOMER_FIELDS);

/** Returns every field's aliases as one map; throws at start-up when two fields claim one name. */
function aliasesOf(fields: readonly CustomerField[]): Map<string, CsvField> {
  const aliases = new Map<string, CsvField>();
  for (const field of fields) {
    for (const alias of field.aliases) {
      if (aliases.has(alias)) throw new Error(`The CSV header "${alias}" is declared for both ${aliases.get(alias)} and ${field.api}.`);
      aliases.set(alias, field.api);
    }
  }
  return aliases;
}

/** Returns the phrase naming `columns` keys the header lacks: each quoted as written (trimmed), or "an empty name". */
function missingNames(written: readonly string[]): string {
  const quoted = written.filter((name) => name !== '').map((name) => `"${name}"`);
  const empty = quoted.length < written.length;
  if (quoted.length === 0) return 'No column of the file has an empty name.';
  return `No column of the file is named ${quoted.join(', ')}${empty ? ', and none has an empty name' : ''}.`;
}

/**
 * Returns which column holds each field, the field each header is read as (null: ignored), and the header names left
 * over. `mapping` goes first; then the first column naming a field by name or alias takes it. Throws
 * `validation_failed` on `columns` for a mapping key that names no header, two keys naming one header, or a field two
 * headers would hold.
 */
export function mapColumns(header: readonly string[], mapping: ColumnMapping = new Map()): { columns: ColumnMap; fields: (CsvField | null)[]; ignored: string[] } {
  const columns: ColumnMap = {};
  const fields: (CsvField | null)[] = header.map(() => null);
  const chosen = new Map<string, { written: string; field: CsvField | null }>();
  for (const [name, field] of mapping) {
    const earlier = chosen.get(sameHeader(name));
    if (earlier) throw invalidField('columns', `"${earlier.written}" and "${name.trim()}" name the same header: keep one of them.`);
    chosen.set(sameHeader(name), { written: name.trim(), field });
  }
  const named = new Set<string>();
  header.forEach((name, index) => {
    const wanted = chosen.get(sameHeader(name))?.field;
    if (wanted === undefined) return;
    named.add(sameHeader(name));
    if (wanted === null) return;
    if (columns[wanted] !== undefined) {
      throw invalidField('columns', `Two columns (${header[columns[wanted]!]} and ${name}) would both be read as ${wanted}: map one of them to another field or to null.`);
    }
    columns[wanted] = index;
    fields[index] = wanted;
  });
  const unknown = [...chosen].filter(([name]) => !named.has(name)).map(([, { written }]) => written);
  if (unknown.length > 0) throw invalidField('columns', missingNames(unknown));
  header.forEach((name, index) => {
    if (chosen.has(sameHeader(name))) return;
    const field = ALIASES.get(key(name));
    if (field && columns[field] === undefined) {
      columns[field] = index;
      fields[index] = field;
    }
  });
  return { columns, fields, ignored: header.filter((_, index) => fields[index] === null) };
}

const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
// "120,50" as written where the comma is the decimal mark; "1,250" stays text (a thousands separator, or a typo).
const DECIMAL_COMMA = /^(\d+),(\d{1,2})$/;

/**
 * Returns a row's cells as customers.import takes them: a blank cell is a missing field, numbers become numbers (a
 * decimal comma too; a cell that is not one stays text, and the check says so), status is compared without case.
 */
export function rowInput(cells: readonly string[], columns: ColumnMap): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const { api, kind } of CUSTOMER_FIELDS) {
    const index = columns[api];
    const cell = index === undefined ? undefined : cells[index]?.trim();
    if (cell) input[api] = cellValue(kind, cell);
  }
  return input;
}

/** Returns a non-blank cell as the input of a field of the kind: a number for a count or an amount, a status in lower case. */
function cellValue(kind: FieldKind, cell: string): unknown {
  if (kind === 'count' || kind === 'cents') {
    const plain = cell.replace(DECIMAL_COMMA, '$1.$2');
    return NUMBER.test(plain) ? Number(plain) : cell;
  }
  return kind === 'status' ? cell.toLowerCase() : cell;
}

/** The header row must end within this many bytes. */
export const HEADER_LIMIT = 64 * 1024;

/**
 * Returns the header row found at the start of `head` (the first bytes of a file) and how its columns are read (see
 * `mapColumns`). Throws `validation_failed` on `body` for a first line that is no CSV header row naming an email
 * column, or longer than HEADER_LIMIT, and on `columns` for a mapping that does not fit the header.
 */
export function readHeader(head: Buffer, mapping?: ColumnMapping): { header: string[] } & ReturnType<typeof mapColumns> {
  const lineEnd = head.indexOf(0x0a);
  if ((lineEnd < 0 ? head.length : lineEnd) > HEADER_LIMIT) {
    throw invalidField('body', `The first line is longer than ${HEADER_LIMIT} bytes: it must be a header row naming the columns.`);
  }
  const header = headerCells(head.subarray(0, lineEnd < 0 ? head.length : lineEnd));
  const mapped = mapColumns(header, mapping);
  if (mapped.columns.email === undefined) {
    const named = header.length ? ` (it names ${header.slice(0, 20).join(', ')})` : '';
    throw invalidField('body', `The header row has no email column${named}; email is required, the other fields are matched by name.`);
  }
  return { header, ...mapped };
}

/** Returns the cells of the header line; throws `validation_failed` on `body` when it is not a CSV row. */
function headerCells(line: Buffer): string[] {
  try {
    const [cells] = parse(line, { bom: true, relax_quotes: true }) as string[][];
    return (cells ?? []).map((cell) => cell.trim()).filter((cell, i, all) => cell !== '' || i < all.length - 1);
  } catch {
    throw invalidField('body', 'The first line is not a CSV header row.');
  }
}
