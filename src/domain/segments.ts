// Segment conditions and their meaning: each set of conditions becomes inclusive integer bounds per column.
import { DAY_MS } from './customers.ts';

export const NUMERIC_FIELDS = ['totalTransactions', 'totalAmountSpent', 'lastActivityDays'] as const;
export const NUMERIC_OPERATORS = ['gt', 'gte', 'lt', 'lte'] as const;

export type NumericField = (typeof NUMERIC_FIELDS)[number];
export type NumericOperator = (typeof NUMERIC_OPERATORS)[number];

export type Condition =
  | { field: 'country'; operator: 'eq'; value: string }
  | { field: NumericField; operator: NumericOperator; value: number };

/** Inclusive bounds on stored columns; a customer matches when every column lies within its bounds. */
export interface Bounds {
  /** Lower-cased country the customer must have, or undefined for any. */
  countryKey: string | undefined;
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
  const bounds: Bounds = {
    countryKey: undefined,
    transactions: [-Infinity, Infinity],
    cents: [-Infinity, Infinity],
    lastActivityAt: [-Infinity, Infinity],
  };
  for (const condition of conditions) {
    switch (condition.field) {
      case 'country': {
        const key = condition.value.trim().toLowerCase();
        if (bounds.countryKey !== undefined && bounds.countryKey !== key) return null;
        bounds.countryKey = key;
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
  const empty = (r: Range) => r[0] > r[1];
  return empty(bounds.transactions) || empty(bounds.cents) || empty(bounds.lastActivityAt) ? null : bounds;
}


const NUMBER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
const COMPARISON: Record<NumericOperator, string> = { gt: 'more than', gte: 'at least', lt: 'fewer than', lte: 'at most' };
const AMOUNT: Record<NumericOperator, string> = { gt: 'more than', gte: 'at least', lt: 'less than', lte: 'at most' };

/** Returns one condition in plain words, such as "with at least 5 purchases" or "active in the last 30 days". */
export function describeCondition(condition: Condition): string {
  if (condition.field === 'country') return `in ${condition.value.trim()}`;
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

/** Returns the audience in words: "customers in Germany with at least 5 purchases, active in the last 30 days". */
export function describeAudience(conditions: readonly Condition[]): string {
  const [first, second, ...rest] = conditions.map(describeCondition);
  if (first === undefined) return 'all customers';
  return ['customers', first, second].filter(Boolean).join(' ') + rest.map((part) => `, ${part}`).join('');
}
