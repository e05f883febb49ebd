// The local reader of audience descriptions (product.md 11, src/segments/words/): one table of descriptions with the
// exact conditions and unmatched phrases each must give, then properties every reading keeps: conditions valid for a
// save, the same answer every time, unmatched phrases taken from the description, and describeCondition read back.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as v from 'valibot';
import { prng } from '../scripts/synthetic-customers.ts';
import type { CustomerStatus } from '../src/domain/customers.ts';
import { describeAudience, describeCondition, type Condition, type NumericField, type NumericOperator } from '../src/domain/segments.ts';
import { Conditions } from '../src/schemas/segments.ts';
import { conditionsFromWords } from '../src/segments/words/index.ts';

const COUNTRIES = ['Germany', 'United Kingdom', 'France', 'United States', 'Spain', 'Bosnia and Herzegovina'];

const country = (value: string): Condition => ({ field: 'country', operator: 'eq', value });
const tx = (operator: NumericOperator, value: number): Condition => ({ field: 'totalTransactions', operator, value });
const amount = (operator: NumericOperator, value: number): Condition => ({ field: 'totalAmountSpent', operator, value });
const days = (operator: NumericOperator, value: number): Condition => ({ field: 'lastActivityDays', operator, value });
const countryIn = (...value: string[]): Condition => ({ field: 'country', operator: 'in', value });
const notCountry = (value: string): Condition => ({ field: 'country', operator: 'neq', value });
const status = (operator: 'eq' | 'neq', value: CustomerStatus): Condition => ({ field: 'status', operator, value });
const statusIn = (...value: CustomerStatus[]): Condition => ({ field: 'status', operator: 'in', value });

/** Countries of a base that sells in West Africa as well as in Europe and North America (product.md 14). */
const AFRICA = ['Kenya', 'Nigeria', 'Ghana', 'France', 'United Kingdom', 'Germany', 'United States'];
const LONG_WORD = 'x'.repeat(500 - 'spent more than 500 '.length);

/** [description, countries (COUNTRIES when null), conditions, unmatched] */
type Row = [string, readonly string[] | null, Condition[], string[]];

