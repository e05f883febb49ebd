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
import type { Condition, NumericField, NumericOperator } from '../domain/segments.ts';

/** The conditions read from a description (in order, at most 10) and the phrases that could not be used. */
export interface WordsResult {
  conditions: Condition[];
  unmatched: string[];
}

const MAX_CONDITIONS = 10;
const MAX_COUNTRY_LENGTH = 80;

const set = (text: string) => new Set(text.split(' '));
/** A lookup table without a prototype, so no word ("constructor") finds an inherited key. */
const table = <T>(entries: Record<string, T>): Record<string, T> => Object.assign(Object.create(null), entries);
/** Phrases as key sequences, longest first so the longest match wins. */
const phrases = (...list: string[]) => list.map((p) => p.split(' ')).sort((a, b) => b.length - a.length);

const SEPARATORS = new Set([',', ';', '.', '!', '?', '(', ')', '[', ']', '{', '}', ':', '/', '&', '|', '"', "'", '…']);
/** Words between clauses: they end a phrase and are never content. */
const CONNECTORS = set('and but also plus who whose whom that which where while');
/** Words naming the audience or the request: consumed silently, they end a phrase. */
const SILENT = set(
  'customers customer people persons person users user clients client shoppers shopper buyers buyer members member ' +
    'contacts contact subscribers subscriber accounts account audience segment everyone everybody anyone all folks ' +
    'those ones find show list get give select target targeting please want need looking',
);
/** Words that join a phrase but are not content on their own. */
const FUNCTION = set(
  'a an the in from of for at on to by as or is are was were be been being have has had having do does did done ' +
    'made make makes placed place their they them it its there this these with any some ever yet currently already ' +
    'still only just based located living residing live lives i we us our me my you your his her country countries',
);
/** Whether a word is no content on its own: punctuation, a connector, an audience word or a function word. */
const isFiller = (key: string) => SEPARATORS.has(key) || CONNECTORS.has(key) || SILENT.has(key) || FUNCTION.has(key);
/** Words that turn what follows into something the conditions cannot say (a negation or an alternative). */
const MARKERS = set('not never no without except excluding excl outside besides non nor neither either other or');
const COMPASS = set('north south east west northern southern eastern western central latin new');

const ONES: Record<string, number> = table({
  zero: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11,
  twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19,
});
const TENS: Record<string, number> = table({ twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90 });
const SCALES: Record<string, number> = table({ hundred: 100, dozen: 12, thousand: 1e3, million: 1e6, billion: 1e9 });
const TIMES_WORDS: Record<string, number> = table({ once: 1, twice: 2, thrice: 3 });

interface Unit {
  factor: number;
  name: 'days' | 'purchases' | 'times' | 'currency';
}
const DAY_UNITS: Record<string, number> = table({
  d: 1, day: 1, days: 1, week: 7, weeks: 7, wk: 7, wks: 7, fortnight: 14, fortnights: 14,
  month: 30, months: 30, mo: 30, mos: 30, mth: 30, mths: 30, year: 365, years: 365, yr: 365, yrs: 365,
});
const TIME_WORDS = new Set([
  ...Object.keys(DAY_UNITS),
  ...'quarter quarters summer winter spring autumn fall christmas holidays weekend today yesterday tonight ytd season ' +
    'january february march april may june july august september october november december jan feb mar apr jun jul ' +
    'aug sep sept oct nov dec',
].flatMap((w) => w.split(' ')));
const PERIOD_WORDS = set('last past previous prior this recent');
const WINDOW_PREPS = set('in within during over');
const NEGATED_PREPS = set('in within during over for since');
const QUALIFIER_PREPS = set('in from over for a an the');
const PURCHASE_NOUNS = set('purchase purchases order orders transaction transactions');
const CURRENCY_SYMBOLS = set('$ € £ ¥ ₹ us$ au$ ca$ nz$ hk$ s$');
const CURRENCY_CODES = set('usd eur gbp chf jpy cad aud nzd sek nok dkk pln czk inr');
const CURRENCY_WORDS = set('dollar dollars euro euros pound pounds quid buck bucks franc francs');

