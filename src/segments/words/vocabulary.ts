// The words the reader knows: small helpers to build word sets, lookup tables and phrase lists, then the sets of
// separators and filler words, number words, day units, time and currency words, comparators and the phrase lists
// the rules match. Only data, no reading.
import type { NumericOperator } from '../../domain/segments.ts';

export const set = (text: string) => new Set(text.split(' '));
/** A lookup table without a prototype, so no word ("constructor") finds an inherited key. */
export const table = <T>(entries: Record<string, T>): Record<string, T> => Object.assign(Object.create(null), entries);
/** Phrases as key sequences, longest first so the longest match wins. */
const phrases = (...list: string[]) => list.map((p) => p.split(' ')).sort((a, b) => b.length - a.length);

export const SEPARATORS = new Set([',', ';', '.', '!', '?', '(', ')', '[', ']', '{', '}', ':', '/', '&', '|', '"', "'", '…']);
/** Words between clauses: they end a phrase and are never content. */
export const CONNECTORS = set('and but also plus who whose whom that which where while');
/** Words naming the audience or the request: consumed silently, they end a phrase. */
export const SILENT = set(
  'customers customer people persons person users user clients client shoppers shopper buyers buyer members member ' +
    'contacts contact subscribers subscriber accounts account audience segment everyone everybody anyone all folks ' +
    'purchasers consumers consumer residents resident nationals citizens expats households visitors ' +
    'those ones find show list get give select target targeting please want need looking',
);
/** Words that join a phrase but are not content on their own. */
export const FUNCTION = set(
  'a an the in from of for at on to by as or is are was were be been being have has had having do does did done ' +
    'made make makes placed place their they them it its there this these with any some ever yet currently already ' +
    'still only just based located living residing live lives i we us our me my you your his her country countries',
);
/** Whether a word is no content on its own: punctuation, a connector, an audience word or a function word. */
export const isFiller = (key: string) => SEPARATORS.has(key) || CONNECTORS.has(key) || SILENT.has(key) || FUNCTION.has(key);
/** Words that turn what follows into something the conditions cannot say (a negation or an alternative). */
export const MARKERS = set(
  'not never no without except excluding excl exclude excludes excluded outside besides apart aside minus unless instead ' +
    'rather non nor neither either other or',
);
/** Words that make "but" mean "except" when a clause starts with them: "everyone but churned customers". */
export const UNIVERSALS = set('everyone everybody anyone anybody all every');
/** Words after which "but" joins clauses, even after "everyone": "everyone in Kenya but not churned". */
export const BUT_LINKS = set('not never no also only still');
/** Where a sentence ends: the reach of an "everyone" before a "but". */
export const SENTENCE_ENDS = set('. ; ! ?');
export const COMPASS = set('north south east west northern southern eastern western central latin new');

export const ONES: Record<string, number> = table({
  zero: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, eleven: 11,
  twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19,
});
export const TENS: Record<string, number> = table({ twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90 });
export const SCALES: Record<string, number> = table({ hundred: 100, dozen: 12, thousand: 1e3, million: 1e6, billion: 1e9 });
export const TIMES_WORDS: Record<string, number> = table({ once: 1, twice: 2, thrice: 3 });

export const DAY_UNITS: Record<string, number> = table({
  d: 1, day: 1, days: 1, week: 7, weeks: 7, wk: 7, wks: 7, fortnight: 14, fortnights: 14,
  month: 30, months: 30, mo: 30, mos: 30, mth: 30, mths: 30, year: 365, years: 365, yr: 365, yrs: 365,
});
export const TIME_WORDS = new Set([
  ...Object.keys(DAY_UNITS),
  ...'quarter quarters summer winter spring autumn fall christmas holidays weekend today yesterday tonight ytd season ' +
    'january february march april may june july august september october november december jan feb mar apr jun jul ' +
    'aug sep sept oct nov dec',
].flatMap((w) => w.split(' ')));
export const PERIOD_WORDS = set('last past previous prior this recent');
export const WINDOW_PREPS = set('in within during over');
export const NEGATED_PREPS = set('in within during over for since');
export const QUALIFIER_PREPS = set('in from over for a an the');
export const PURCHASE_NOUNS = set('purchase purchases order orders transaction transactions');
export const CURRENCY_SYMBOLS = set('$ € £ ¥ ₹ ₦ ₵ us$ au$ ca$ nz$ hk$ s$');
export const CURRENCY_CODES = set('usd eur gbp chf jpy cad aud nzd sek nok dkk pln czk inr kes ksh ngn ghs zar cny rmb');
export const CURRENCY_WORDS = set(
  'dollar dollars euro euros pound pounds quid buck bucks franc francs naira cedi cedis shilling shillings rand yen yuan rupee rupees',
);
/** Words right after a number that make it a measure of something else ("5 minutes", "50 points"), not money or orders. */
export const OTHER_UNITS = set(
  'minute minutes min mins hour hours hr hrs second seconds sec secs percent pct point points pts item items product ' +
    'products piece pieces unit units visit visits click clicks email emails message messages page pages session sessions ' +
    'view views review reviews star stars kg kilo kilos km mile miles',
);

