// @ts-check
// Reading a customers CSV in the page: RFC 4180 fields (quoted fields with commas, line breaks and doubled quotes),
// a header row matched to the API's field names, numbers turned into numbers. Judging the values is the service's job.

/**
 * Returns the rows of a CSV text as arrays of fields. Accepts CRLF or LF, a byte-order mark, and `;` as the
 * separator when the first line has semicolons but no commas (spreadsheets in many locales write that).
 * @param {string} text
 * @returns {string[][]}
 */
export function parseCsv(text) {
  const source = text.replace(/^\uFEFF/, '');
  const firstLine = source.slice(0, source.search(/\r?\n|$/));
  const separator = !firstLine.includes(',') && firstLine.includes(';') ? ';' : ',';
  /** @type {string[][]} */
  const rows = [];
  /** @type {string[]} */
  let row = [];
  let value = '';
  let quoted = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (quoted) {
      if (char === '"' && source[i + 1] === '"') {
        value += '"';
        i++;
      } else if (char === '"') {
        quoted = false;
      } else {
        value += char;
      }
    } else if (char === '"' && value === '') {
      quoted = true;
    } else if (char === separator) {
      row.push(value);
      value = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && source[i + 1] === '\n') i++;
      row.push(value);
      rows.push(row);
      row = [];
      value = '';
    } else {
      value += char;
    }
  }
  if (value !== '' || row.length) {
    row.push(value);
    rows.push(row);
  }
  return rows.filter((fields) => fields.some((field) => field.trim() !== ''));
}

/** The API's customer fields and the header names each is recognised by (compared without case, spaces or punctuation). */
const COLUMNS = /** @type {const} */ ({
  name: ['name', 'fullname', 'customername', 'customer'],
  email: ['email', 'emailaddress', 'mail'],
  country: ['country'],
  totalTransactions: ['totaltransactions', 'transactions', 'orders'],
  totalAmountSpent: ['totalamountspent', 'amountspent', 'totalspent', 'spent', 'ltv'],
  lastActivityDate: ['lastactivitydate', 'lastactivity', 'lastactive', 'lastseen'],
  status: ['status'],
});

/** @typedef {keyof typeof COLUMNS} CustomerColumn */
const NUMERIC = new Set(['totalTransactions', 'totalAmountSpent']);

/**
 * Matches the header row to the customer fields. Returns the column index of each field found and the fields missing.
 * @param {string[]} header
 */
export function mapColumns(header) {
  const normalised = header.map((name) => name.toLowerCase().replace(/[^a-z0-9]/g, ''));
  /** @type {Partial<Record<CustomerColumn, number>>} */
  const indexes = {};
  /** @type {CustomerColumn[]} */
  const missing = [];
  for (const [field, names] of /** @type {[CustomerColumn, readonly string[]][]} */ (Object.entries(COLUMNS))) {
    const index = normalised.findIndex((name) => names.includes(name));
    if (index === -1) missing.push(field);
    else indexes[field] = index;
  }
  return { indexes, missing };
}

/**
 * Turns data rows into customer objects for the import: text trimmed, amounts with a decimal comma accepted, and a
 * value that is not a number left as written so the service reports it on that row.
 * @param {string[][]} rows
 * @param {Partial<Record<CustomerColumn, number>>} indexes
 * @returns {Record<string, unknown>[]}
 */
export function toCustomers(rows, indexes) {
  return rows.map((fields) => {
    /** @type {Record<string, unknown>} */
    const customer = {};
    for (const [field, index] of Object.entries(indexes)) {
      const raw = (fields[/** @type {number} */ (index)] ?? '').trim();
      customer[field] = NUMERIC.has(field) ? toNumber(raw) : raw;
    }
    return customer;
  });
}

/** @param {string} raw */
function toNumber(raw) {
  const plain = raw.replace(/^(\d+),(\d{1,2})$/, '$1.$2');
  return /^[+-]?\d+(\.\d+)?$/.test(plain) ? Number(plain) : raw;
}

/** The header names to tell a person whose file lacks a column. */
export const EXPECTED_HEADER = Object.keys(COLUMNS).join(',');

/**
 * Splits a list into batches of at most `size`.
 * @template T
 * @param {T[]} items
 * @param {number} size
 */
export function batches(items, size) {
  /** @type {T[][]} */
  const out = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
