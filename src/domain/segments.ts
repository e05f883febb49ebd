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

/**
 * Returns the integer bounds `[lo, hi]` of `k` such that `scale(k) op value`, where `scale` is increasing.
 * Exact for any double `value`: `scale` is evaluated, never inverted by a rounding formula.
 */
function integerBounds(operator: NumericOperator, value: number, scale: (k: number) => number, guess: number): Range {
  if (Number.isNaN(value)) return [1, 0];
  if (!(Math.abs(guess) < 2 ** 52)) {
    // Beyond any stored value (all are safe integers): either everything or nothing satisfies it.
    const everything = (guess > 0) === (operator === 'lt' || operator === 'lte');
    return everything ? [-Infinity, Infinity] : [1, 0];
  }
  // first: the smallest integer k with scale(k) >= value; firstAbove: the smallest with scale(k) > value.
  let first = Math.floor(guess) - 2;
  while (scale(first) < value) first += 1;
  while (scale(first - 1) >= value) first -= 1;
  let firstAbove = first;
  while (scale(firstAbove) <= value) firstAbove += 1;
  switch (operator) {
    case 'gt':
      return [firstAbove, Infinity];
    case 'gte':
      return [first, Infinity];
    case 'lt':
      return [-Infinity, first - 1];
    case 'lte':
      return [-Infinity, firstAbove - 1];
  }
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
        intersect(bounds.transactions, integerBounds(condition.operator, condition.value, (k) => k, condition.value));
        break;
      case 'totalAmountSpent':
        intersect(bounds.cents, integerBounds(condition.operator, condition.value, (k) => k / 100, condition.value * 100));
        break;
      case 'lastActivityDays': {
        // Days back from now: more days is an earlier instant, so the comparison flips onto the timestamp.
        const instant = now.getTime() - condition.value * DAY_MS;
        const flipped = ({ gt: 'lt', gte: 'lte', lt: 'gt', lte: 'gte' } as const)[condition.operator];
        intersect(bounds.lastActivityAt, integerBounds(flipped, instant, (k) => k, instant));
        break;
      }
    }
  }
  const empty = (r: Range) => r[0] > r[1];
  return empty(bounds.transactions) || empty(bounds.cents) || empty(bounds.lastActivityAt) ? null : bounds;
}

/** Returns the conditions in words, for prompts and logs: `country is France, totalAmountSpent > 100`. */
export function describeConditions(conditions: readonly Condition[]): string {
  const symbols = { eq: 'is', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
  return conditions.map((c) => `${c.field} ${symbols[c.operator]} ${c.value}`).join(', ');
}
