// The rules of the choice fields (product.md 14). A country: a stored name, a common name, a code, or a demonym where
// it qualifies people ("Kenyan customers"); alone (eq), listed after one "in" with "or", "and" or commas (in), or
// after "not in", "outside", "except" (neq, one per country). A status: "churned" or "lapsed" (churned), "inactive",
// "active"; alone (eq), listed (in) or negated (neq), only where no period follows ("inactive for 90 days" is days
// since the last activity, read by rules.ts before these).
import type { CustomerStatus } from '../../domain/customers.ts';
import type { Condition } from '../../domain/segments.ts';
import type { Reader, Rule } from './reader.ts';
import {
  COUNTRY_NEGATIONS,
  COUNTRY_PREPS,
  DURATION_LEADS,
  LIST_LINKS,
  MARKERS,
  NEGATION_FILLERS,
  PEOPLE,
  PERIOD_WORDS,
  QUALIFIER_PREPS,
  SILENT,
  STATUS_GUARDS,
  STATUS_NEGATIONS,
  STATUS_WORDS,
  TIME_WORDS,
} from './vocabulary.ts';

/** At most this many countries in one `in`, as the schema of conditions allows. */
const MAX_LISTED = 50;

/** The items of a list at `i` ("Kenya, Nigeria or Ghana"): the first read at `i`, the others after a link and `lead`. */
function list<T extends { end: number }>(r: Reader, i: number, item: (at: number) => T | undefined, lead: (at: number) => number) {
  const first = item(i);
  if (!first) return undefined;
  const items = [first];
  for (;;) {
    const link = r.phrase((items[items.length - 1] as T).end, LIST_LINKS);
    const next = link < 0 ? undefined : item(lead(link));
    if (!next) break;
    items.push(next);
  }
  return { items, end: (items[items.length - 1] as T).end };
}

/** Whether words read from `start` to `end` qualify people: "Kenyan (repeat) customers", "customers who are Kenyan". */
function qualifiesPeople(r: Reader, start: number, end: number): boolean {
  for (let k = end; k <= end + 2; k++) {
    if (PEOPLE.has(r.key(k))) return true;
    if (r.boundary(k) || MARKERS.has(r.key(k))) break;
  }
  return (r.key(start - 1) === 'are' || r.key(start - 1) === 'is') && r.clauseEnds(end);
}

/** Whether a period starts at `i` ("for 90 days", "in the last month", "since May", "last year"). */
function periodAt(r: Reader, i: number): boolean {
  const k = r.key(i);
  if (i >= r.n) return false;
  return DURATION_LEADS.has(k) || PERIOD_WORDS.has(k) || TIME_WORDS.has(k) || (QUALIFIER_PREPS.has(k) && r.qualifier(i));
}

/** Periods without a number, which end no clause of their own: "for a while" ("while" is a connector too). */
const VAGUE_PERIODS = [['a', 'while'], ['a', 'long', 'time'], ['some', 'time'], ['ages']];

/** The same values once, ignoring case, in the order first written. */
const distinct = <T extends string>(values: T[]): T[] =>
  values.filter((value, n) => values.findIndex((other) => other.toLowerCase() === value.toLowerCase()) === n);

export const country: Rule = (r, i) => {
  const negation = r.phrase(i, COUNTRY_NEGATIONS);
  let j = r.optional(i, COUNTRY_PREPS);
  if (negation >= 0) {
    const from = r.skip(negation, NEGATION_FILLERS);
    j = r.phrase(from, COUNTRY_PREPS);
    if (j < 0 && r.key(i) === 'not') return undefined; // "not in Kenya", "not from Kenya"; a bare "not" negates something else
    if (j < 0) j = from;
  }
  const read = list(r, r.optional(j, [['either']]), (at) => r.country(at), (at) => r.optional(at, COUNTRY_PREPS));
  if (!read) return undefined;
  // "speak French" names no country; "French customers" does
  if (read.items.some((c) => c.demonym) && !qualifiesPeople(r, i, read.end)) return undefined;
  if (read.items.some((c) => c.stored === null)) return { end: read.end, reject: true };
  const values = distinct(read.items.map((c) => c.stored as string));
  if (negation >= 0) return { end: read.end, conditions: values.map((value): Condition => ({ field: 'country', operator: 'neq', value })) };
  if (values.length > MAX_LISTED) return { end: read.end, reject: true };
  const condition: Condition =
    values.length === 1 ? { field: 'country', operator: 'eq', value: values[0] as string } : { field: 'country', operator: 'in', value: values };
  return { end: read.end, conditions: [condition] };
};

export const status: Rule = (r, i) => {
  const negation = r.phrase(i, STATUS_NEGATIONS);
  const nonWord = r.key(i).startsWith('non-') ? STATUS_WORDS[r.key(i).slice(4)] : undefined; // "non-churned"
  if (negation < 0 && !nonWord && STATUS_GUARDS.has(r.key(i - 1))) return undefined; // "most active", "recently churned"
  const from = negation >= 0 ? r.skip(negation, NEGATION_FILLERS) : r.optional(i, [['either']]);
  const word = (at: number) => {
    const value = STATUS_WORDS[r.key(at)];
    // "..., active in the last 30 days" after a list is a reading of its own, not one more status
    if (at > from && periodAt(r, r.skip(at + 1, SILENT))) return undefined;
    return value && { value, end: at + 1 };
  };
  const read = nonWord ? { items: [{ value: nonWord }], end: i + 1 } : list(r, from, word, (at) => at);
  if (!read) return undefined;
  // "churned last month", "active customers in the last few weeks": a period no status can say
  const after = r.skip(read.end, SILENT);
  if (periodAt(r, after)) return { end: r.optional(after + 1, VAGUE_PERIODS), reject: true, extend: true };
  const values = distinct(read.items.map((s) => s.value));
  if (negation >= 0 || nonWord) return { end: read.end, conditions: values.map((value): Condition => ({ field: 'status', operator: 'neq', value })) };
  const condition: Condition =
    values.length === 1 ? { field: 'status', operator: 'eq', value: values[0] as CustomerStatus } : { field: 'status', operator: 'in', value: values };
  return { end: read.end, conditions: [condition] };
};
