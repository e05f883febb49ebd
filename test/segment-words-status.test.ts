// The words of product.md section 14 over HTTP: POST /v1/segments/draft reads statuses, lists of countries, negated
// countries and demonyms with the local parser, answers the size a preview gives, and its conditions save as they are;
// an unknown word after an amount (500 characters in all) is listed in `unmatched`, the amount still read.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Condition } from '../src/domain/segments.ts';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { NO_RATE_LIMIT } from './support/campaigns.ts';
import { createCustomer, customerRow, type CustomerRow } from './support/customers.ts';

/** The base, small enough to count each answer by hand. */
const ROWS: CustomerRow[] = [
  customerRow({ country: 'Kenya', status: 'active', totalTransactions: 3, totalAmountSpent: 600 }),
  customerRow({ country: 'Kenya', status: 'churned', totalTransactions: 1, totalAmountSpent: 50 }),
  customerRow({ country: 'Nigeria', status: 'churned', totalTransactions: 2, totalAmountSpent: 700 }),
  customerRow({ country: 'Ghana', status: 'inactive', totalTransactions: 3, totalAmountSpent: 200 }),
  customerRow({ country: 'Ghana', status: 'active', totalTransactions: 5, totalAmountSpent: 900 }),
  customerRow({ country: 'France', status: 'churned', totalTransactions: 4, totalAmountSpent: 1000 }),
];
const count = (match: (row: CustomerRow) => boolean) => ROWS.filter(match).length;

let service: TestService;
let token: string;

before(async () => {
  service = await startService({ env: NO_RATE_LIMIT });
  token = await service.tokenFor('lifecycle_marketer');
  for (const row of ROWS) await createCustomer(service, token, row);
});
after(() => service.close());

/** Drafts the description, asserting 200, that the size is what a preview of the conditions counts, and the unmatched. */
async function drafted(description: string, conditions: Condition[], unmatched: string[] = []) {
  const reply = await service.request('POST', '/v1/segments/draft', { token, body: { description } });
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(reply.body.conditions, conditions);
  assert.deepEqual(reply.body.unmatched, unmatched);
  const preview = await service.request('POST', '/v1/segments/preview', { token, body: { conditions } });
  assert.equal(preview.status, 200, preview.text);
  assert.equal(reply.body.size, preview.body.matchCount);
  return reply.body as { name: string; size: number; conditions: Condition[] };
}

describe('drafting the words of section 14 with the local parser', () => {
  test('an amount followed by one long unknown word (500 characters) is read; the word is listed as unmatched', async () => {
    const word = 'x'.repeat(480);
    const description = `spent more than 500 ${word}`;
    assert.equal(description.length, 500);
    const draft = await drafted(description, [{ field: 'totalAmountSpent', operator: 'gt', value: 500 }], [word]);
    assert.equal(draft.size, count((row) => row.totalAmountSpent > 500));
  });

  test('"churned customers in Kenya or Nigeria" is a status and one `in`, and saves as drafted', async () => {
    const conditions: Condition[] = [
      { field: 'status', operator: 'eq', value: 'churned' },
      { field: 'country', operator: 'in', value: ['Kenya', 'Nigeria'] },
    ];
    const draft = await drafted('churned customers in Kenya or Nigeria', conditions);
    assert.equal(draft.size, count((row) => row.status === 'churned' && ['Kenya', 'Nigeria'].includes(row.country)));
    const saved = await service.request('POST', '/v1/segments', { token, body: { name: draft.name, conditions: draft.conditions } });
    assert.equal(saved.status, 200, saved.text);
    assert.equal(saved.body.matchCount, draft.size);
  });

  test('"Ghanaian shoppers with at least 3 orders" is the country of the demonym and the orders', async () => {
    const conditions: Condition[] = [
      { field: 'country', operator: 'eq', value: 'Ghana' },
      { field: 'totalTransactions', operator: 'gte', value: 3 },
    ];
    const draft = await drafted('Ghanaian shoppers with at least 3 orders', conditions);
    assert.equal(draft.size, count((row) => row.country === 'Ghana' && row.totalTransactions >= 3));
  });

  test('"outside Kenya" and "not churned" are neq', async () => {
    const conditions: Condition[] = [
      { field: 'country', operator: 'neq', value: 'Kenya' },
      { field: 'status', operator: 'neq', value: 'churned' },
    ];
    const draft = await drafted('customers outside Kenya who are not churned', conditions);
    assert.equal(draft.size, count((row) => row.country !== 'Kenya' && row.status !== 'churned'));
  });

  test('"everyone but churned customers" and "everyone but Kenya" exclude them (neq)', async () => {
    const churned = await drafted('everyone but churned customers', [{ field: 'status', operator: 'neq', value: 'churned' }]);
    assert.equal(churned.size, count((row) => row.status !== 'churned'));
    const kenya = await drafted('everyone but Kenya', [{ field: 'country', operator: 'neq', value: 'Kenya' }]);
    assert.equal(kenya.size, count((row) => row.country !== 'Kenya'));
  });

  test('"churned in the last 6 months" is unmatched beside what is understood, and alone is 400 on description', async () => {
    const draft = await drafted('customers in Kenya churned in the last 6 months', [{ field: 'country', operator: 'eq', value: 'Kenya' }], ['churned in the last 6 months']);
    assert.equal(draft.size, count((row) => row.country === 'Kenya'));
    const alone = await service.request('POST', '/v1/segments/draft', { token, body: { description: 'churned in the last 6 months' } });
    assertProblem(alone, 400, 'validation_failed', ['description']);
  });

  test('"inactive customers" is the status; "inactive for 90 days" stays days since the last activity', async () => {
    const status = await drafted('inactive customers', [{ field: 'status', operator: 'eq', value: 'inactive' }]);
    assert.equal(status.size, count((row) => row.status === 'inactive'));
    await drafted('inactive for 90 days', [{ field: 'lastActivityDays', operator: 'gte', value: 90 }]);
  });
});