export type Op = NumericOperator | 'eq';
export const COMPARATORS: [string[], Op][] = (
  [
    ['more than|over|above|greater than|higher than|larger than|bigger than|longer than|exceeding|in excess of|upwards of|>', 'gt'],
    ['at least|no less than|not less than|no fewer than|not fewer than|a minimum of|minimum of|minimum|min|>=', 'gte'],
    ['less than|fewer than|under|below|lower than|smaller than|shorter than|<', 'lt'],
    ['at most|no more than|not more than|a maximum of|maximum of|maximum|max|up to|no longer than|<=', 'lte'],
    ['exactly|precisely|equal to|=', 'eq'],
  ] as const
).flatMap(([list, op]) => phrases(...list.split('|')).map((p): [string[], Op] => [p, op]));
export const POSTFIXES: [string[], Op][] = (
  [
    ['or more|or above|or over|or higher|or greater|or longer|and up|and above|and over|and more|+|at least|minimum|min', 'gte'],
    ['or less|or fewer|or under|or below|or lower|or shorter|and under|and below|and less|and fewer|at most|maximum|max', 'lte'],
  ] as const
).flatMap(([list, op]) => phrases(...list.split('|')).map((p): [string[], Op] => [p, op]));
export const RANGE_LINKS: Record<string, Set<string>> = table({ between: set('and to -'), from: set('to - through until till'), '': set('to - through') });

