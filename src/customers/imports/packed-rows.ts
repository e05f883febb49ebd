// A checked row of a CSV job packed in one string, from the parser to the writer thread: a window of rows held as
// strings costs a tenth of the memory of objects, copies between threads fast, and sorts by email (then by line, so
// rows repeating an email keep their file order) with a plain string comparison.
import type { CustomerRecord } from '../../domain/customers.ts';
import { compiled, CUSTOMER_FIELDS, read, type CustomerField } from '../store/fields.ts';

const SEP = '\u0000';

/** Returns the piece of a template literal that packs a field of `r` after the email and line. */
function packedPiece({ key, kind }: CustomerField): string {
  const value = read('r', key);
  return kind === 'text' ? '${SEP}${' + value + '.length}${SEP}${' + value + '}' : '${SEP}${' + value + '}';
}

/**
 * Packs a row: email (checked, so it holds no NUL), line (10 digits), then each other field after a NUL, a text
 * after its length and a NUL, so that it may hold any character (numbers and statuses hold no NUL).
 */
export const packRow = compiled<(line: number, r: CustomerRecord) => string>(
  'packRow',
  ['line', 'r'],
  [
    "const packed = `${r.email}${SEP}${String(line).padStart(10, '0')}" + CUSTOMER_FIELDS.filter((f) => f.key !== 'email').map(packedPiece).join('') + '`;',
    // Reading a character makes V8 flatten the string built of many pieces into one: a window of rows kept as built
    // holds about four times the memory (the pieces, and the parsed cells they point into).
    'packed.charCodeAt(0);',
    'return packed;',
  ].join('\n'),
  { SEP },
);

/** The line and record of a packed row. */
export function unpackRow(packed: string): { line: number; record: CustomerRecord } {
  const emailEnd = packed.indexOf(SEP);
  const email = packed.slice(0, emailEnd);
  const line = Number(packed.slice(emailEnd + 1, emailEnd + 11));
  let at = emailEnd + 11;
  // Built in the declaration's order, as every other record is, so that they all share one shape.
  const record: Partial<Record<keyof CustomerRecord, unknown>> = {};
  for (const { key, kind, sqlType } of CUSTOMER_FIELDS) {
    if (key === 'email') {
      record.email = email;
      continue;
    }
    at++; // the NUL before the field
    if (kind === 'text') {
      const lengthEnd = packed.indexOf(SEP, at);
      at = lengthEnd + 1 + Number(packed.slice(at, lengthEnd));
      record[key] = packed.slice(lengthEnd + 1, at);
    } else {
      const found = packed.indexOf(SEP, at);
      const end = found < 0 ? packed.length : found;
      const text = packed.slice(at, end);
      record[key] = sqlType === 'INTEGER' ? Number(text) : text;
      at = end;
    }
  }
  return { line, record: record as CustomerRecord };
}
