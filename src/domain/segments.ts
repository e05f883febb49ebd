// Segment conditions and their meaning: each set of conditions becomes inclusive integer bounds per column.
import { countryKey, CUSTOMER_STATUSES, DAY_MS, type CustomerStatus } from './customers.ts';

export const NUMERIC_FIELDS = ['totalTransactions', 'totalAmountSpent', 'lastActivityDays'] as const;
export const NUMERIC_OPERATORS = ['gt', 'gte', 'lt', 'lte'] as const;

export type NumericField = (typeof NUMERIC_FIELDS)[number];
export type NumericOperator = (typeof NUMERIC_OPERATORS)[number];

/** Operators of `country` and `status`: equality, inequality, and membership of a list. */
export const CHOICE_OPERATORS = ['eq', 'neq', 'in'] as const;

export type Condition =
  | { field: 'country'; operator: 'eq' | 'neq'; value: string }
  | { field: 'country'; operator: 'in'; value: string[] }
  | { field: 'status'; operator: 'eq' | 'neq'; value: CustomerStatus }
  | { field: 'status'; operator: 'in'; value: CustomerStatus[] }
  | { field: NumericField; operator: NumericOperator; value: number };

/** The bit of a status in `Bounds.statuses`: 1 << its place in CUSTOMER_STATUSES. */
export const STATUS_BIT = Object.fromEntries(CUSTOMER_STATUSES.map((s, i) => [s, 1 << i])) as Record<CustomerStatus, number>;
/** Every status's bit: no status condition. */
export const ANY_STATUS = 7;

/** Inclusive bounds on stored columns; a customer matches when every column lies within its bounds. */
export interface Bounds {
  /** Lower-cased countries the customer must have one of (sorted, none excluded), or undefined for any. */
  countryKeys: string[] | undefined;
  /** Lower-cased countries the customer must not have (sorted); empty whenever `countryKeys` is set. */
  excludedCountryKeys: string[];
  /** The statuses allowed, as a mask of STATUS_BIT; ANY_STATUS for no condition, never 0. */
  statuses: number;
  transactions: [number, number];
  cents: [number, number];
  lastActivityAt: [number, number];
}

type Range = [number, number];

/** One past the largest stored value: every stored number is a safe integer. */
const LIMIT = 2 ** 53;

/** The integers `k` with `k op value`, given the first `k` with k >= value and the first with k > value. */
function rangeFor(operator: NumericOperator, atLeast: number, above: number): Range {
  switch (operator) {
    case 'gt':
      return [above, Infinity];
    case 'gte':
      return [atLeast, Infinity];
    case 'lt':
      return [-Infinity, atLeast - 1];
    case 'lte':
      return [-Infinity, above - 1];
  }
}

/** Bounds on a whole-number column (transactions, epoch milliseconds) compared with `value` directly. */
function wholeBounds(operator: NumericOperator, value: number): Range {
  const clamped = Math.min(LIMIT, Math.max(-LIMIT, value)); // beyond every stored value either way
  return rangeFor(operator, Math.ceil(clamped), Math.floor(clamped) + 1);
}

/**
 * Bounds on cents (0 to 2^53 - 1) such that `cents / 100 op value`, exactly as the stored amount reads as a
 * number: found by binary search over the stored range, so no rounding formula can be off by a cent.
 */
function centBounds(operator: NumericOperator, value: number): Range {
  const first = (holds: (cents: number) => boolean): number => {
    if (holds(0)) return 0;
    if (!holds(LIMIT - 1)) return LIMIT;
    let lo = 0; // holds(lo) is false
    let hi = LIMIT - 1; // holds(hi) is true
    while (hi - lo > 1) {
      const mid = lo + Math.floor((hi - lo) / 2);
      if (holds(mid)) hi = mid;
      else lo = mid;
    }
    return hi;
  };
  return rangeFor(operator, first((k) => k / 100 >= value), first((k) => k / 100 > value));
}

/** The statuses a mask of STATUS_BIT allows, in the API's order. */
export const statusesOf = (mask: number): CustomerStatus[] => CUSTOMER_STATUSES.filter((s) => (mask & STATUS_BIT[s]) !== 0);

function intersect(range: Range, other: Range): void {
  range[0] = Math.max(range[0], other[0]);
  range[1] = Math.min(range[1], other[1]);
}

/**
 * Returns the bounds meaning all the conditions (AND) at time `now`, or `null` when no customer can match.
 * `lastActivityDays gt N` means last activity earlier than now minus N days; `lt N` later; gte and lte include
 * the boundary. Amounts compare as `cents / 100` with the value, exactly as the stored number reads.
 */