type Op = NumericOperator | 'eq';
const COMPARATORS: [string[], Op][] = (
  [
    ['more than|over|above|greater than|higher than|larger than|bigger than|longer than|exceeding|in excess of|upwards of|>', 'gt'],
    ['at least|no less than|not less than|no fewer than|not fewer than|a minimum of|minimum of|minimum|min|>=', 'gte'],
    ['less than|fewer than|under|below|lower than|smaller than|shorter than|<', 'lt'],
    ['at most|no more than|not more than|a maximum of|maximum of|maximum|max|up to|no longer than|<=', 'lte'],
    ['exactly|precisely|equal to|=', 'eq'],
  ] as const
).flatMap(([list, op]) => phrases(...list.split('|')).map((p): [string[], Op] => [p, op]));
const POSTFIXES: [string[], Op][] = (
  [
    ['or more|or above|or over|or higher|or greater|or longer|and up|and above|and over|and more|+|at least|minimum|min', 'gte'],
    ['or less|or fewer|or under|or below|or lower|or shorter|and under|and below|and less|and fewer|at most|maximum|max', 'lte'],
  ] as const
).flatMap(([list, op]) => phrases(...list.split('|')).map((p): [string[], Op] => [p, op]));
const RANGE_LINKS: Record<string, Set<string>> = table({ between: set('and to -'), from: set('to - through until till'), '': set('to - through') });

const ACTIVITY_VERBS = phrases(
  'active', 'bought', 'buy', 'purchased', 'purchase', 'ordered', 'order', 'shopped', 'shop', 'visited', 'visit',
  'engaged', 'transacted', 'seen', 'logged in', 'log in', 'signed in', 'sign in', 'made a purchase', 'make a purchase',
  'made any purchase', 'made any purchases', 'made an order', 'placed an order', 'place an order', 'placed any orders',
);
const ACTIVITY_NOUNS = phrases(
  'purchase', 'purchases', 'order', 'orders', 'activity', 'transaction', 'transactions', 'visit', 'visits', 'login',
  'logins', 'buying', 'purchasing', 'ordering', 'shopping',
);
const VERB_OBJECTS = phrases('anything', 'any thing', 'a thing', 'with us', 'from us', 'at all', 'again', 'yet', 'ever', 'before', 'so far');
const LAST_NOUNS = phrases(
  'active', 'activity', 'purchase', 'order', 'seen', 'visit', 'visited', 'login', 'bought', 'purchased', 'ordered',
  'shopped', 'transaction', 'purchase date', 'order date', 'activity date',
);
const PURCHASE_VERBS = phrases(
  'bought', 'buy', 'purchased', 'purchase', 'ordered', 'order', 'shopped', 'shop', 'transacted', 'made a purchase',
  'made any purchase', 'made any purchases', 'made purchases', 'placed an order', 'placed any orders', 'placed orders',
);
const AMOUNT_LEADS = phrases(
  'spent', 'spend', 'spends', 'spending', 'spenders', 'total spend', 'total spending', 'total spent', 'total amount spent',
  'amount spent', 'lifetime value', 'lifetime spend', 'customer lifetime value', 'ltv', 'clv', 'totalamountspent',
);
const AMOUNT_FILLERS = phrases('in total', 'a total of', 'total of', 'of', 'is', 'was', 'overall', 'altogether', 'so far', ':');
const AMOUNT_TRAILERS = phrases(
  'in total', 'total', 'overall', 'altogether', 'so far', 'to date', 'in all', 'lifetime', 'all time', 'in purchases',
  'on purchases', 'in orders', 'in sales', 'in spend', 'in spending', 'in total spend', 'in lifetime value',
  'lifetime value', 'of purchases', 'worth of purchases', 'worth of orders', 'with us', 'spent', 'spend', 'spenders',
);
const COUNT_LEADS = phrases(
  ...['purchases', 'orders', 'transactions'].flatMap((n) => [`number of ${n}`, `count of ${n}`, `total ${n}`, `total number of ${n}`]),
  'purchase count', 'order count', 'transaction count', 'totaltransactions',
);
const DAYS_LEADS = phrases(
  ...['purchase', 'order', 'activity', 'visit', 'login', 'transaction'].flatMap((n) => [
    `days since last ${n}`, `days since the last ${n}`, `days since their last ${n}`,
  ]),
  'days inactive', 'days since last active', 'lastactivitydays',
);
const NOT_FILLERS = set('been yet ever');
const ARTICLES = set('a an any');
const NONE_OF = [['purchases'], ['orders'], ['transactions'], ['purchase'], ['order']];
const NEVER_FILLERS = set('yet ever');
const INACTIVE_WORDS = phrases('inactive', 'dormant', 'lapsed', 'idle', 'no longer active');
const LATEST = phrases('last', 'latest', 'most recent');
const LAST_FILLERS = phrases('was', 'is', ':', 'of');
const THEIR = set('the their');
const REPEAT = phrases('repeat', 'repeat-purchase');
const ONE_TIME = phrases('one-time', 'one time', 'single-purchase', 'single purchase');
const BUYER_NOUNS = set('buyer buyers customer customers purchaser purchasers shopper shoppers client clients');
const COUNT_FILLERS = phrases('is', 'of', ':');
const WITH_US = phrases('with us', 'from us');
const COUNTRY_PREPS = phrases('in', 'from', 'based in', 'located in', 'living in', 'live in', 'lives in', 'residing in');
const RELATIVES = set('who that which whose');
/** Nouns after which a money amount is a per-order figure, not a total spent ("orders over $50"). */
const PER_ORDER = set('order orders purchase purchases transaction transactions basket cart value average item items product products ticket aov each per');
/** Words after a count or an amount that limit it to a period or a kind, which no condition can express. */
const QUALIFIERS = set('of on per each every at via through since within during this last past previous monthly weekly daily yearly annually lately online offline before after until');

