// In a real browser, the segment builder with the conditions of product.md section 14: a status condition (is, is
// not, is one of) and a country list built in the rows show their live count and are saved as built; a segment
// drafted from words with unmatched words asks before saving and names them; on a phone (390 px) the live count and
// Save stay in the viewport wherever the conditions are scrolled to.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { createCustomer, customerRow } from '../support/customers.ts';
import { assertNoPageProblems, signIn, startHarness, type Harness } from './support/harness.ts';

const PHONE_390 = { width: 390, height: 844 };

describe('console: the segment builder with statuses and country lists', () => {
  let harness: Harness;
  let page: Page;
  let token: string;

  /** The names of the segments the service holds. */
  const savedNames = async () => ((await harness.service.request('GET', '/v1/segments', { token })).body as { name: string }[]).map((s) => s.name);
  const row = (n: number) => page.getByRole('group', { name: `Condition ${n}` });

  before(async () => {
    harness = await startHarness();
    token = (await harness.service.signIn(harness.emails.admin)).accessToken;
    // Germany: 2 churned, 1 inactive, 1 active. Kenya: 1 churned, 1 active. Ghana: 1 churned.
    for (const [country, status] of [
      ['Germany', 'churned'],
      ['Germany', 'churned'],
      ['Germany', 'inactive'],
      ['Germany', 'active'],
      ['Kenya', 'churned'],
      ['Kenya', 'active'],
      ['Ghana', 'churned'],
    ] as const) {
      await createCustomer(harness.service, token, customerRow({ country, status }));
    }
    page = await harness.newPage();
    await page.goto('/segments/new');
    await signIn(page, harness.emails.lifecycle_marketer);
  });
  after(() => harness.close());

  test('a status condition shows its live count as it changes: is, is not, is one of', async () => {
    await page.goto('/segments/new');
    await row(1).getByLabel('Field').selectOption('status');
    await row(1).getByLabel('Value').selectOption('churned');
    await page.locator('.count-value').filter({ hasText: /^4$/ }).waitFor();
    await row(1).getByLabel('Comparison').selectOption('neq');
    await page.locator('.count-value').filter({ hasText: /^3$/ }).waitFor();
    assert.equal(await row(1).getByLabel('Value').inputValue(), 'churned', 'the status is kept');

    // "is one of" keeps the status chosen as a ticked box, and counts the boxes ticked.
    await row(1).getByLabel('Comparison').selectOption('in');
    const statuses = row(1).getByRole('group', { name: 'Statuses' });
    assert.equal(await statuses.getByLabel('Churned').isChecked(), true);
    await page.locator('.count-value').filter({ hasText: /^4$/ }).waitFor();
    await statuses.getByLabel('Inactive').check();
    await page.locator('.count-value').filter({ hasText: /^5$/ }).waitFor();
    assert.equal(await page.locator('.save-bar-value').textContent(), '5', 'the bar beside Save shows the same count');

    // With a country list: Germany or Kenya, churned or inactive.
    await page.getByRole('button', { name: '+ Add condition' }).click();
    await row(2).getByLabel('Field').selectOption('country');
    await row(2).getByLabel('Comparison').selectOption('in');
    await row(2).getByLabel('Value').fill('germany, KENYA , germany');
    await page.locator('.count-value').filter({ hasText: /^4$/ }).waitFor();

    await page.getByLabel('Segment name').fill('Lapsed in two countries');
    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.waitForURL(/\/segments$/);
    const card = page.locator('.segment-card').filter({ hasText: 'Lapsed in two countries' });
    await card.locator('.segment-size').filter({ hasText: '4 customers' }).waitFor();
    assert.deepEqual(await card.locator('.chip').allInnerTexts(), ['Status is one of Inactive, Churned', 'Country is one of germany, KENYA']);

    // Opened again, the rows show what was saved.
    await card.getByRole('link', { name: 'Edit' }).click();
    await row(2).getByLabel('Value').waitFor();
    assert.equal(await row(2).getByLabel('Value').inputValue(), 'germany, KENYA');
    assert.deepEqual(await row(1).getByRole('checkbox', { checked: true }).evaluateAll((boxes) => boxes.map((b) => (b as HTMLInputElement).value)), ['inactive', 'churned']);
    await page.locator('.count-value').filter({ hasText: /^4$/ }).waitFor();
  });

  test('an empty status list is refused beside the boxes', async () => {
    await page.goto('/segments/new');
    await row(1).getByLabel('Field').selectOption('status');
    await row(1).getByLabel('Comparison').selectOption('in');
    await row(1).getByRole('checkbox', { name: 'Active', exact: true }).uncheck();
    await page.getByLabel('Segment name').fill('Nobody ticked');
    await page.getByRole('button', { name: 'Save segment' }).click();
    await row(1).getByText('Must hold at least 1 status.').waitFor();
    assert.equal(await row(1).getByRole('group', { name: 'Statuses' }).getAttribute('aria-invalid'), 'true');
    assert.ok(!(await savedNames()).includes('Nobody ticked'));
  });

  test('a segment drafted from words with unmatched words asks before saving, naming them; Cancel saves nothing', async () => {
    const description = 'churned customers in Germany who love cats';
    const draft = await harness.service.request('POST', '/v1/segments/draft', { token, body: { description } });
    assert.equal(draft.status, 200, draft.text);
    const unmatched = draft.body.unmatched as string[];
    assert.ok(unmatched.length > 0, 'the description has words the service cannot use');

    await page.goto('/segments/new');
    await page.getByLabel('Audience in your words').fill(description);
    await page.getByRole('button', { name: 'Fill in the conditions' }).click();
    await page.getByText('Not understood:').waitFor();
    await page.getByLabel('Segment name').fill('German cat lovers');
    await page.getByRole('button', { name: 'Save segment' }).click();
    const dialog = page.getByRole('dialog', { name: 'Save without some of your words?' });
    const text = (await dialog.locator('p').first().textContent()) ?? '';
    for (const phrase of unmatched) assert.ok(text.includes(`“${phrase}”`), `the dialog names “${phrase}”: ${text}`);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.match(page.url(), /\/segments\/new$/);
    assert.ok(!(await savedNames()).includes('German cat lovers'));

    await page.getByRole('button', { name: 'Save segment' }).click();
    await dialog.getByRole('button', { name: 'Save anyway' }).click();
    await page.waitForURL(/\/segments$/);
    assert.ok((await savedNames()).includes('German cat lovers'));
  });

  test('a segment drafted from words that were all used saves without asking', async () => {
    await page.goto('/segments/new');
    await page.getByLabel('Audience in your words').fill('customers in Kenya');
    await page.getByRole('button', { name: 'Fill in the conditions' }).click();
    await page.locator('.draft-reading').getByText('Customers in Kenya', { exact: true }).waitFor();
    await page.getByLabel('Segment name').fill('All of Kenya');
    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.waitForURL(/\/segments$/);
    assert.ok((await savedNames()).includes('All of Kenya'));
  });

  test('at 390 px the live count and Save are both in the viewport, at the top and with the last condition in view', async () => {
    await page.setViewportSize(PHONE_390);
    try {
      await page.goto('/segments/new');
      await row(1).getByLabel('Field').selectOption('status');
      for (let n = 2; n <= 6; n++) {
        await page.getByRole('button', { name: '+ Add condition' }).click();
        await row(n).getByLabel('Value').fill('0');
      }
      await page.locator('.save-bar-value').filter({ hasText: /^2$/ }).waitFor();
      const inView = async (where: string) => {
        for (const [what, box] of [
          ['the count', await page.locator('.save-bar-value').boundingBox()],
          ['Save', await page.getByRole('button', { name: 'Save segment' }).boundingBox()],
        ] as const) {
          assert.ok(box, `${what} is shown (${where})`);
          assert.ok(box.y >= 0 && box.y + box.height <= PHONE_390.height && box.x >= 0 && box.x + box.width <= PHONE_390.width, `${what} in the viewport (${where}): ${JSON.stringify(box)}`);
        }
      };
      await page.evaluate(() => window.scrollTo(0, 0));
      await inView('at the top');
      await row(6).getByLabel('Value').scrollIntoViewIfNeeded();
      await inView('at the last condition');
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'nothing wider than the screen');
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
    assertNoPageProblems(harness);
  });
});