export const ACTIVITY_VERBS = phrases(
  'active', 'bought', 'buy', 'purchased', 'purchase', 'ordered', 'order', 'shopped', 'shop', 'visited', 'visit',
  'engaged', 'transacted', 'seen', 'logged in', 'log in', 'signed in', 'sign in', 'made a purchase', 'make a purchase',
  'made any purchase', 'made any purchases', 'made an order', 'placed an order', 'place an order', 'placed any orders',
);
export const ACTIVITY_NOUNS = phrases(
  'purchase', 'purchases', 'order', 'orders', 'activity', 'transaction', 'transactions', 'visit', 'visits', 'login',
  'logins', 'buying', 'purchasing', 'ordering', 'shopping',
);
export const VERB_OBJECTS = phrases('anything', 'any thing', 'a thing', 'with us', 'from us', 'at all', 'again', 'yet', 'ever', 'before', 'so far');
export const LAST_NOUNS = phrases(
  'active', 'activity', 'purchase', 'order', 'seen', 'visit', 'visited', 'login', 'bought', 'purchased', 'ordered',
  'shopped', 'transaction', 'purchase date', 'order date', 'activity date',
);
export const PURCHASE_VERBS = phrases(
  'bought', 'buy', 'purchased', 'purchase', 'ordered', 'order', 'shopped', 'shop', 'transacted', 'made a purchase',
  'made any purchase', 'made any purchases', 'made purchases', 'placed an order', 'placed any orders', 'placed orders',
);
export const AMOUNT_LEADS = phrases(
  'spent', 'spend', 'spends', 'spending', 'spenders', 'total spend', 'total spending', 'total spent', 'total amount spent',
  'amount spent', 'lifetime value', 'lifetime spend', 'customer lifetime value', 'ltv', 'clv', 'totalamountspent',
);
export const AMOUNT_FILLERS = phrases('in total', 'a total of', 'total of', 'of', 'is', 'was', 'overall', 'altogether', 'so far', ':');
export const AMOUNT_TRAILERS = phrases(
  'in total', 'total', 'overall', 'altogether', 'so far', 'to date', 'in all', 'lifetime', 'all time', 'in purchases',
  'on purchases', 'in orders', 'in sales', 'in spend', 'in spending', 'in total spend', 'in lifetime value',
  'lifetime value', 'of purchases', 'worth of purchases', 'worth of orders', 'with us', 'spent', 'spend', 'spenders',
);
export const COUNT_LEADS = phrases(
  ...['purchases', 'orders', 'transactions'].flatMap((n) => [`number of ${n}`, `count of ${n}`, `total ${n}`, `total number of ${n}`]),
  'purchase count', 'order count', 'transaction count', 'totaltransactions',
);
export const DAYS_LEADS = phrases(
  ...['purchase', 'order', 'activity', 'visit', 'login', 'transaction'].flatMap((n) => [
    `days since last ${n}`, `days since the last ${n}`, `days since their last ${n}`,
  ]),
  'days inactive', 'days since last active', 'lastactivitydays',
);
export const NOT_FILLERS = set('been yet ever');
export const ARTICLES = set('a an any');
export const NONE_OF = [['purchases'], ['orders'], ['transactions'], ['purchase'], ['order']];
export const NEVER_FILLERS = set('yet ever');
export const INACTIVE_WORDS = phrases('inactive', 'dormant', 'idle', 'no longer active');
/** Words of a change of status: "churned for 90 days" is a time since the last activity, "churned in May" nothing. */
export const CHURN_WORDS = phrases('churned', 'lapsed');
export const LATEST = phrases('last', 'latest', 'most recent');
export const LAST_FILLERS = phrases('was', 'is', ':', 'of');
export const THEIR = set('the their');
export const REPEAT = phrases('repeat', 'repeat-purchase');
export const ONE_TIME = phrases('one-time', 'one time', 'single-purchase', 'single purchase');
export const BUYER_NOUNS = set('buyer buyers customer customers purchaser purchasers shopper shoppers client clients');
export const COUNT_FILLERS = phrases('is', 'of', ':');
export const WITH_US = phrases('with us', 'from us');
export const COUNTRY_PREPS = phrases('in', 'from', 'based in', 'located in', 'living in', 'live in', 'lives in', 'residing in');
export const RELATIVES = set('who that which whose');
/** Nouns after which a money amount is a per-order figure, not a total spent ("orders over $50"). */
export const PER_ORDER = set('order orders purchase purchases transaction transactions basket cart value average item items product products ticket aov each per');
/** Words after a count or an amount that limit it to a period or a kind, which no condition can express. */
export const QUALIFIERS = set('of on per each every at via through since within during this last past previous monthly weekly daily yearly annually lately online offline before after until');

/** The statuses named by a word (product.md 14): "lapsed" is churned. */
export const STATUS_WORDS: Record<string, 'active' | 'inactive' | 'churned'> = table({
  churned: 'churned', lapsed: 'churned', inactive: 'inactive', active: 'active',
});
/** Words before a status word that make it a degree or a time, not a status ("most active", "recently churned"). */
export const STATUS_GUARDS = set('recently newly lately just most least more less very highly last');
/** Words after a status that start a period: the words are then a time since the last activity, or nothing. */
export const DURATION_LEADS = set('for since during within ago recently lately until before after');
/** How the items of a list of countries or statuses are joined: "Kenya, Nigeria or Ghana". */
export const LIST_LINKS = phrases(',', 'or', 'and', ', or', ', and', '/', '&', 'and / or');
const EXCEPT = ['except', 'except for', 'excluding', 'exclude', 'other than', 'apart from', 'aside from', 'besides', 'minus', 'rather than'];
export const COUNTRY_NEGATIONS = phrases(...EXCEPT, 'not', 'non', 'outside', 'outside of');
export const STATUS_NEGATIONS = phrases(...EXCEPT, 'not', 'non', 'no longer');
/** Nouns for the people a demonym qualifies: "Kenyan customers", "Ghanaian shoppers". */
export const PEOPLE = new Set([...BUYER_NOUNS, ...set(
  'people persons person users user members member contacts contact subscribers subscriber accounts account audience ' +
    'folks purchasers consumers consumer residents resident nationals citizens expats households visitors ones spenders',
)]);
/** Words between a negation and what it negates: "except (customers who are) in Kenya", "not (yet) churned". */
export const NEGATION_FILLERS = new Set([...SILENT, ...set('who that which are is were been yet ever the either any')]);
