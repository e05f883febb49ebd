// Schemas of customers, their list query, import envelope and aggregates.
import * as v from 'valibot';
import type { Clock } from '../domain/clock.ts';
import { CUSTOMER_SORTS, CUSTOMER_STATUSES, DAY_MS, parseIsoDate, toCents } from '../domain/customers.ts';
import { Counter, Email, MAX_COUNTER, Page, PositiveParam, Timestamp, TrimmedText } from './common.ts';

export const CustomerStatus = v.picklist(CUSTOMER_STATUSES, `Must be one of ${CUSTOMER_STATUSES.join(', ')}.`);

/** Largest amount whose cents still fit a safe integer. */
const MAX_AMOUNT = Math.floor(MAX_COUNTER / 100);

const Money = v.pipe(
  v.number('Must be a number.'),
  v.finite('Must be a finite number.'),
  v.minValue(0, 'Must be 0 or more.'),
  v.maxValue(MAX_AMOUNT, `Must be at most ${MAX_AMOUNT}.`),
  v.transform(toCents),
);

const Transactions = v.pipe(
  v.number('Must be a number.'),
  v.integer('Must be a whole number.'),
  v.minValue(0, 'Must be 0 or more.'),
  v.maxValue(MAX_COUNTER, `Must be at most ${MAX_COUNTER}.`),
);

/** How `lastActivityDate` is given: a calendar date, or a date-time with `Z` or an offset (as `parseIsoDate` reads it, trimmed). */
const ISO_DATE_INPUT = String.raw`^\s*\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?\s*$`;

const LAST_ACTIVITY =
  'A calendar date (2026-09-30, taken as UTC midnight) or a date-time with Z or an offset (2026-09-30T14:00:00Z, ' +
  '2025-12-01T09:30:00+01:00; seconds and their fraction optional). It must exist (2026-02-30 does not) and be at most one day ahead.';

/** The message of a last activity more than a day ahead: the import reasons (customers/imports/reasons.ts) tell it apart. */
export const FUTURE_DATE_MESSAGE = 'Must not be more than one day in the future.';

/** Fields of a customer on input; the output carries cents and epoch milliseconds. Built with the clock for the future check. */
export function customerFields(clock: Clock) {
  return {
    name: TrimmedText(1, 200),
    email: Email,
    country: TrimmedText(2, 80),
    totalTransactions: Transactions,
    totalAmountSpent: Money,
    lastActivityDate: v.pipe(
      v.string('Must be a string.'),
      v.check((text) => parseIsoDate(text) !== undefined, 'Must be a real ISO 8601 date such as 2026-09-30 or 2026-09-30T14:00:00Z.'),
      v.metadata({ pattern: ISO_DATE_INPUT, examples: ['2026-09-30', '2026-09-30T14:00:00Z', '2025-12-01T09:30:00+01:00'] }),
      v.description(LAST_ACTIVITY),
      v.transform((text) => parseIsoDate(text)!),
      v.check((ms) => ms <= clock().getTime() + DAY_MS, FUTURE_DATE_MESSAGE),
    ),
    status: CustomerStatus,
  };
}

export function CustomerInput(clock: Clock) {
  return v.object(customerFields(clock));
}

export function CustomerChanges(clock: Clock) {
  return v.partial(v.object(customerFields(clock)));
}

export const Customer = v.strictObject({
  id: v.pipe(v.string(), v.minLength(1)),
  name: v.pipe(v.string(), v.minLength(1)),
  email: Email,
  country: v.pipe(v.string(), v.minLength(2)),
  totalTransactions: Counter,
  totalAmountSpent: v.pipe(v.number(), v.minValue(0)),
  lastActivityDate: v.pipe(Timestamp, v.description('UTC, as 2026-09-30T00:00:00.000Z (a date given alone is its midnight).')),
  status: CustomerStatus,
});

export const CustomerListQuery = v.object({
  search: v.optional(v.pipe(v.string(), v.maxLength(200, 'Must be at most 200 characters.'), v.trim()), ''),
  status: v.optional(v.picklist([...CUSTOMER_STATUSES, 'all'], 'Must be one of active, inactive, churned, all.'), 'all'),
  country: v.optional(v.pipe(v.string(), v.maxLength(80, 'Must be at most 80 characters.'), v.trim()), ''),
  sort: v.optional(v.picklist(CUSTOMER_SORTS, `Must be one of ${CUSTOMER_SORTS.join(', ')}.`), 'lastActivityDate'),
  direction: v.optional(v.picklist(['asc', 'desc'], 'Must be asc or desc.'), 'desc'),
  page: PositiveParam(MAX_COUNTER, 1),
  limit: PositiveParam(200, 50),
});

export const CustomerPage = Page(Customer);

export const OnExisting = v.pipe(
  v.picklist(['skip', 'update'], 'Must be skip or update.'),
  v.description(
    'What to do with a row whose email is stored: `skip` reports it as a failure and leaves the customer as it is; `update` replaces ' +
      'the stored customer\'s fields with the row\'s (the row must be valid as a new customer would be). A row repeating an earlier ' +
      'row\'s email is a failure either way.',
  ),
);