/**
 * Common names, codes and adjectives for countries, each line one country; used only when one stored name fits. Codes
 * that are also words or abbreviations (IT, AT, BE, NO, CA for California, "i.e.") are left out.
 */
const COUNTRY_ALIASES = [
  'united kingdom|uk|gb|great britain|britain|british',
  'united states|united states of america|us|usa|america|american',
  'germany|deutschland|de|german',
  'france|fr|french',
  'spain|espana|es|spanish',
  'italy|italia|italian',
  'netherlands|holland|nederland|nl|dutch',
  'belgium|belgie|belgique|belgian',
  'austria|osterreich|austrian',
  'switzerland|schweiz|suisse|svizzera|ch|swiss',
  'ireland|republic of ireland|eire|irish',
  'portugal|pt|portuguese',
  'poland|polska|pl|polish',
  'sweden|sverige|se|swedish',
  'denmark|danmark|dk|danish',
  'norway|norge|norwegian',
  'finland|suomi|fi|finnish',
  'czech republic|czechia|cz|czech',
  'greece|hellas|gr|greek',
  'canada|canadian',
  'australia|au|aus|australian',
  'new zealand|nz',
  'japan|jp|japanese',
  'china|cn|chinese',
  'brazil|brasil|br|brazilian',
  'mexico|mx|mexican',
  'south korea|republic of korea|kr',
  'united arab emirates|uae|ae',
  'turkey|turkiye|tr|turkish',
  'south africa|za',
  'luxembourg|lu',
  'russia|russian federation|ru|russian',
];
/** Short names that are not English words, so they count in any case. */
const ANY_CASE = set('uk usa uae');

interface Token {
  /** Lower case, without accents or abbreviation dots; "–" is "-", "≥" is ">=". */
  key: string;
  start: number;
  end: number;
  /** The value of a numeral, NaN when its separators are ambiguous; undefined for words and symbols. */
  num: number | undefined;
  kind: 'word' | 'number' | 'symbol';
  /** Written in capitals or as a dotted abbreviation ("US", "U.K."). */
  caps: boolean;
}

