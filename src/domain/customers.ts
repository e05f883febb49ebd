// Customers: their fields, money in cents, activity dates, and the aggregate formulas of product.md section 4.

export const CUSTOMER_STATUSES = ['active', 'inactive', 'churned'] as const;
export type CustomerStatus = (typeof CUSTOMER_STATUSES)[number];

/**
 * A customer as the API shows it: exactly these fields. A field added here (and to CustomerRecord) is declared once
 * more, in src/customers/store/fields.ts, which every path of the customer subsystem derives its field list from.
 */
export interface Customer {
  id: string;
  name: string;
  email: string;
  country: string;
  totalTransactions: number;
  totalAmountSpent: number;
  lastActivityDate: string;
  status: CustomerStatus;
}

/** A validated customer as stored: money in cents, time in epoch milliseconds. */
export interface CustomerRecord {
  name: string;
  email: string;
  country: string;
  totalTransactions: number;
  amountCents: number;
  lastActivityAt: number;
  status: CustomerStatus;
}

/** The orders of customers.list. */
export const CUSTOMER_SORTS = ['name', 'totalAmountSpent', 'totalTransactions', 'lastActivityDate'] as const;
export type CustomerSort = (typeof CUSTOMER_SORTS)[number];

export const DAY_MS = 86_400_000;

/** A stale active customer has been idle for more than this many days. */
export const STALE_AFTER_DAYS = 60;

/** Returns the amount in whole cents, rounded half-up on its decimal value (1.005 becomes 101). */
export function toCents(amount: number): number {
  const scaled = amount * 100;
  // toPrecision(15) removes binary noise such as 100.49999999999999 for 1.005 before rounding.
  return Math.round(scaled < 1e15 ? Number(scaled.toPrecision(15)) : scaled);
}

/** Returns the lower-cased country that filters and segments compare with. */
export function countryKey(country: string): string {
  return country.trim().toLowerCase();
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2}))?$/;

/**
 * Returns epoch milliseconds for an ISO 8601 calendar date (`2026-09-30`, taken as UTC midnight) or a date-time
 * with `Z` or an offset; `undefined` when it is not one, or names a day or time that does not exist.
 */
export function parseIsoDate(text: string): number | undefined {
  const known = parsedDates.get(text);
  if (known !== undefined || parsedDates.has(text)) return known;
  const parsed = readIsoDate(text);
  // Only texts as long as a date can be: long junk is not kept after its request.
  if (text.length > REMEMBERED_LENGTH) return parsed;
  if (parsedDates.size >= PARSED_DATES) parsedDates.clear();
  parsedDates.set(text, parsed);
  return parsed;
}

/**
 * The answers of parseIsoDate for the texts it read last: the dates of an import repeat (a few hundred days over a
 * million rows), and each is checked twice. Reading one took about a microsecond and a half.
 */
const parsedDates = new Map<string, number | undefined>();
const PARSED_DATES = 4096;
const REMEMBERED_LENGTH = 40;

function readIsoDate(text: string): number | undefined {
  const match = ISO_DATE.exec(text.trim());
  if (!match) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction = '', zone = 'Z'] = match;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  if (year < 1900 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, Number(fraction.padEnd(3, '0').slice(0, 3)));
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return undefined; // 2026-02-30
  if (zone === 'Z') return utc;
  const sign = zone.startsWith('-') ? -1 : 1;
  const [zh, zm] = zone.slice(1).split(':').map(Number) as [number, number];
  if (zh > 23 || zm > 59) return undefined;
  return utc - sign * (zh * 60 + zm) * 60_000;
}

/** Returns the UTC day number (days since 1970-01-01) of an instant. */
export function dayOf(epochMs: number): number {
  return Math.floor(epochMs / DAY_MS);
}


/** Returns the last `count` UTC months ending with the month of `now`, oldest first, as `YYYY-MM`. */
export function trailingMonths(now: Date, count: number): string[] {
  const months: string[] = [];
  for (let back = count - 1; back >= 0; back--) {
    months.push(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1)).toISOString().slice(0, 7));
  }
  return months;
}

/** Rounds half-up to `decimals` places on the decimal value. */
export function roundHalfUp(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  return Math.round(Number((value * factor).toPrecision(15))) / factor;
}

export interface StatusCounts {
  active: number;
  inactive: number;
  churned: number;
}

export interface Health {
  score: number;
  level: 'healthy' | 'attention' | 'critical';
  activeShare: number;
  churnedShare: number;
  inactiveCount: number;
  staleActives: number;
}

/** Returns the health of a base from its status counts and its stale active count (product.md section 4). */
export function healthOf(counts: StatusCounts, staleActives: number): Health {
  const total = counts.active + counts.inactive + counts.churned;
  if (total === 0) return { score: 0, level: 'critical', activeShare: 0, churnedShare: 0, inactiveCount: 0, staleActives: 0 };
  const share = (n: number) => (n / total) * 100;
  const raw = 100 - share(counts.churned) * 0.8 - share(counts.inactive) * 0.5 - share(staleActives) * 0.7;
  const score = Math.min(100, Math.max(0, Math.round(Number(raw.toPrecision(15)))));
  return {
    score,
    level: score >= 60 ? 'healthy' : score >= 40 ? 'attention' : 'critical',
    activeShare: roundHalfUp(share(counts.active), 1),
    churnedShare: roundHalfUp(share(counts.churned), 1),
    inactiveCount: counts.inactive,
    staleActives,
  };
}
