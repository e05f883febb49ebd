// The local reader of audience descriptions (product.md 11, src/segments/words/): one table of descriptions with the
// exact conditions and unmatched phrases each must give, then properties every reading keeps: conditions valid for a
// save, the same answer every time, unmatched phrases taken from the description, and describeCondition read back.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as v from 'valibot';
import { prng } from '../scripts/synthetic-customers.ts';
import { describeAudience, describeCondition, type Condition, type NumericField, type NumericOperator } from '../src/domain/segments.ts';
import { Conditions } from '../src/schemas/segments.ts';
import { conditionsFromWords } from '../src/segments/words/index.ts';

const COUNTRIES = ['Germany', 'United Kingdom', 'France', 'United States', 'Spain', 'Bosnia and Herzegovina'];

const country = (value: string): Condition => ({ field: 'country', operator: 'eq', value });
const tx = (operator: NumericOperator, value: number): Condition => ({ field: 'totalTransactions', operator, value });
const amount = (operator: NumericOperator, value: number): Condition => ({ field: 'totalAmountSpent', operator, value });
const days = (operator: NumericOperator, value: number): Condition => ({ field: 'lastActivityDays', operator, value });

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
  ['customers in Germany and France', null, [country('Germany')], ['France']],
  ['customers in Germany or France', null, [country('Germany')], ['or France']],
  ['customers not in France', null, [], ['not in France']],
  ['everyone outside the UK who spent over $100', null, [amount('gt', 100)], ['outside the UK']],
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
  ['inactive customers', null, [], ['inactive']],
  ['churned customers', null, [], ['churned']],
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
  // nothing understood
  ['', null, [], []],
  ['customers', null, [], []],
  ['hello world', null, [], ['hello world']],
];

describe('conditionsFromWords', () => {
  for (const [description, countries, conditions, unmatched] of ROWS) {
    test(JSON.stringify(description).slice(0, 100), () => {
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

  test('random text never throws, gives valid conditions, and reports only phrases of the description', () => {
    const rng = prng(7);
    const vocabulary = (
      'customers in Germany uk US France and , with who not or between 2 5 1,000 1.000 €500 $ at least more than under ' +
      'over orders purchases twice spent bought active inactive for the last days weeks 3 months ago since no never ' +
      'one-time repeat Atlantis regulars k + - twenty five hundred a dozen within per shoes'
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