const LEXEME = new RegExp(
  [
    String.raw`(?<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d|[.,]\d)|\d{1,3}(?:\.\d{3})+(?:,\d+)?(?!\d|[.,]\d)|\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:[.,]\d+)?(?!\d)|\d+(?:[.,]\d+)?)(?<k>[kK](?![\p{L}\p{N}]))?`,
    String.raw`(?<cur>(?:US|AU|CA|NZ|HK|S)\$)`,
    String.raw`(?<abbr>(?:\p{L}\.){2,})`,
    String.raw`(?<word>[\p{L}\p{M}]+(?:['’\-][\p{L}\p{M}]+)*)`,
    String.raw`(?<sym>>=|<=|\S)`,
  ].join('|'),
  'gu',
);
const CONTRACTIONS: [string, string][] = [["n't", 'not'], ["'ve", 'have'], ["'re", 'are'], ["'ll", 'will'], ["'d", 'had'], ["'m", 'am'], ["'s", 'is']];
const NOT_BASES: Record<string, string> = table({ ca: 'can', wo: 'will', sha: 'shall', ai: 'am' });
const SYMBOL_KEYS: Record<string, string> = table({ '–': '-', '—': '-', '−': '-', '≥': '>=', '≤': '<=', '’': "'", '“': '"', '”': '"' });

const fold = (text: string) => text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().replace(/’/g, "'");

/** The value of a numeral as written, or NaN when it could be read two ways ("1.000"). */
function numeral(text: string): number {
  const t = text.replace(/[ \u00a0\u202f]/g, '');
  if (/^\d{1,3}(,\d{3})+(\.\d+)?$/.test(t)) return Number(t.replaceAll(',', ''));
  if (/^\d{1,3}(\.\d{3})+(,\d+)?$/.test(t)) {
    if (!t.includes(',') && t.split('.').length === 2) return NaN;
    return Number(t.replaceAll('.', '').replace(',', '.'));
  }
  if (/^\d+,\d{1,2}$/.test(t)) return Number(t.replace(',', '.'));
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  return NaN;
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  for (const m of text.matchAll(LEXEME)) {
    const g = m.groups ?? {};
    const raw = m[0];
    const start = m.index ?? 0;
    const end = start + raw.length;
    const caps = /\p{L}/u.test(raw) && raw === raw.toUpperCase();
    if (g.num !== undefined) {
      const value = numeral(g.num) * (g.k ? 1000 : 1);
      tokens.push({ key: raw.toLowerCase(), start, end, num: value, kind: 'number', caps: false });
    } else if (g.cur !== undefined) {
      tokens.push({ key: raw.toLowerCase(), start, end, num: undefined, kind: 'symbol', caps: true });
    } else if (g.abbr !== undefined) {
      tokens.push({ key: fold(raw).replaceAll('.', ''), start, end, num: undefined, kind: 'word', caps: true });
    } else if (g.word !== undefined) {
      let key = fold(raw);
      let cut = end;
      let extra: Token | undefined;
      const contraction = CONTRACTIONS.find(([suffix]) => key.endsWith(suffix) && key.length > suffix.length);
      if (contraction) {
        key = key.slice(0, -contraction[0].length);
        cut = end - contraction[0].length;
        extra = { key: contraction[1], start: cut, end, num: undefined, kind: 'word', caps };
        if (contraction[1] === 'not') key = NOT_BASES[key] ?? key;
      } else if (key.endsWith('-based') && key.length > 6) {
        cut = end - 6; // "UK-based" reads as "UK based"
        key = key.slice(0, -6);
        extra = { key: 'based', start: cut + 1, end, num: undefined, kind: 'word', caps };
      }
      const head = raw.slice(0, cut - start);
      tokens.push({ key, start, end: cut, num: undefined, kind: 'word', caps: head === head.toUpperCase() });
      if (extra) tokens.push(extra);
    } else {
      tokens.push({ key: SYMBOL_KEYS[raw] ?? raw, start, end, num: undefined, kind: 'symbol', caps: false });
    }
  }
  return tokens;
}

/** The keys of a country name, without a leading "the". */
function keysOf(name: string): string[] {
  const keys = tokenize(name).map((t) => t.key);
  return keys[0] === 'the' ? keys.slice(1) : keys;
}

