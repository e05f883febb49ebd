// The header row of an imported CSV file: which column holds which customer field, by name or a common alias,
// compared without case, spaces, underscores or hyphens; and a row's cells turned into the fields customers.import
// takes, so one check serves both imports.

/** The customer fields a CSV column can hold. */
export const CSV_FIELDS = ['name', 'email', 'country', 'totalTransactions', 'totalAmountSpent', 'lastActivityDate', 'status'] as const;
export type CsvField = (typeof CSV_FIELDS)[number];

/** Each field's column index in the file. */
export type ColumnMap = Partial<Record<CsvField, number>>;

const key = (name: string) => name.trim().toLowerCase().replace(/[\s_\-]+/g, '');

// Keys as `key()` makes them: "Full Name", "full_name" and "fullname" are one.
const ALIASES: Record<string, CsvField> = {
  name: 'name',
  fullname: 'name',
  customername: 'name',
  email: 'email',
  emailaddress: 'email',
  mail: 'email',
  country: 'country',
  totaltransactions: 'totalTransactions',
  transactions: 'totalTransactions',
  orders: 'totalTransactions',
  totalorders: 'totalTransactions',
  totalamountspent: 'totalAmountSpent',
  totalspent: 'totalAmountSpent',
  amountspent: 'totalAmountSpent',
  amount: 'totalAmountSpent',
  lastactivitydate: 'lastActivityDate',
  lastactivity: 'lastActivityDate',
  lastactivityat: 'lastActivityDate',
  status: 'status',
};

/** Returns which column holds each field (the first column naming a field wins) and the header names left over. */
export function mapColumns(header: readonly string[]): { columns: ColumnMap; ignored: string[] } {
  const columns: ColumnMap = {};
  const ignored: string[] = [];
  header.forEach((name, index) => {
    const field = ALIASES[key(name)];
    if (field && columns[field] === undefined) columns[field] = index;
    else ignored.push(name);
  });
  return { columns, ignored };
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
  for (const field of CSV_FIELDS) {
    const index = columns[field];
    const cell = index === undefined ? undefined : cells[index]?.trim();
    if (!cell) continue;
    if (field === 'totalTransactions' || field === 'totalAmountSpent') {
      const plain = cell.replace(DECIMAL_COMMA, '$1.$2');
      input[field] = NUMBER.test(plain) ? Number(plain) : cell;
    }
    else input[field] = field === 'status' ? cell.toLowerCase() : cell;
  }
  return input;
}