export const ImportRequest = v.object({
  onExisting: v.optional(OnExisting, 'skip'),
  customers: v.pipe(
    v.array(v.unknown(), 'Must be an array of customers.'),
    v.minLength(1, 'Must hold at least 1 customer.'),
    v.maxLength(1000, 'Must hold at most 1000 customers.'),
    v.description('Customers as in customers.create. Each row is validated on its own: invalid rows are reported, valid rows stored.'),
  ),
});

/** One import row as documented: the customer fields with their types only, all optional, other fields allowed. */
const ImportRow = v.pipe(
  v.looseObject({
    name: v.optional(v.pipe(v.string(), v.description('1 to 200 characters once trimmed, no control characters.'))),
    email: v.optional(v.pipe(v.string(), v.description('An email address; trimmed and lower-cased, unique among customers and the earlier rows.'))),
    country: v.optional(v.pipe(v.string(), v.description('2 to 80 characters once trimmed, no control characters.'))),
    totalTransactions: v.optional(v.pipe(v.number(), v.integer(), v.description('A whole number, 0 or more.'))),
    totalAmountSpent: v.optional(v.pipe(v.number(), v.description('0 or more; rounded half-up to cents.'))),
    lastActivityDate: v.optional(v.pipe(v.string(), v.description(LAST_ACTIVITY))),
    status: v.optional(v.pipe(v.string(), v.description('active, inactive or churned.'))),
  }),
  v.metadata({ additionalProperties: true }),
  v.description(
    'A customer as for customers.create. Only the types are stated here, every field is optional and others are allowed: ' +
      'the service checks each row itself and reports a bad one in failures rather than refusing the body.',
  ),
);

/**
 * The import body as documented: rows described loosely, since a bad row is reported in `failures`, not refused,
 * and a client or gateway validating against the document must let such a body through.
 */
export const ImportRequestDocumented = v.object({
  onExisting: v.optional(OnExisting, 'skip'),
  customers: v.pipe(
    v.array(ImportRow),
    v.minLength(1),
    v.maxLength(1000),
    v.description(
      'Rows with the fields of customers.create: name (1-200 characters, trimmed), email (the email rule, trimmed and lower-cased; ' +
        'unique), country (2-80 characters, trimmed), totalTransactions (integer >= 0), totalAmountSpent (number >= 0, rounded to cents), ' +
        'lastActivityDate (ISO 8601 date or date-time, not more than a day ahead), status (active, inactive or churned). Each row is ' +
        'checked on its own: a row breaking a rule, or repeating a stored or earlier email, is reported in failures and not stored.',
    ),
  ),
});

export const ImportReport = v.object({
  imported: v.pipe(Counter, v.description('Rows stored as new customers.')),
  updated: v.pipe(Counter, v.description('Rows that replaced a stored customer\'s fields (onExisting=update); 0 when skipping. imported + updated + skipped is the number of rows.')),
  skipped: Counter,
  failures: v.array(
    v.object({
      row: v.pipe(v.number(), v.integer(), v.minValue(1)),
      email: v.nullable(v.string()),
      reason: v.pipe(v.string(), v.description('Why, in the words failures.csv of a CSV job gives for the same value.')),
      errors: v.array(v.object({ field: v.string(), message: v.string() })),
    }),
  ),
});

const Money2 = v.pipe(v.number(), v.minValue(0));

export const Kpis = v.object({
  totalCustomers: Counter,
  activeCustomers: Counter,
  totalTransactionValue: Money2,
  averageCustomerValue: Money2,
  statusCounts: v.object({ active: Counter, inactive: Counter, churned: Counter }),
});

export const TrendQuery = v.object({
  months: v.optional(v.pipe(v.number(), v.integer('Must be a whole number.'), v.minValue(3, 'Must be at least 3.'), v.maxValue(24, 'Must be at most 24.')), 6),
});

export const Trend = v.array(
  v.object({ month: v.pipe(v.string(), v.regex(/^\d{4}-\d{2}$/)), value: Money2, customers: Counter, churned: Counter }),
);

export const Health = v.object({
  score: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100)),
  level: v.picklist(['healthy', 'attention', 'critical']),
  activeShare: v.pipe(v.number(), v.minValue(0), v.maxValue(100)),
  churnedShare: v.pipe(v.number(), v.minValue(0), v.maxValue(100)),
  inactiveCount: Counter,
  staleActives: Counter,
});

export const TopQuery = v.object({ limit: PositiveParam(25, 5) });

export const TopCustomers = v.object({
  totalValue: Money2,
  items: v.array(
    v.object({
      id: v.string(),
      name: v.string(),
      country: v.string(),
      status: CustomerStatus,
      totalAmountSpent: Money2,
      totalTransactions: Counter,
    }),
  ),
});