/** Keys of stored names already read: the same few hundred names arrive with every request. */
const storedKeys = new Map<string, string[]>();
function cachedKeysOf(name: string): string[] {
  let keys = storedKeys.get(name);
  if (!keys) {
    if (storedKeys.size >= 10_000) storedKeys.clear(); // bounded; dirty data may hold many spellings
    keys = keysOf(name);
    storedKeys.set(name, keys);
  }
  return keys;
}

const ALIAS_KEYS = COUNTRY_ALIASES.map((line) => line.split('|').map(keysOf));

interface CountryEntry {
  keys: string[];
  /** The stored spelling, or null when the name fits more than one stored country. */
  stored: string | null;
  /** A short code: it counts only in capitals or after "the". */
  short: boolean;
}

/** The last index built, by its countries: requests in a row see the same list. */
let lastIndex: { countries: string; index: Map<string, CountryEntry[]> } | undefined;

/** Every way of naming a stored country, by first key, longest first; stored names come before aliases. */
function indexCountries(countries: readonly string[]): Map<string, CountryEntry[]> {
  const key = JSON.stringify(countries);
  if (lastIndex?.countries !== key) lastIndex = { countries: key, index: buildIndex(countries) };
  return lastIndex.index;
}

function buildIndex(countries: readonly string[]): Map<string, CountryEntry[]> {
  const entries = new Map<string, CountryEntry>();
  const storedByKey = new Map<string, string>();
  const add = (keys: string[], stored: string | null) => {
    const joined = keys.join(' ');
    if (keys.length === 0 || entries.has(joined)) return;
    const short = keys.length === 1 && /^[a-z]{1,3}$/.test(joined) && !ANY_CASE.has(joined);
    entries.set(joined, { keys, stored, short });
  };
  for (const raw of countries) {
    const name = raw.trim();
    if (name.length === 0 || name.length > MAX_COUNTRY_LENGTH) continue; // no valid condition could name it
    const keys = cachedKeysOf(name);
    const joined = keys.join(' ');
    if (keys.length === 0 || storedByKey.has(joined)) continue;
    storedByKey.set(joined, name);
    add(keys, name);
  }
  for (const names of ALIAS_KEYS) {
    const fits = [...new Set(names.map((k) => k.join(' ')).filter((k) => storedByKey.has(k)))];
    if (fits.length === 0) continue;
    const stored = fits.length === 1 ? (storedByKey.get(fits[0] as string) ?? null) : null;
    for (const keys of names) add(keys, stored);
  }
  const index = new Map<string, CountryEntry[]>();
  for (const entry of entries.values()) {
    const first = entry.keys[0] as string;
    const list = index.get(first);
    if (list) list.push(entry);
    else index.set(first, [entry]);
  }
  for (const list of index.values()) list.sort((a, b) => b.keys.length - a.keys.length); // stable: stored names first
  return index;
}

type Bound = [NumericOperator, number];
interface Measure {
  value: number;
  unit: Unit | undefined;
  end: number;
}
interface Scale {
  /** Reads one number with its own unit if any: "3 months", "$500", "twice". */
  measure(i: number, allowAnd: boolean): Measure | undefined;
  /** Reads a unit written once after the numbers: "orders" in "between 2 and 5 orders". */
  unit(i: number): { unit: Unit; end: number } | undefined;
}
interface Quantity {
  form: 'bound' | 'range' | 'exact' | 'bare';
  bounds: Bound[];
  /** The unit of each number, undefined where none was written. */
  units: (Unit | undefined)[];
  end: number;
}
/** A rule's reading: conditions, or a phrase that must be reported (`extend`: up to the end of its clause). */
type Hit = { start?: number; end: number; conditions: Condition[] } | { start?: number; end: number; reject: true; extend?: boolean };
type Rule = (r: Reader, i: number) => Hit | undefined;

class Reader {
  readonly n: number;
  private readonly memo = new Map<number, Hit | null>();
  private readonly quantities = new Map<number, Quantity | undefined>();
  readonly days: Scale;
  readonly counts: Scale;
  readonly amounts: Scale;