const ROWS: Row[] = [
  // countries: stored names ignoring case, aliases and codes to the stored spelling, what cannot be ANDed
  ['customers in Germany', null, [country('Germany')], []],
  ['people from germany', null, [country('Germany')], []],
  ['CUSTOMERS IN GERMANY', null, [country('Germany')], []],
  ['UK customers', null, [country('United Kingdom')], []],
  ['shoppers from the U.K.', null, [country('United Kingdom')], []],
  ['customers in Deutschland', null, [country('Germany')], []],
  ['customers in the us', null, [country('United States')], []],
  ['US-based customers', null, [country('United States')], []],
  ['customers in Holland', ['Germany', 'The Netherlands'], [country('The Netherlands')], []],
  ['customers in España', ['spain', 'france'], [country('spain')], []],
  ['German customers', null, [country('Germany')], []],
  ['customers in Britain', ['UK', 'United Kingdom'], [], ['in Britain']],
  ['customers in England', null, [], ['in England']],
  ['customers in Atlantis', null, [], ['in Atlantis']],
  ['customers in South America', null, [], ['in South America']],
  ['customers in it', ['Italy'], [], []],
  ['IT customers', COUNTRIES, [], ['IT']],
  ['customers in Bosnia and Herzegovina with 2 orders', null, [country('Bosnia and Herzegovina'), tx('gte', 2), tx('lte', 2)], []],
  ['customers in Germany, with 5+ orders, in France', null, [country('Germany'), tx('gte', 5)], ['in France']],
  // amounts: currency signs, thousands separators, decimal commas, k, ranges
  ['spent over $1,000', null, [amount('gt', 1000)], []],
  ['spent more than €1.000,50', null, [amount('gt', 1000.5)], []],
  ['spent at least 500', null, [amount('gte', 500)], []],
  ['spent under £50', null, [amount('lt', 50)], []],
  ['spent at most 9,99 euros', null, [amount('lte', 9.99)], []],
  ['spent between $100 and $500', null, [amount('gte', 100), amount('lte', 500)], []],
  ['spent $500-$100', null, [amount('gte', 100), amount('lte', 500)], []],
  ['who spent 1k', null, [amount('gte', 1000)], []],
  ['a lifetime value of up to 2 500 €', null, [amount('lte', 2500)], []],
  ['spent over one thousand two hundred dollars in total', null, [amount('gt', 1200)], []],
  ['customers over $1,000,000', null, [amount('gt', 1_000_000)], []],
  ['spent over 1.500', null, [], ['spent over 1.500']],
  ['orders over $50', null, [], ['orders over $50']],
  ['spent over $500 in the last 30 days', null, [], ['spent over $500 in the last 30 days']],
  ['spent $200 on shoes, in Spain', null, [country('Spain')], ['spent $200 on shoes']],
  ['customers who spent 5 minutes on the site', null, [], ['spent 5 minutes on the site']],
  ['spent over 50%', null, [], ['spent over 50%']],
  // purchases
  ['with at least 5 purchases', null, [tx('gte', 5)], []],
  ['more than three orders', null, [tx('gt', 3)], []],
  ['5+ orders', null, [tx('gte', 5)], []],
  ['a dozen orders or more', null, [tx('gte', 12)], []],
  ['with no more than 2 transactions', null, [tx('lte', 2)], []],
  ['bought at least twice', null, [tx('gte', 2)], []],
  ['ordered more than 3 times', null, [tx('gt', 3)], []],
  ['between 2 and 5 orders', null, [tx('gte', 2), tx('lte', 5)], []],
  ['with two hundred and fifty orders', null, [tx('gte', 250), tx('lte', 250)], []],
  ['between two hundred and fifty and three hundred orders', null, [tx('gte', 250), tx('lte', 300)], []],
  ['no purchases', null, [tx('lte', 0)], []],
  ["people who've never bought anything", null, [tx('lte', 0)], []],
  ['never bought shoes', null, [], ['never bought shoes']],
  ['repeat customers', null, [tx('gte', 2)], []],
  ['one-time buyers', null, [tx('gte', 1), tx('lte', 1)], []],
  ['with 5 orders in the last 30 days', null, [], ['5 orders in the last 30 days']],
  // last activity: days, weeks, months, years; windows and their negations
  ['active in the last 30 days', null, [days('lt', 30)], []],
  ['active within the last 30 days', null, [days('lte', 30)], []],
  ['active in the last two weeks', null, [days('lt', 14)], []],
  ['who bought in the last week', null, [days('lt', 7)], []],
  ['made a purchase in the past 3 months', null, [days('lt', 90)], []],
  ["haven't bought in 3 months", null, [days('gte', 90)], []],
  ['inactive for 90 days', null, [days('gte', 90)], []],
  ['inactive for more than ninety days', null, [days('gt', 90)], []],
  ['lapsed for more than 6 months', null, [days('gt', 180)], []],
  ['no activity in the past year', null, [days('gte', 365)], []],
  ["haven't logged in for a fortnight", null, [days('gte', 14)], []],
  ['last active more than 60 days ago', null, [days('gt', 60)], []],
  ['between 30 and 90 days since the last purchase', null, [days('gte', 30), days('lte', 90)], []],
  ['active in the last few weeks', null, [], ['active in the last few weeks']],
  ['in the last 30 days', null, [], ['in the last 30 days']],
  // combined descriptions
  [
    "regulars in Germany who haven't bought since the summer",
    null,
    [country('Germany')],
    ['regulars', "haven't bought since the summer"],
  ],
  [
    'UK customers who spent over £500 and are active in the last 30 days',
    null,
    [country('United Kingdom'), amount('gt', 500), days('lt', 30)],
    [],
  ],
  [
    'customers in the US, with 5+ orders, who spent between $1,000 and $5,000, inactive for more than a month',
    null,
    [country('United States'), tx('gte', 5), amount('gte', 1000), amount('lte', 5000), days('gt', 30)],
    [],
  ],
  ['customers who spent over $1000 or more than 5 orders', null, [amount('gt', 1000)], ['or more than 5 orders']],
  ['VIP customers in France with at least 3 orders', null, [country('France'), tx('gte', 3)], ['VIP']],
  [
    Array.from({ length: 11 }, (_, k) => `more than ${k} orders`).join(', '),
    null,
    Array.from({ length: 10 }, (_, k) => tx('gt', k)),
    ['more than 10 orders'],
  ],
  // section 14, statuses: where no period follows or precedes; "not", "except", "non-", "no longer" negate
  ['churned customers', AFRICA, [status('eq', 'churned')], []],
  ['lapsed buyers', AFRICA, [status('eq', 'churned')], []],
  ['inactive customers in Kenya', AFRICA, [status('eq', 'inactive'), country('Kenya')], []],
  ['active customers who spent over 100', AFRICA, [status('eq', 'active'), amount('gt', 100)], []],
  ['customers who are not churned', AFRICA, [status('neq', 'churned')], []],
  ["customers who haven't churned", AFRICA, [status('neq', 'churned')], []],
  ['non-churned customers', AFRICA, [status('neq', 'churned')], []],
  ['no longer active customers', AFRICA, [status('neq', 'active')], []],
  ['all customers except the churned ones', AFRICA, [status('neq', 'churned')], []],
  ['churned or inactive customers', AFRICA, [statusIn('churned', 'inactive')], []],
  ['active, inactive or churned customers', AFRICA, [statusIn('active', 'inactive', 'churned')], []],
  ['churned customers who are inactive', AFRICA, [status('eq', 'churned')], ['inactive']],
  ['customers in Kenya or churned customers', AFRICA, [country('Kenya')], ['or churned']],
  // section 14, statuses: the readings of section 11 that stay days since the last activity, and periods left unmatched
  ['inactive for 90 days', AFRICA, [days('gte', 90)], []],
  ['active in the last 2 weeks', AFRICA, [days('lt', 14)], []],
  ['active customers in the last 30 days', AFRICA, [days('lt', 30)], []],
  ['lapsed for more than 6 months', AFRICA, [days('gt', 180)], []],
  ['inactive for a while', AFRICA, [], ['inactive for a while']],
  ['churned last month', AFRICA, [], ['churned last month']],
  ['active customers in the last few weeks', AFRICA, [], ['active customers in the last few weeks']],
  ['recently churned customers', AFRICA, [], ['recently churned']],
  ['most active customers', AFRICA, [], ['most active']],
  // section 14, countries listed after one "in" with or, and, commas: one `in`
  ['customers in Kenya or Nigeria', AFRICA, [countryIn('Kenya', 'Nigeria')], []],
  ['customers in Kenya, Nigeria and Ghana', AFRICA, [countryIn('Kenya', 'Nigeria', 'Ghana')], []],
  ['customers in Kenya or in Nigeria', AFRICA, [countryIn('Kenya', 'Nigeria')], []],
  ['customers in Germany and France', null, [countryIn('Germany', 'France')], []],
  ['customers in Germany or France', null, [countryIn('Germany', 'France')], []],
  ['CUSTOMERS IN GERMANY OR FRANCE', null, [countryIn('Germany', 'France')], []],
  ['UK and US customers', null, [countryIn('United Kingdom', 'United States')], []],
  ['customers in Kenya or kenya', AFRICA, [country('Kenya')], []],
  ['customers in Kenya or Atlantis', AFRICA, [country('Kenya')], ['or Atlantis']],
  ['customers in Britain or France', ['UK', 'United Kingdom', 'France'], [], ['in Britain or France']],
  ['customers in Kenya, with 3 orders', AFRICA, [country('Kenya'), tx('gte', 3), tx('lte', 3)], []],
  ['churned customers in Kenya or Nigeria who spent over 500 naira', AFRICA, [status('eq', 'churned'), countryIn('Kenya', 'Nigeria'), amount('gt', 500)], []],
  // section 14, countries negated: neq, one per country
  ['customers not in France', null, [notCountry('France')], []],
  ['everyone outside the UK who spent over $100', null, [notCountry('United Kingdom'), amount('gt', 100)], []],
  ['customers outside Kenya', AFRICA, [notCountry('Kenya')], []],
  ['everyone except Kenya', AFRICA, [notCountry('Kenya')], []],
  ['all customers except customers in Kenya', AFRICA, [notCountry('Kenya')], []],
  ['all customers except those in Nigeria or Ghana', AFRICA, [notCountry('Nigeria'), notCountry('Ghana')], []],
  ["customers who don't live in Kenya", AFRICA, [notCountry('Kenya')], []],
  ['customers in Kenya and outside Kenya', AFRICA, [country('Kenya')], ['outside Kenya']],
  ['customers outside Atlantis', AFRICA, [], ['outside Atlantis']],
  // section 14, demonyms of countries in the data, where they qualify people
  ['Ghanaian shoppers with at least 3 orders', AFRICA, [country('Ghana'), tx('gte', 3)], []],
  ['Kenyan customers', AFRICA, [country('Kenya')], []],
  ['Nigerian repeat buyers', AFRICA, [country('Nigeria'), tx('gte', 2)], []],
  ['Kenyan or Nigerian customers', AFRICA, [countryIn('Kenya', 'Nigeria')], []],
  ['Kenyans who spent over 100', AFRICA, [country('Kenya'), amount('gt', 100)], []],
  ['customers who are Ghanaian', AFRICA, [country('Ghana')], []],
  ['French customers', AFRICA, [country('France')], []],
  ['British buyers', AFRICA, [country('United Kingdom')], []],
  ['American shoppers', AFRICA, [country('United States')], []],
  ['Congolese customers', ['Congo'], [country('Congo')], []],
  ['Congolese customers', ['Congo', 'DR Congo'], [], ['Congolese']],
  ['customers who speak French', AFRICA, [], ['speak French']],
  ['South American customers', AFRICA, [], ['South American']],
  // section 14, demonyms of countries absent from the data name nothing
  ['Spanish customers', AFRICA, [], ['Spanish']],
  ['Kenyan customers', COUNTRIES, [], ['Kenyan']],
  // "everyone but X" and the other ways of saying "except": neq, or unmatched, never the opposite
  ['everyone but churned customers', AFRICA, [status('neq', 'churned')], []],
  ['all but churned', AFRICA, [status('neq', 'churned')], []],
  ['everyone but Kenya', AFRICA, [notCountry('Kenya')], []],
  ['anyone but Kenya', AFRICA, [notCountry('Kenya')], []],
  ['all customers but the churned ones', AFRICA, [status('neq', 'churned')], []],
  ['all but Kenya and Nigeria', AFRICA, [notCountry('Kenya'), notCountry('Nigeria')], []],
  ['everyone in Kenya but the churned ones', AFRICA, [country('Kenya'), status('neq', 'churned')], []],
  ['everyone but customers who spent over 100', AFRICA, [], ['but customers who spent over 100']],
  ['everyone but VIPs', AFRICA, [], ['but VIPs']],
  ['customers in Kenya but not churned', AFRICA, [country('Kenya'), status('neq', 'churned')], []],
  ["customers who haven't bought at all but are in Kenya", AFRICA, [tx('lte', 0), country('Kenya')], []],
  ['everyone besides Kenya', AFRICA, [notCountry('Kenya')], []],
  ['everyone apart from churned customers', AFRICA, [status('neq', 'churned')], []],
  ['everyone other than churned customers', AFRICA, [status('neq', 'churned')], []],
  ['all customers minus the churned ones', AFRICA, [status('neq', 'churned')], []],
  ['exclude churned customers', AFRICA, [status('neq', 'churned')], []],
  ['customers without churned', AFRICA, [], ['without churned']],
  ['everyone unless churned', AFRICA, [], ['unless churned']],
  // demonyms alone, and negated
  ['Kenyan', AFRICA, [country('Kenya')], []],
  ['kenyan', AFRICA, [country('Kenya')], []],
  ['French', AFRICA, [country('France')], []],
  ['British', AFRICA, [country('United Kingdom')], []],
  ['Kenyan with 3 orders', AFRICA, [country('Kenya'), tx('gte', 3), tx('lte', 3)], []],
  ['French speakers', AFRICA, [], ['French speakers']],
  ['Kenyan', COUNTRIES, [], ['Kenyan']],
  ['non-Kenyan customers', AFRICA, [notCountry('Kenya')], []],
  ['non-Kenyan', AFRICA, [notCountry('Kenya')], []],
  ['non-UK customers', AFRICA, [notCountry('United Kingdom')], []],
  ['customers who are not Kenyan', AFRICA, [notCountry('Kenya')], []],
  ['not Kenya', AFRICA, [], ['not Kenya']],
  // a status next to a period: a time since the last activity where the words say one, else unmatched
  ['inactive customers for 90 days', AFRICA, [days('gte', 90)], []],
  ['inactive customers in the last 30 days', AFRICA, [days('gte', 30)], []],
  ['churned for more than 90 days', AFRICA, [days('gt', 90)], []],
  ['churned customers for 90 days', AFRICA, [days('gte', 90)], []],
  ['churned in the last 6 months', AFRICA, [], ['churned in the last 6 months']],
  ['lapsed in the last 6 months', AFRICA, [], ['lapsed in the last 6 months']],
  ['churned in the last 6 months in Kenya', AFRICA, [country('Kenya')], ['churned in the last 6 months']],
  ['inactive customers in Kenya for 90 days', AFRICA, [status('eq', 'inactive'), country('Kenya')], ['for 90 days']],
  // a word no rule reads after an amount is reported on its own; a unit of something else still spoils the amount
  [`spent more than 500 ${LONG_WORD}`, AFRICA, [amount('gt', 500)], [LONG_WORD]],
  ['spent more than 500 shoes', AFRICA, [amount('gt', 500)], ['shoes']],
  ['spent more than 500 minutes', AFRICA, [], ['spent more than 500 minutes']],
  ['spent over KSh 1,000', AFRICA, [amount('gt', 1000)], []],
  // nothing understood
  ['', null, [], []],
  ['customers', null, [], []],
  ['hello world', null, [], ['hello world']],
];

