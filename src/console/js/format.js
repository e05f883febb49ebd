// @ts-check
// Numbers, money, dates and the words shown for the API's codes.

const integerFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const moneyFormat = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const compactMoney = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });
const dateFormat = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const preciseFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const monthFormat = new Intl.DateTimeFormat(undefined, { month: 'short', year: '2-digit', timeZone: 'UTC' });

/** @param {number} n */
export const count = (n) => integerFormat.format(n);
/** Amounts carry no currency in the API; they are shown as plain amounts with two decimals. @param {number} n */
export const money = (n) => moneyFormat.format(n);
/** @param {number} n */
export const moneyShort = (n) => compactMoney.format(n);
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
  totalTransactions: 'Transactions',
  totalAmountSpent: 'Total spent',
  lastActivityDays: 'Days since last activity',
});

export const OPERATOR_NAMES = /** @type {const} */ ({ eq: 'is', gt: 'more than', gte: 'at least', lt: 'less than', lte: 'at most' });

/**
 * A condition in words: "Country is Germany", "Total spent at least 1,000".
 * @param {{ field: string, operator: string, value: string | number }} condition
 */
export function conditionText(condition) {
  const value = typeof condition.value === 'number' ? condition.value.toLocaleString() : condition.value;
  const field = FIELD_NAMES[/** @type {keyof typeof FIELD_NAMES} */ (condition.field)] ?? condition.field;
  const operator = OPERATOR_NAMES[/** @type {keyof typeof OPERATOR_NAMES} */ (condition.operator)] ?? condition.operator;
  return `${field} ${operator} ${value}`;
}