  constructor(
    readonly tokens: Token[],
    readonly countries: Map<string, CountryEntry[]>,
    readonly shouting: boolean,
  ) {
    this.n = tokens.length;
    const dayUnit = (i: number) => {
      const factor = DAY_UNITS[this.key(i)];
      return factor === undefined ? undefined : { unit: { factor, name: 'days' } as Unit, end: i + 1 };
    };
    this.days = {
      measure: (i, allowAnd) => {
        const one = (this.key(i) === 'a' || this.key(i) === 'an') && dayUnit(i + 1);
        if (one) return { value: 1, unit: one.unit, end: one.end };
        const number = this.number(i, allowAnd);
        if (!number) return undefined;
        const unit = dayUnit(number.end);
        return { value: number.value, unit: unit?.unit, end: unit?.end ?? number.end };
      },
      unit: dayUnit,
    };
    const countUnit = (i: number) => {
      const k = this.key(i);
      if (PURCHASE_NOUNS.has(k)) return { unit: { factor: 1, name: 'purchases' } as Unit, end: i + 1 };
      if (k === 'time' || k === 'times') return { unit: { factor: 1, name: 'times' } as Unit, end: i + 1 };
      return undefined;
    };
    this.counts = {
      measure: (i, allowAnd) => {
        const times = TIMES_WORDS[this.key(i)];
        if (times !== undefined) return { value: times, unit: { factor: 1, name: 'times' }, end: i + 1 };
        const number = this.number(i, allowAnd);
        if (!number) return undefined;
        const unit = countUnit(number.end);
        return { value: number.value, unit: unit?.unit, end: unit?.end ?? number.end };
      },
      unit: countUnit,
    };
    const currency = (i: number, prefix: boolean) => {
      const k = this.key(i);
      return CURRENCY_SYMBOLS.has(k) || CURRENCY_CODES.has(k) || (!prefix && CURRENCY_WORDS.has(k));
    };
    this.amounts = {
      measure: (i, allowAnd) => {
        const before = currency(i, true);
        const j = before ? i + 1 : i;
        const number = this.key(j) === 'nothing' ? { value: 0, end: j + 1 } : this.number(j, allowAnd);
        if (!number) return undefined;
        const after = currency(number.end, false);
        const unit: Unit | undefined = before || after ? { factor: 1, name: 'currency' } : undefined;
        return { value: number.value, unit, end: number.end + (after ? 1 : 0) };
      },
      unit: (i) => (currency(i, false) ? { unit: { factor: 1, name: 'currency' }, end: i + 1 } : undefined),
    };
  }

  key(i: number): string {
    return this.tokens[i]?.key ?? '';
  }

  /** The end of the longest phrase of `list` starting at `i`, or -1. */
  phrase(i: number, list: readonly string[][]): number {
    if (i < 0) return -1;
    next: for (const words of list) {
      for (let k = 0; k < words.length; k++) if (this.key(i + k) !== words[k]) continue next;
      return i + words.length;
    }
    return -1;
  }

  /** `i` moved past an optional phrase of `list`. */
  optional(i: number, list: readonly string[][]): number {
    const end = this.phrase(i, list);
    return end < 0 ? i : end;
  }

  skip(i: number, words: Set<string>): number {
    while (i < this.n && words.has(this.key(i))) i++;
    return i;
  }

  /** Where a phrase ends: a separator, connector or audience word, the end, or the start of another reading. */
  boundary(i: number): boolean {
    const t = this.tokens[i];
    if (!t) return true;
    return SEPARATORS.has(t.key) || CONNECTORS.has(t.key) || SILENT.has(t.key);
  }