describe('conditionsFromWords', () => {
  for (const [description, countries, conditions, unmatched] of ROWS) {
    test(`${JSON.stringify(description).slice(0, 100)}${countries ? ` (countries: ${countries.join(', ')})` : ''}`, () => {
      assert.deepEqual(conditionsFromWords(description, countries ?? COUNTRIES), { conditions, unmatched });
    });
  }

  test('the table has at least 40 rows', () => {
    assert.ok(ROWS.length >= 40, `${ROWS.length} rows`);
  });

  test('every reading that gives conditions is valid for a save', () => {
    for (const [description, countries] of ROWS) {
      const { conditions } = conditionsFromWords(description, countries ?? COUNTRIES);
      if (conditions.length > 0) assert.doesNotThrow(() => v.parse(Conditions, conditions), description);
    }
  });

  test('the same description gives the same answer every time, whatever came before', () => {
    const first = ROWS.map(([d, c]) => conditionsFromWords(d, c ?? COUNTRIES));
    const again = [...ROWS].reverse().map(([d, c]) => conditionsFromWords(d, [...(c ?? COUNTRIES)])).reverse();
    assert.deepEqual(again, first);
  });

  test('describeCondition and describeAudience read back as the same conditions', () => {
    const rng = prng(20261120);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(rng() * list.length)] as T;
    const numeric = (): Condition => {
      const field = pick<NumericField>(['totalTransactions', 'totalAmountSpent', 'lastActivityDays']);
      const operator = pick<NumericOperator>(['gt', 'gte', 'lt', 'lte']);
      const whole = Math.floor(rng() * pick([2, 100, 100_000, 1e12]));
      const value = rng() < 0.7 ? whole : Number((whole + Math.round(rng() * 99) / 100).toFixed(2)); // as describeCondition writes it
      return { field, operator, value };
    };
    for (let k = 0; k < 300; k++) {
      const c = rng() < 0.15 ? country(pick(COUNTRIES)) : numeric();
      assert.deepEqual(conditionsFromWords(describeCondition(c), COUNTRIES), { conditions: [c], unmatched: [] }, describeCondition(c));
    }
    for (let k = 0; k < 100; k++) {
      const set = [...(rng() < 0.5 ? [country(pick(COUNTRIES))] : []), ...Array.from({ length: 1 + Math.floor(rng() * 4) }, numeric)];
      const distinct = set.filter((c, n) => set.findIndex((o) => JSON.stringify(o) === JSON.stringify(c)) === n);
      const words = describeAudience(distinct);
      assert.deepEqual(conditionsFromWords(words, COUNTRIES), { conditions: distinct, unmatched: [] }, words);
    }
  });

  test('countries and statuses in, outside, listed or negated read back from describeCondition and describeAudience', () => {
    const rng = prng(20261214);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(rng() * list.length)] as T;
    const some = <T>(list: readonly T[], min: number): T[] => {
      const shuffled = [...list].sort(() => rng() - 0.5);
      return shuffled.slice(0, min + Math.floor(rng() * (list.length - min + 1)));
    };
    const statuses: CustomerStatus[] = ['active', 'inactive', 'churned'];
    const choice = (): Condition[] => {
      const countries = rng() < 0.5 ? [] : rng() < 0.5 ? [countryIn(...some(COUNTRIES, 2))] : rng() < 0.5 ? [country(pick(COUNTRIES))] : some(COUNTRIES, 1).slice(0, 3).map(notCountry);
      const status = rng() < 0.3 ? [] : rng() < 0.4 ? [statusIn(...some(statuses, 2))] : [{ field: 'status', operator: pick(['eq', 'neq'] as const), value: pick(statuses) } as Condition];
      return [...countries, ...status];
    };
    for (let k = 0; k < 300; k++) {
      const conditions = choice();
      for (const c of conditions) {
        const one = c.field === 'country' && c.operator === 'neq' ? conditions.filter((o) => o.field === 'country') : [c];
        const words = one.map(describeCondition).join(' ');
        assert.deepEqual(conditionsFromWords(words, COUNTRIES), { conditions: one, unmatched: [] }, words);
      }
      const numeric: Condition[] = rng() < 0.5 ? [] : [tx(pick(['gt', 'gte', 'lt', 'lte'] as const), Math.floor(rng() * 50)), days(pick(['gt', 'gte', 'lt', 'lte'] as const), 1 + Math.floor(rng() * 300))];
      const all = [...conditions, ...numeric].sort(() => rng() - 0.5);
      if (all.length === 0) continue;
      const words = describeAudience(all);
      assert.deepEqual(conditionsFromWords(words, COUNTRIES), { conditions: all, unmatched: [] }, words);
    }
  });

  test('random text never throws, gives valid conditions, and reports only phrases of the description', () => {
    const rng = prng(7);
    const vocabulary = (
      'customers in Germany uk US France and , with who not or between 2 5 1,000 1.000 €500 $ at least more than under ' +
      'over orders purchases twice spent bought active inactive for the last days weeks 3 months ago since no never ' +
      'one-time repeat Atlantis regulars k + - twenty five hundred a dozen within per shoes churned lapsed not outside ' +
      'except French German in Spain everyone but all besides non-German Kenyan apart from'
    ).split(' ');
    for (let k = 0; k < 500; k++) {
      const description = Array.from({ length: 1 + Math.floor(rng() * 30) }, () => vocabulary[Math.floor(rng() * vocabulary.length)]).join(' ');
      const { conditions, unmatched } = conditionsFromWords(description, COUNTRIES);
      if (conditions.length > 0) assert.doesNotThrow(() => v.parse(Conditions, conditions), description);
      for (const phrase of unmatched) assert.ok(phrase.length > 0 && description.includes(phrase), `${phrase} in ${description}`);
    }
  });

  test('reads a 500-character description against hundreds of countries in milliseconds', () => {
    const many = [...COUNTRIES, ...Array.from({ length: 250 }, (_, k) => `Country Number ${k}`)];
    const description = ROWS.map(([d]) => d).join(', ').slice(0, 500);
    conditionsFromWords(description, many);
    const start = performance.now();
    for (let k = 0; k < 20; k++) conditionsFromWords(description, many);
    const perCall = (performance.now() - start) / 20;
    assert.ok(perCall < 25, `${perCall.toFixed(2)} ms per call`);
  });
});
