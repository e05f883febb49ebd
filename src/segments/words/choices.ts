// The rules of the choice fields (product.md 14). A country: a stored name, a common name, a code, or a demonym where
// it qualifies people ("Kenyan customers"); alone (eq), listed after one "in" with "or", "and" or commas (in), or
// after "not in", "outside", "except", "non-" or "everyone but" (neq, one per country); a demonym also where it stands
// alone ("Kenyan"). A status: "churned" or "lapsed" (churned), "inactive",
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
  SENTENCE_ENDS,
  SEPARATORS,
  BUT_LINKS,
  TIME_WORDS,
  UNIVERSALS,
  isFiller,
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

/**
 * Whether the "but" at `i` means "except": in a clause that starts with "everyone", "all", "anyone"... ("everyone
 * but churned customers", "all customers in Kenya but the churned ones"), unless "not", "also"... follow it.
 */
export function butExcept(r: Reader, i: number): boolean {
  if (r.key(i) !== 'but' || BUT_LINKS.has(r.key(i + 1))) return false;
  let universal = false;
  for (let k = i - 1; k >= 0 && !SENTENCE_ENDS.has(r.key(k)); k--) {
    const key = r.key(k);
    if (UNIVERSALS.has(key)) universal = true; // it counts if only filler words come before it in its clause
    else if (SEPARATORS.has(key)) {
      if (universal) return true;
    } else if (!isFiller(key)) universal = false;
  }
  return universal;
}

/** The end of a negation at `i` from `list`, or of an "everyone but", or -1. */
const negationAt = (r: Reader, i: number, list: readonly string[][]) => (butExcept(r, i) ? i + 1 : r.phrase(i, list));

/** Whether a demonym read from `start` to `end` is all the clause says: "Kenyan", "French, with 3 orders". */
function standsAlone(r: Reader, start: number, end: number): boolean {
  for (let k = start - 1; k >= 0 && !SENTENCE_ENDS.has(r.key(k)); k--) if (!isFiller(r.key(k))) return false;
  let after = end;
  while (after < r.n && !r.boundary(after) && isFiller(r.key(after))) after++; // "Kenyan with 3 orders"
  return r.clauseEnds(after);
}

/** A country written with "non-" as one word ("non-Kenyan", "non-UK"), read at `i`. */
function nonCountry(r: Reader, i: number) {
  const key = r.key(i);
  if (!key.startsWith('non-')) return undefined;
  const entry = r.countries.get(key.slice(4))?.find((e) => e.keys.length === 1);
  return entry && { items: [{ stored: entry.stored, end: i + 1, demonym: entry.demonym }], end: i + 1 };
}

/** Whether a period starts at `i` ("for 90 days", "in the last month", "since May", "last year"). */
function periodAt(r: Reader, i: number): boolean {
  const k = r.key(i);
  if (i >= r.n) return false;
  // "inactive customers in Kenya for 90 days": "in" leads to the country, not to the period
  return DURATION_LEADS.has(k) || PERIOD_WORDS.has(k) || TIME_WORDS.has(k) || (QUALIFIER_PREPS.has(k) && r.qualifier(i) && !r.country(i + 1));
}

/** Periods without a number, which end no clause of their own: "for a while" ("while" is a connector too). */
const VAGUE_PERIODS = [['a', 'while'], ['a', 'long', 'time'], ['some', 'time'], ['ages']];

/** The same values once, ignoring case, in the order first written. */
const distinct = <T extends string>(values: T[]): T[] =>
  values.filter((value, n) => values.findIndex((other) => other.toLowerCase() === value.toLowerCase()) === n);

export const country: Rule = (r, i) => {
  const non = nonCountry(r, i);
  const negation = non ? i + 1 : negationAt(r, i, COUNTRY_NEGATIONS);
  let j = r.optional(i, COUNTRY_PREPS);
  let bareNot = false;
  if (negation >= 0 && !non) {
    const from = r.skip(negation, NEGATION_FILLERS);
    j = r.phrase(from, COUNTRY_PREPS);
    // "not in Kenya", "not Kenyan"; a bare "not" before a name negates something else
    bareNot = j < 0 && r.key(i) === 'not';
    if (j < 0) j = from;
  }
  const read = non ?? list(r, r.optional(j, [['either']]), (at) => r.country(at), (at) => r.optional(at, COUNTRY_PREPS));
  if (!read || (bareNot && !read.items.every((c) => c.demonym))) return undefined;
  // "speak French" names no country; "French customers" and "French" alone do
  if (read.items.some((c) => c.demonym) && !qualifiesPeople(r, i, read.end) && !standsAlone(r, i, read.end)) return undefined;
  if (read.items.some((c) => c.stored === null)) return { end: read.end, reject: true };
  const values = distinct(read.items.map((c) => c.stored as string));
  if (negation >= 0) return { end: read.end, conditions: values.map((value): Condition => ({ field: 'country', operator: 'neq', value })) };
  if (values.length > MAX_LISTED) return { end: read.end, reject: true };
  const condition: Condition =
    values.length === 1 ? { field: 'country', operator: 'eq', value: values[0] as string } : { field: 'country', operator: 'in', value: values };
  return { end: read.end, conditions: [condition] };
};

export const status: Rule = (r, i) => {
  const negation = negationAt(r, i, STATUS_NEGATIONS);
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