  /** A number in digits or words at `i`: "1,000", "2.5k", "1.5 million", "twenty-five", "a dozen", "a couple of". */
  number(i: number, allowAnd: boolean): { value: number; end: number } | undefined {
    const t = this.tokens[i];
    if (!t) return undefined;
    if (t.kind === 'number') {
      if (!Number.isFinite(t.num)) return undefined;
      const scale = SCALES[this.key(i + 1)];
      return scale === undefined ? { value: t.num as number, end: i + 1 } : { value: (t.num as number) * scale, end: i + 2 };
    }
    let j = i;
    if (t.key === 'a' || t.key === 'an') {
      if (this.key(i + 1) === 'couple') return { value: 2, end: this.key(i + 2) === 'of' ? i + 3 : i + 2 };
      if (SCALES[this.key(i + 1)] === undefined) return undefined;
      j = i + 1;
    }
    let total = 0;
    let current = j > i ? 1 : 0;
    let last: 'start' | 'ones' | 'tens' | 'scale' = j > i ? 'ones' : 'start';
    for (;;) {
      const k = this.key(j);
      const parts = k.split('-');
      const small = parts.every((p) => p in ONES || p in TENS) && parts.length <= 2;
      if (small && (last === 'start' || last === 'scale' || (last === 'tens' && parts.length === 1 && (ONES[k] ?? 10) < 10))) {
        const value = parts.reduce((sum, p) => sum + (ONES[p] ?? TENS[p] ?? 0), 0);
        current += value;
        last = parts.length === 1 && k in TENS ? 'tens' : 'ones';
      } else if (k in SCALES && last !== 'start') {
        const scale = SCALES[k] as number;
        if (scale >= 1000) {
          total += current * scale;
          current = 0;
        } else current *= scale;
        last = 'scale';
      } else if (allowAnd && k === 'and' && last === 'scale' && (this.key(j + 1) in ONES || this.key(j + 1) in TENS)) {
        // "two hundred and fifty": the "and" belongs to the number
      } else break;
      j++;
    }
    return last === 'start' ? undefined : { value: total + current, end: j };
  }

  comparator(i: number): { op: Op; end: number } | undefined {
    for (const [words, op] of COMPARATORS) {
      const end = this.phrase(i, [words]);
      if (end >= 0) return { op, end };
    }
    return undefined;
  }

  postfix(i: number): { op: Op; end: number } | undefined {
    for (const [words, op] of POSTFIXES) {
      const end = this.phrase(i, [words]);
      // "at least 5 orders" after an amount starts a new reading; it is no postfix
      if (end >= 0 && (words[0] === '+' || words[0] === 'or' || !this.number(end, false))) return { op, end };
    }
    return undefined;
  }

  /** A comparison, range or bare number on a scale: "more than 3 months", "between $100 and $500", "5+ orders". */
  quantity(i: number, scale: Scale): Quantity | undefined {
    const slot = i * 3 + (scale === this.days ? 0 : scale === this.counts ? 1 : 2);
    if (!this.quantities.has(slot)) this.quantities.set(slot, this.readQuantity(i, scale));
    return this.quantities.get(slot);
  }

  private readQuantity(i: number, scale: Scale): Quantity | undefined {
    let form: Quantity['form'] | undefined;
    let op: Op = 'eq';
    let measures: Measure[] = [];
    const lead = this.key(i);
    const range = (from: number, links: Set<string> | undefined) => {
      // "between two hundred and fifty and 300" first, then "between two hundred and 300"
      for (const allowAnd of [true, false]) {
        const a = scale.measure(from, allowAnd);
        const b = a && links?.has(this.key(a.end)) ? scale.measure(a.end + 1, true) : undefined;
        if (a && b) {
          [measures, form] = [[a, b], 'range'];
          return true;
        }
      }
      return false;
    };
    if (lead !== 'between' && lead !== 'from') {
      const c = this.comparator(i);
      const m = c && scale.measure(c.end, true);
      if (c && m) {
        [form, op, measures] = [c.op === 'eq' ? 'exact' : 'bound', c.op, [m]];
      } else if (!range(i, RANGE_LINKS[''])) {
        const plain = scale.measure(i, true);
        if (!plain) return undefined;
        measures = [plain];
        form = 'bare';
        const p = this.postfix(plain.end);
        if (p) [form, op, measures] = ['bound', p.op, [{ ...plain, end: p.end }]];
      }
    } else if (!range(i + 1, RANGE_LINKS[lead])) return undefined;
    const last = measures[measures.length - 1] as Measure;
    let end = last.end;
    let shared: Unit | undefined;
    if (!last.unit) {
      const u = scale.unit(end);
      if (u) [shared, end] = [u.unit, u.end];
    }
    if (form === 'bare') {
      const p = this.postfix(end);
      if (p) [form, op, end] = ['bound', p.op, p.end];
    }
    const units = measures.map((m) => m.unit ?? shared ?? last.unit); // "between 2 and 5 orders"
    const values = measures.map((m, k) => m.value * (units[k]?.factor ?? 1));
    if (!values.every(Number.isFinite)) return undefined;
    const [lo, hi] = [Math.min(...values), Math.max(...values)];
    const value = values[0] as number;
    if (form === 'range' && lo === hi) form = 'exact';
    const bounds: Bound[] =
      form === 'range' ? [['gte', lo], ['lte', hi]]
      : form === 'exact' || form === 'bare' || op === 'eq' ? [['gte', value], ['lte', value]]
      : [[op, value]];
    return { form: form ?? 'bare', bounds, units, end };
  }

