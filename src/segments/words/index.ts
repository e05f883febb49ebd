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
//   are unmatched. A unit or sign right after a number makes it something else ("spent 5 minutes", "over 50%": the
//   whole phrase is unmatched); any other unknown word there is reported on its own and the number still read.
// - Statuses (product.md 14): "churned" and "lapsed" are churned, "inactive" inactive, "active" active (eq); listed
//   with "or", "and" or commas they are `in`; after "not", "except", "excluding", "non-", "no longer" they are `neq`,
//   one per status. Only where no period follows or precedes: "inactive (customers) for 90 days" and "active in the
//   last 2 weeks" stay days since the last activity, as do "churned for more than 90 days" and "inactive customers in
//   the last 30 days" (gte 30); "churned in the last 6 months" dates a churn no field holds, and "churned last month",
//   "recently churned" and "most active" are unmatched.
// - "Except": "except", "excluding", "exclude", "other than", "apart from", "aside from", "besides", "minus", "rather
//   than", and "but" in a clause that starts with "everyone", "all", "anyone"... ("everyone but churned customers",
//   "all customers in Kenya but the churned ones") make a country or status `neq`; what they cannot negate is
//   unmatched with them ("but customers who spent over 100"), never read as it stands. "but not" is a plain "and".
// - Countries: the stored names, ignoring case and accents, then a table of common names, codes and demonyms
//   (country-names.ts: "UK", "Deutschland", "Kenyan"), used only when exactly one stored country fits. A demonym
//   counts where it qualifies people ("Kenyan customers", "Ghanaian repeat shoppers", "customers who are Kenyan",
//   "Kenyans") or where it is all its clause says ("Kenyan", "French, with 3 orders"), not elsewhere ("speak French",
//   "French speakers"); "non-Kenyan", "non-UK" and "not Kenyan" are `neq`. Codes of 2-3 letters count when written in capitals ("US", not "us"),
//   except uk, usa and uae. England, Scotland and Wales are not the United Kingdom; "South America" is not America.
//   Countries listed after one "in" with "or", "and" or commas are one `in` (a list naming a country two stored
//   names fit is unmatched); after "not in", "outside", "except (customers in)", "excluding", "other than" they are
//   `neq`, one per country.
// - Conditions are ANDed: a second country or status that allows (eq, in) beside a first, a condition that leaves no
//   country or status ("in Kenya" and "outside Kenya"), anything after "or" that is not a list, and an eleventh
//   condition are unmatched.
import { compileConditions, type Condition } from '../../domain/segments.ts';
import { butExcept } from './choices.ts';
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
/** Any instant: only countries and statuses are compiled, and they do not depend on time. */
const EPOCH = new Date(0);

/** The value of a condition as a comparable key: lists of countries or statuses in any order, countries in any case. */
const valueKey = (c: Condition) => {
  const values = (Array.isArray(c.value) ? c.value : [c.value]).map((v) => (c.field === 'country' ? String(v).toLowerCase() : String(v)));
  return JSON.stringify(Array.isArray(c.value) ? values.sort() : values);
};
const sameCondition = (a: Condition, b: Condition) => a.field === b.field && a.operator === b.operator && valueKey(a) === valueKey(b);
/** A condition that allows a country or status (eq, in), not one that excludes it. */
const allows = (c: Condition, field: 'country' | 'status') => c.field === field && c.operator !== 'neq';

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
    for (const field of ['country', 'status'] as const) {
      // ANDed, a second country or status (or list of them) narrows the first to one or none: it is left to the reader
      if (conditions.some((c) => allows(c, field)) && added.some((c) => allows(c, field))) return false;
    }
    // "in Kenya" and "outside Kenya", or every status excluded, match no one
    const choices = [...conditions, ...added].filter((c) => c.field === 'country' || c.field === 'status');
    if (compileConditions(choices, EPOCH) === null) return false;
    if (conditions.length + added.length > MAX_CONDITIONS) return false;
    conditions.push(...added);
    return true;
  };
  /** The start of a negation or alternative right before `start` ("not in", "or"), or -1. */
  const markerBefore = (start: number) => {
    for (let j = start - 1; j >= 0 && status[j] === undefined; j--) {
      const k = r.key(j);
      if (MARKERS.has(k) || butExcept(r, j)) return j;
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

  return { conditions, unmatched: phrasesLeft(description, r, status, shouting) };
}

/** The original text of every run of unused tokens that holds content, or of a rejected reading, in order. */
function phrasesLeft(description: string, r: Reader, status: ('used' | number | undefined)[], shouting: boolean): string[] {
  const tokens = r.tokens;
  const out: string[] = [];
  let run: number[] = [];
  let runGroup: number | undefined;
  // A short word in capitals ("US", "IT") was meant as a name, unless the whole text is in capitals
  const isContent = (t: Token) =>
    (t.caps && !shouting && t.kind === 'word' && t.key.length >= 2) ||
    !isFiller(t.key) ||
    butExcept(r, tokens.indexOf(t));
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
    // an "everyone but" is kept with what it excludes: "but VIPs", never "VIPs" alone
    const but = s === undefined && butExcept(r, k);
    if (s === 'used' || (s === undefined && !but && (SEPARATORS.has(t.key) || CONNECTORS.has(t.key) || SILENT.has(t.key)))) return flush();
    if (run.length > 0 && runGroup !== s) flush();
    runGroup = s;
    run.push(k);
  });
  flush();
  return out;
}