export function compileConditions(conditions: readonly Condition[], now: Date): Bounds | null {
  let allowed: Set<string> | undefined;
  const excluded = new Set<string>();
  let statuses = ANY_STATUS;
  const bounds: Bounds = {
    countryKeys: undefined,
    excludedCountryKeys: [],
    statuses: ANY_STATUS,
    transactions: [-Infinity, Infinity],
    cents: [-Infinity, Infinity],
    lastActivityAt: [-Infinity, Infinity],
  };
  for (const condition of conditions) {
    switch (condition.field) {
      case 'country': {
        if (condition.operator === 'neq') {
          excluded.add(countryKey(condition.value));
          break;
        }
        const keys = new Set((condition.operator === 'in' ? condition.value : [condition.value]).map(countryKey));
        allowed = allowed ? new Set([...allowed].filter((k) => keys.has(k))) : keys;
        break;
      }
      case 'status': {
        const bits = (condition.operator === 'in' ? condition.value : [condition.value]).reduce((m, s) => m | STATUS_BIT[s], 0);
        statuses &= condition.operator === 'neq' ? ~bits : bits;
        break;
      }
      case 'totalTransactions':
        intersect(bounds.transactions, wholeBounds(condition.operator, condition.value));
        break;
      case 'totalAmountSpent':
        intersect(bounds.cents, centBounds(condition.operator, condition.value));
        break;
      case 'lastActivityDays': {
        // Days back from now: more days is an earlier instant, so the comparison flips onto the timestamp.
        const instant = now.getTime() - condition.value * DAY_MS;
        const flipped = ({ gt: 'lt', gte: 'lte', lt: 'gt', lte: 'gte' } as const)[condition.operator];
        intersect(bounds.lastActivityAt, wholeBounds(flipped, instant));
        break;
      }
    }
  }
  if (allowed) {
    bounds.countryKeys = [...allowed].filter((k) => !excluded.has(k)).sort();
    if (bounds.countryKeys.length === 0) return null;
  } else bounds.excludedCountryKeys = [...excluded].sort();
  bounds.statuses = statuses & ANY_STATUS;
  if (bounds.statuses === 0) return null;
  const empty = (r: Range) => r[0] > r[1];
  return empty(bounds.transactions) || empty(bounds.cents) || empty(bounds.lastActivityAt) ? null : bounds;
}


const NUMBER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
const COMPARISON: Record<NumericOperator, string> = { gt: 'more than', gte: 'at least', lt: 'fewer than', lte: 'at most' };
const AMOUNT: Record<NumericOperator, string> = { gt: 'more than', gte: 'at least', lt: 'less than', lte: 'at most' };

/** Returns one condition in plain words, such as "with at least 5 purchases" or "active in the last 30 days". */
export function describeCondition(condition: Condition): string {
  if (condition.field === 'country') {
    if (condition.operator === 'in') return `in ${listed(condition.value.map((c) => c.trim()), 'or')}`;
    return `${condition.operator === 'neq' ? 'outside' : 'in'} ${condition.value.trim()}`;
  }
  if (condition.field === 'status') {
    if (condition.operator === 'in') return `who are ${listed(condition.value, 'or')}`;
    return `who are ${condition.operator === 'neq' ? 'not ' : ''}${condition.value}`;
  }
  const n = NUMBER.format(condition.value);
  switch (condition.field) {
    case 'totalTransactions':
      return `with ${COMPARISON[condition.operator]} ${n} purchase${condition.value === 1 ? '' : 's'}`;
    case 'totalAmountSpent':
      return `who spent ${AMOUNT[condition.operator]} ${n} in total`;
    case 'lastActivityDays':
      switch (condition.operator) {
        case 'gt':
          return `inactive for more than ${n} days`;
        case 'gte':
          return `inactive for at least ${n} days`;
        case 'lt':
          return `active in the last ${n} days`;
        case 'lte':
          return `active within the last ${n} days`;
      }
  }
}

/** Returns "a", "a or b", "a, b or c". */
function listed(items: readonly string[], last: 'or' | 'and'): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} ${last} ${items.at(-1)}`;
}

/** Returns the audience in words: "customers in Germany with at least 5 purchases, active in the last 30 days". */
export function describeAudience(conditions: readonly Condition[]): string {
  const [first, second, ...rest] = conditions.map(describeCondition);
  if (first === undefined) return 'all customers';
  return ['customers', first, second].filter(Boolean).join(' ') + rest.map((part) => `, ${part}`).join('');
}