  /** The stored country named at `i` (after an optional "the"), or null when the name is ambiguous. */
  country(i: number): { stored: string | null; end: number } | undefined {
    const from = this.key(i) === 'the' ? i + 1 : i;
    const first = this.tokens[from];
    if (!first) return undefined;
    if (COMPASS.has(this.key(from - 1))) return undefined; // "South America" is not America
    for (const entry of this.countries.get(first.key) ?? []) {
      if (!entry.keys.every((k, n) => this.key(from + n) === k)) continue;
      if (entry.short && !((first.caps && !this.shouting) || this.key(from - 1) === 'the')) continue;
      if (this.key(from + entry.keys.length) === '$') continue; // "US$" written apart
      return { stored: entry.stored, end: from + entry.keys.length };
    }
    return undefined;
  }

  /** Whether the words at `i` limit a count or an amount to a period or a kind ("per month", "on shoes"). */
  qualifier(i: number): boolean {
    const k = this.key(i);
    if (QUALIFIERS.has(k)) return true;
    if (!QUALIFIER_PREPS.has(k)) return false;
    for (let j = i + 1; j <= i + 4 && !this.boundary(j); j++) if (TIME_WORDS.has(this.key(j)) || PERIOD_WORDS.has(this.key(j))) return true;
    return false;
  }

  /** The first rule that reads the tokens at `i` (rules depend on the position only, so this is memoized). */
  read(i: number): Hit | undefined {
    if (!this.memo.has(i)) {
      let hit: Hit | null = null;
      for (const rule of RULES) {
        hit = rule(this, i) ?? null;
        if (hit) break;
      }
      this.memo.set(i, hit);
    }
    return this.memo.get(i) ?? undefined;
  }

  /** Whether a phrase may end at `i`: a boundary, or another reading starts there. */
  clauseEnds(i: number): boolean {
    return this.boundary(i) || this.read(i) !== undefined;
  }
}

/** Conditions on a numeric field from bounds, unless the reading goes on to a period or a kind it cannot keep. */
function numeric(r: Reader, start: number, end: number, field: NumericField, bounds: Bound[]): Hit {
  if (r.qualifier(end)) return { start, end, reject: true, extend: true };
  // a word right after the number that no rule reads makes it something else: "spent 5 minutes", "over 50%"
  const next = r.key(end);
  if (end < r.n && !isFiller(next) && !MARKERS.has(next) && !r.read(end)) return { start, end, reject: true, extend: true };
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
  const j = r.phrase(i, INACTIVE_WORDS);
  if (j < 0) return undefined;
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

const country: Rule = (r, i) => {
  const j = r.optional(i, COUNTRY_PREPS);
  const found = r.country(j);
  if (!found) return undefined;
  if (found.stored === null) return { end: found.end, reject: true };
  return { end: found.end, conditions: [{ field: 'country', operator: 'eq', value: found.stored }] };
};

const RULES: Rule[] = [
  negatedActivity, zeroPurchases, inactiveFor, lastActivity, activeWithin, sinceLast, oneTimeOrRepeat, countByLead,
  countByVerb, amountByLead, countByNoun, amountByCurrency, country,
];

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
