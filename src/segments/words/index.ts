// Audiences from words (product.md 11): the local, deterministic reader that turns a plain-English description into
// segment conditions (section 5). It reads tokens left to right and tries a fixed list of rules at each one; whatever
// has content and no rule could use is returned as the original phrase, never dropped. No I/O and no clock: the same
// description and countries always give the same result (two small caches, of the last country index and of stored
// names' words, only save work).
//
// Decisions, so the route, the README and the tests agree:
// - Numbers: "1,000" and "1 000" group thousands; "1.000,50" and "1.000.000" are European; a decimal comma takes 1-2
//   digits ("9,99"); a lone "1.000" or "12.500" could be a thousand or a decimal, so it is left unmatched. "1k" is a
//   thousand; words count to the millions ("two hundred and fifty", "a dozen", "a couple of"). Currency is read and
//   ignored: amounts are compared as stored, never converted.
// - Durations: a week is 7 days, a fortnight 14, a month 30, a year 365. "Active in the last N days" is `lt N` and
//   "within" is `lte N`, as describeCondition writes them; the bare negations ("haven't bought in 3 months",
//   "inactive for 90 days") are `gte N`, the exact complement of `lt N`; "more than", "at least"... keep their own
//   operator. A window needs an activity word ("active", "bought", "a purchase"...): a bare "in the last 30 days" is
//   unmatched, and so is a count or an amount limited to a period ("spent $500 in the last month"), which no
//   condition can express.
// - "between A and B", "A-B", "from A to B" include both ends. A bare number of purchases is exact ("with 2 orders":
//   gte 2 and lte 2; none or zero: lte 0); a bare amount is a threshold reached ("who spent $500": gte 500).
//   "Repeat" buyers are gte 2 purchases, "one-time" buyers exactly 1; vaguer words ("regulars", "big spenders", "VIP")
//   and statuses ("churned", "inactive" without a duration) are unmatched.
// - Countries: the stored names, ignoring case and accents, then a table of common names, codes and adjectives
//   ("UK", "Deutschland", "German"), used only when exactly one stored country fits. Codes of 2-3 letters count when
//   written in capitals ("US", not "us"), except uk, usa and uae. England, Scotland and Wales are not the United
//   Kingdom; "South America" is not America. Conditions are ANDed, so a second different country, anything after
//   "or", and anything negated ("not in France", "outside Germany") is unmatched, as is an eleventh condition.
import type { Condition } from '../../domain/segments.ts';
import { indexCountries } from './countries.ts';
import { Reader } from './reader.ts';
import { tokenize, type Token } from './tokens.ts';
import { CONNECTORS, FUNCTION, MARKERS, RELATIVES, SEPARATORS, SILENT, isFiller } from './vocabulary.ts';

/** The conditions read from a description (in order, at most 10) and the phrases that could not be used. */
export interface WordsResult {
  conditions: Condition[];
  unmatched: string[];
}

const MAX_CONDITIONS = 10;

const sameCondition = (a: Condition, b: Condition) =>
  a.field === b.field && a.operator === b.operator &&
  (a.field === 'country' ? String(a.value).toLowerCase() === String(b.value).toLowerCase() : a.value === b.value);

/** Returns the conditions a description asks for and the phrases it could not use; never throws. */
export function conditionsFromWords(description: string, countries: readonly string[]): WordsResult {
  const tokens = tokenize(description);
  // Text in capitals throughout ("CUSTOMERS IN ...") cannot tell the code "IN" from the word: codes then need "the"
  const shouting = !/\p{Ll}/u.test(description) && /\p{Lu}{4}/u.test(description);
  const r = new Reader(tokens, indexCountries(countries), shouting);
  const conditions: Condition[] = [];
  /** Per token: 'used', a rejected group's number, or undefined while free. */
  const status: ('used' | number | undefined)[] = new Array(tokens.length).fill(undefined);
  let groups = 0;

  const accept = (fresh: Condition[]) => {
    const added = fresh.filter((c) => !conditions.some((e) => sameCondition(e, c)));
    const held = conditions.find((c) => c.field === 'country');
    if (held && added.some((c) => c.field === 'country')) return false; // ANDed, two countries match no one
    if (conditions.length + added.length > MAX_CONDITIONS) return false;
    conditions.push(...added);
    return true;
  };
  /** The start of a negation or alternative right before `start` ("not in", "or"), or -1. */
  const markerBefore = (start: number) => {
    for (let j = start - 1; j >= 0 && status[j] === undefined; j--) {
      const k = r.key(j);
      if (MARKERS.has(k)) return j;
      if (!(FUNCTION.has(k) || SILENT.has(k) || RELATIVES.has(k))) return -1;
    }
    return -1;
  };

  for (let i = 0; i < tokens.length; ) {
    const hit = r.read(i);
    if (!hit) {
      i++;
      continue;
    }
    let start = hit.start ?? i;
    let end = hit.end;
    const marker = markerBefore(start);
    if (!('reject' in hit) && marker < 0 && accept(hit.conditions)) {
      status.fill('used', start, end);
    } else {
      if (marker >= 0) start = marker;
      if ('reject' in hit && hit.extend) while (end < tokens.length && !r.clauseEnds(end)) end++;
      status.fill(++groups, start, end);
    }
    i = end;
  }

  return { conditions, unmatched: phrasesLeft(description, tokens, status, shouting) };
}

/** The original text of every run of unused tokens that holds content, or of a rejected reading, in order. */
function phrasesLeft(description: string, tokens: Token[], status: ('used' | number | undefined)[], shouting: boolean): string[] {
  const out: string[] = [];
  let run: number[] = [];
  let runGroup: number | undefined;
  // A short word in capitals ("US", "IT") was meant as a name, unless the whole text is in capitals
  const isContent = (t: Token) =>
    (t.caps && !shouting && t.kind === 'word' && t.key.length >= 2) ||
    !isFiller(t.key);
  const flush = () => {
    while (run.length > 0 && runGroup === undefined && !isContent(tokens[run[run.length - 1] as number] as Token)) run.pop();
    if (run.length > 0 && (runGroup !== undefined || run.some((k) => isContent(tokens[k] as Token)))) {
      const first = tokens[run[0] as number] as Token;
      const last = tokens[run[run.length - 1] as number] as Token;
      out.push(description.slice(first.start, last.end).replace(/\s+/g, ' ').trim());
    }
    run = [];
    runGroup = undefined;
  };
  tokens.forEach((t, k) => {
    const s = status[k];
    if (s === 'used' || (s === undefined && (SEPARATORS.has(t.key) || CONNECTORS.has(t.key) || SILENT.has(t.key)))) return flush();
    if (run.length > 0 && runGroup !== s) flush();
    runGroup = s;
    run.push(k);
  });
  flush();
  return out;
}
