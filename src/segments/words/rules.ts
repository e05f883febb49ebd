// The rules, tried in order at each token: activity windows and their negations, inactivity, last activity, counts
// of purchases, amounts spent, then statuses and countries (choices.ts); each returns conditions or a phrase to report.
import type { NumericField } from '../../domain/segments.ts';
import { country, status } from './choices.ts';
import type { Bound, Hit, Quantity, Reader, Rule } from './reader.ts';
import {
  ACTIVITY_NOUNS,
  ACTIVITY_VERBS,
  AMOUNT_FILLERS,
  AMOUNT_LEADS,
  AMOUNT_TRAILERS,
  ARTICLES,
  BUYER_NOUNS,
  CHURN_WORDS,
  COUNT_FILLERS,
  COUNT_LEADS,
  DAYS_LEADS,
  INACTIVE_WORDS,
  LAST_FILLERS,
  LAST_NOUNS,
  LATEST,
  MARKERS,
  NEGATED_PREPS,
  NEVER_FILLERS,
  NONE_OF,
  NOT_FILLERS,
  OTHER_UNITS,
  ONE_TIME,
  PERIOD_WORDS,
  PER_ORDER,
  PURCHASE_NOUNS,
  PURCHASE_VERBS,
  REPEAT,
  SILENT,
  THEIR,
  TIME_WORDS,
  VERB_OBJECTS,
  WINDOW_PREPS,
  WITH_US,
  isFiller,
} from './vocabulary.ts';

/** Conditions on a numeric field from bounds, unless the reading goes on to a period or a kind it cannot keep. */
function numeric(r: Reader, start: number, end: number, field: NumericField, bounds: Bound[]): Hit {
  if (r.qualifier(end)) return { start, end, reject: true, extend: true };
  // a unit or sign right after the number makes it something else ("spent 5 minutes", "over 50%"); any other word
  // no rule reads is a phrase of its own, reported apart ("spent over 500 xyz": the amount is still read)
  const next = r.tokens[end];
  const otherUnit = next && (next.kind !== 'word' || OTHER_UNITS.has(next.key) || TIME_WORDS.has(next.key));
  if (otherUnit && !isFiller(next.key) && !MARKERS.has(next.key) && !r.read(end)) return { start, end, reject: true, extend: true };
  return { start, end, conditions: bounds.map(([operator, value]) => ({ field, operator, value })) };
}

/** A time window after an activity: "in the last 2 weeks", "within 30 days", "for more than 3 months". */
function window(r: Reader, i: number, negated: boolean, prepOptional: boolean) {
  const prep = r.key(i);
  let j = i;
  if ((negated ? NEGATED_PREPS : WINDOW_PREPS).has(prep)) j++;
  else if (!prepOptional) return undefined;
  if (r.key(j) === 'the') j++;
  const last = PERIOD_WORDS.has(r.key(j)) && r.key(j) !== 'this';
  if (last) j++;
  const within = prep === 'within';
  if (!negated && !last && !within) return undefined;
  let q = r.quantity(j, r.days);
  const unit = r.days.unit(j);
  if ((!q || !q.units.every(Boolean)) && last && unit) {
    q = { form: 'bare', bounds: [['gte', unit.unit.factor]], units: [unit.unit], end: unit.end }; // "the last week"
  }
  if (!q || !q.units.every(Boolean)) return undefined;
  const value = (q.bounds[0] as Bound)[1];
  if (!negated) return q.form === 'bare' ? { end: q.end, bounds: [[within ? 'lte' : 'lt', value]] as Bound[] } : undefined;
  return { end: q.end, bounds: q.form === 'bare' ? ([[within ? 'gt' : 'gte', value]] as Bound[]) : q.bounds };
}

const negatedActivity: Rule = (r, i) => {
  let j: number;
  const k = r.key(i);
  if (k === 'not' || k === 'never') {
    j = r.phrase(r.skip(i + 1, NOT_FILLERS), ACTIVITY_VERBS);
    if (j < 0) return undefined;
    j = r.optional(j, VERB_OBJECTS);
  } else if (k === 'no' || k === 'without') {
    j = r.phrase(r.skip(i + 1, ARTICLES), ACTIVITY_NOUNS);
    if (j < 0) return undefined;
  } else return undefined;
  const w = window(r, j, true, false);
  return w && numeric(r, i, w.end, 'lastActivityDays', w.bounds);
};

const zeroPurchases: Rule = (r, i) => {
  const k = r.key(i);
  let j = -1;
  if (k === 'no' || k === 'zero' || k === 'without') j = r.phrase(r.skip(i + 1, ARTICLES), NONE_OF);
  else if (k === 'never' || k === 'not') j = r.phrase(r.skip(i + 1, NEVER_FILLERS), PURCHASE_VERBS);
  else if (k === 'non-buyers' || k === 'non-purchasers') j = i + 1;
  if (j < 0) return undefined;
  j = r.optional(r.optional(j, VERB_OBJECTS), VERB_OBJECTS);
  if (!r.clauseEnds(j)) return undefined; // "never bought shoes" is not "no purchases"
  return { end: j, conditions: [{ field: 'totalTransactions', operator: 'lte', value: 0 }] };
};

const inactiveFor: Rule = (r, i) => {
  let j = r.phrase(i, INACTIVE_WORDS);
  const churn = j < 0 ? r.phrase(i, CHURN_WORDS) : -1;
  if (j < 0 && churn < 0) return undefined;
  j = r.skip(Math.max(j, churn), SILENT); // "inactive customers for 90 days"
  // "churned for 90 days" is a time since; "churned in the last 6 months" dates the churn, which no field holds
  if (churn >= 0 && r.key(j) !== 'for') return undefined;
  const w = window(r, j, true, true);
  return w && numeric(r, i, w.end, 'lastActivityDays', w.bounds);
};

