// @ts-check
// Numbers, money, dates and the words shown for the API's codes.

const integerFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const compactFigure = new Intl.NumberFormat(undefined, { notation: 'compact', maximumSignificantDigits: 3 });
const dateFormat = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const preciseFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const monthFormat = new Intl.DateTimeFormat(undefined, { month: 'short', year: '2-digit', timeZone: 'UTC' });

/**
 * The formats of amounts: the API's amounts carry no currency, so they are plain numbers with two decimals unless the
 * service names one (its CURRENCY setting), and then that currency's own symbol and decimals.
 * @param {string | null} currency
 */
function moneyFormats(currency) {
  /** @type {Intl.NumberFormatOptions} */
  const base = currency ? { style: 'currency', currency } : {};
  return {
    exact: new Intl.NumberFormat(undefined, currency ? base : { minimumFractionDigits: 2, maximumFractionDigits: 2 }),
    short: new Intl.NumberFormat(undefined, { ...base, notation: 'compact', maximumFractionDigits: 1 }),
    figure: new Intl.NumberFormat(undefined, { ...base, notation: 'compact', maximumSignificantDigits: 3 }),
  };
}
let moneyFormat = moneyFormats(null);

/**
 * Shows every amount from now on in `currency` (an ISO 4217 code), or as a plain amount when null.
 * @param {string | null} currency
 */
export function useCurrency(currency) {
  moneyFormat = moneyFormats(currency);
}

/** @param {number} n */
export const count = (n) => integerFormat.format(n);
/** An amount to the cent, in the service's currency when it has one. @param {number} n */
export const money = (n) => moneyFormat.exact.format(n);
/** An amount rounded for an axis: "1.5M". @param {number} n */
export const moneyShort = (n) => moneyFormat.short.format(n);

/** @typedef {{ shown: string, exact: string }} Figure */
/**
 * A headline amount short enough for a small card: exact below 10,000, else three significant digits ("4.07M").
 * @param {number} n
 * @returns {Figure}
 */
export const moneyFigure = (n) => ({ shown: Math.abs(n) < 10_000 ? money(n) : moneyFormat.figure.format(n), exact: money(n) });
/**
 * A headline count short enough for a small card: exact below 100,000, else three significant digits ("1.23M").
 * @param {number} n
 * @returns {Figure}
 */
export const countFigure = (n) => ({ shown: Math.abs(n) < 100_000 ? count(n) : compactFigure.format(n), exact: count(n) });
/** @param {number} n */
export const percent = (n) => `${n.toLocaleString(undefined, { maximumFractionDigits: 1 })}%`;
/** A calendar date (customers' last activity is a day, kept in UTC). @param {string} iso */
export const date = (iso) => dateFormat.format(new Date(iso));
/** A moment in the viewer's time zone. @param {string} iso */
export const dateTime = (iso) => dateTimeFormat.format(new Date(iso));
/** A moment to the second, for logs where seconds matter. @param {string} iso */
export const preciseTime = (iso) => preciseFormat.format(new Date(iso));
/** `2026-09` as "Sep 26". @param {string} month */
export const month = (month) => monthFormat.format(new Date(`${month}-01T00:00:00Z`));

/**
 * @param {number} n
 * @param {string} one
 * @param {string} [many]
 */
export const plural = (n, one, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;

export const ROLE_NAMES = /** @type {const} */ ({
  lifecycle_marketer: 'Lifecycle marketer',
  marketing_lead: 'Marketing lead',
  admin: 'Admin',
});

export const CUSTOMER_STATUS_NAMES = /** @type {const} */ ({ active: 'Active', inactive: 'Inactive', churned: 'Churned' });

export const CAMPAIGN_STATUS_NAMES = /** @type {const} */ ({ draft: 'Draft', in_review: 'In review', approved: 'Approved', sent: 'Sent' });

export const CHANNEL_NAMES = /** @type {const} */ ({ sms: 'SMS', email: 'Email', push: 'Push notification' });

export const TONE_NAMES = /** @type {const} */ ({ professional: 'Professional', friendly: 'Friendly', urgent: 'Urgent', promotional: 'Promotional' });

export const VERSION_SOURCE_NAMES = /** @type {const} */ ({ generated: 'Generated', revised: 'Revised', edited: 'Edited', variant: 'Variant', restored: 'Restored' });

export const FIELD_NAMES = /** @type {const} */ ({
  country: 'Country',
  status: 'Status',
  totalTransactions: 'Transactions',
  totalAmountSpent: 'Total spent',
  lastActivityDays: 'Days since last activity',
});

export const OPERATOR_NAMES = /** @type {const} */ ({ eq: 'is', neq: 'is not', in: 'is one of', gt: 'more than', gte: 'at least', lt: 'less than', lte: 'at most' });

/**
 * A condition in words: "Country is Germany", "Status is one of Inactive, Churned", "Total spent at least 1,000".
 * @param {{ field: string, operator: string, value: string | number | string[] }} condition
 */
export function conditionText(condition) {
  /** @param {string | number} v */
  const word = (v) =>
    typeof v === 'number' ? v.toLocaleString() : condition.field === 'status' ? (CUSTOMER_STATUS_NAMES[/** @type {keyof typeof CUSTOMER_STATUS_NAMES} */ (v)] ?? v) : v;
  const value = Array.isArray(condition.value) ? condition.value.map(word).join(', ') : word(condition.value);
  const field = FIELD_NAMES[/** @type {keyof typeof FIELD_NAMES} */ (condition.field)] ?? condition.field;
  const operator = OPERATOR_NAMES[/** @type {keyof typeof OPERATOR_NAMES} */ (condition.operator)] ?? condition.operator;
  return `${field} ${operator} ${value}`;
}