const lastActivity: Rule = (r, i) => {
  let j = r.phrase(r.phrase(i, LATEST), LAST_NOUNS);
  let byLead = false;
  if (j < 0) {
    j = r.phrase(i, DAYS_LEADS);
    byLead = true;
  }
  if (j < 0) return undefined;
  j = r.optional(j, LAST_FILLERS);
  const w = !byLead && window(r, j, false, false);
  if (w) return numeric(r, i, w.end, 'lastActivityDays', w.bounds);
  const q = r.quantity(j, r.days);
  if (!q || q.form === 'bare' || (!byLead && !q.units.every(Boolean))) return undefined;
  return numeric(r, i, r.optional(q.end, [['ago']]), 'lastActivityDays', q.bounds);
};

const activeWithin: Rule = (r, i) => {
  const from = r.optional(i, [['recently']]);
  let j = r.phrase(from, ACTIVITY_VERBS);
  if (j < 0) j = r.phrase(from, ACTIVITY_NOUNS);
  if (j < 0) return undefined;
  if (r.key(from) === 'active') j = r.skip(j, SILENT); // "active customers in the last 30 days"
  const w = window(r, r.optional(j, VERB_OBJECTS), false, false);
  return w && numeric(r, i, w.end, 'lastActivityDays', w.bounds);
};

const sinceLast: Rule = (r, i) => {
  const q = r.quantity(i, r.days);
  if (!q || !q.units.every(Boolean) || r.key(q.end) !== 'since') return undefined;
  const j = r.phrase(r.phrase(r.skip(q.end + 1, THEIR), LATEST), LAST_NOUNS);
  if (j < 0) return undefined;
  const bounds: Bound[] = q.form === 'bare' ? [['gte', (q.bounds[0] as Bound)[1]]] : q.bounds;
  return numeric(r, i, j, 'lastActivityDays', bounds);
};

const oneTimeOrRepeat: Rule = (r, i) => {
  const repeat = r.phrase(i, REPEAT);
  const once = r.phrase(i, ONE_TIME);
  const j = Math.max(repeat, once);
  if (j < 0 || !BUYER_NOUNS.has(r.key(j))) return undefined;
  return numeric(r, i, j + 1, 'totalTransactions', repeat > 0 ? [['gte', 2]] : [['gte', 1], ['lte', 1]]);
};

/** Counts keep exact numbers as two bounds, except zero, which is "at most 0". */
const countBounds = (q: Quantity): Bound[] =>
  q.bounds.length === 2 && q.bounds[0]?.[1] === 0 && q.bounds[1]?.[1] === 0 ? [['lte', 0]] : q.bounds;

const countByLead: Rule = (r, i) => {
  let j = r.phrase(i, COUNT_LEADS);
  if (j < 0) {
    // "orders > 5": a noun and a comparison sign
    j = PURCHASE_NOUNS.has(r.key(i)) && ['>', '>=', '<', '<=', '='].includes(r.key(i + 1)) ? i + 1 : -1;
  }
  if (j < 0) return undefined;
  const q = r.quantity(r.optional(j, COUNT_FILLERS), r.counts);
  if (!q || q.units.some((u) => u?.name === 'times')) return undefined;
  return numeric(r, i, q.end, 'totalTransactions', countBounds(q));
};

const countByVerb: Rule = (r, i) => {
  const j = r.phrase(i, PURCHASE_VERBS);
  if (j < 0) return undefined;
  const q = r.quantity(r.optional(j, WITH_US), r.counts);
  if (!q || !q.units.every(Boolean)) return undefined;
  return numeric(r, i, q.end, 'totalTransactions', countBounds(q));
};

const countByNoun: Rule = (r, i) => {
  const q = r.quantity(i, r.counts);
  if (!q || !q.units.every((u) => u?.name === 'purchases')) return undefined;
  return numeric(r, i, q.end, 'totalTransactions', countBounds(q));
};

const amountBounds = (q: Quantity): Bound[] => {
  const value = (q.bounds[0] as Bound)[1];
  if (q.form !== 'bare') return q.bounds;
  return value === 0 ? [['lte', 0]] : [['gte', value]]; // "spent $500" is a threshold reached; "spent nothing" is 0
};

const amountByLead: Rule = (r, i) => {
  const j = r.phrase(i, AMOUNT_LEADS);
  if (j < 0) return undefined;
  const q = r.quantity(r.optional(j, AMOUNT_FILLERS), r.amounts);
  if (!q) return undefined;
  return numeric(r, i, r.optional(q.end, AMOUNT_TRAILERS), 'totalAmountSpent', amountBounds(q));
};

const amountByCurrency: Rule = (r, i) => {
  if (PER_ORDER.has(r.key(i - 1))) return undefined; // "orders over $50" is no total spent
  const q = r.quantity(i, r.amounts);
  if (!q || !q.units.some((u) => u?.name === 'currency')) return undefined;
  const end = r.phrase(q.end, AMOUNT_TRAILERS);
  if (q.form === 'bare' && end < 0) return undefined;
  return numeric(r, i, Math.max(end, q.end), 'totalAmountSpent', amountBounds(q));
};

export const RULES: Rule[] = [
  negatedActivity, zeroPurchases, inactiveFor, lastActivity, activeWithin, sinceLast, oneTimeOrRepeat, countByLead,
  countByVerb, amountByLead, countByNoun, amountByCurrency, status, country,
];
