// In a real browser, drafting that iterates (product.md section 11) with the local generator: a marketer describes an
// audience in words, checks the condition rows it fills and saves the segment; then, on a draft, asks for a shorter
// version, sees the versions list grow, asks for 2 variants, compares them side by side on the channel and uses one.
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { generateOk, type Campaign } from '../support/campaigns.ts';
import { createCustomer, customerRow } from '../support/customers.ts';
import { assertNoPageProblems, screenshots, signIn, startHarness, type Harness } from './support/harness.ts';

/** Screenshots stay out of the working tree. */
const SHOTS = process.env.SCREENSHOTS_DIR ?? join(tmpdir(), 'console-drafting-screenshots');

/** A problem document as the service sends it, for answers the test stands in for. */
function problem(status: number, code: string, detail: string) {
  return { status, contentType: 'application/problem+json', body: JSON.stringify({ type: `urn:problem:${code}`, title: code, status, detail, code, traceId: 'test-trace' }) };
}

/** The condition row's field, comparison and value as the page holds them. */
async function rowOf(page: Page, n: number): Promise<[string, string, string]> {
  const row = page.getByRole('group', { name: `Condition ${n}` });
  return [await row.getByLabel('Field').inputValue(), await row.getByLabel('Comparison').inputValue(), await row.getByLabel('Value').inputValue()];
}

/** The current copy's SMS bubble (not a variant's). */
const currentBubble = (page: Page): Locator => page.locator('.campaign-layout .sms-bubble');

describe('console: audiences from words, revisions, variants and versions', () => {
  let harness: Harness;
  let page: Page;
  let marketer: string;
  let campaign: Campaign;

  before(async () => {
    harness = await startHarness();
    const admin = (await harness.service.signIn(harness.emails.admin)).accessToken;
    // In Germany with 3 or more purchases: 3 customers; the others fall out on country or on purchases.
    for (const [country, totalTransactions] of [['Germany', 5], ['Germany', 3], ['Germany', 12], ['Germany', 2], ['France', 7], ['Austria', 4]] as const) {
      await createCustomer(harness.service, admin, customerRow({ country, totalTransactions }));
    }
    marketer = (await harness.service.signIn(harness.emails.lifecycle_marketer)).accessToken;
    page = await harness.newPage();
  });
  after(() => harness.close());

  test('a description nothing can be read from is an error beside the box', async () => {
    await page.goto('/segments/new');
    await signIn(page, harness.emails.lifecycle_marketer);
    const box = page.getByLabel('Audience in your words');
    await box.fill('big fans of cats');
    await page.getByRole('button', { name: 'Fill in the conditions' }).click();
    await page.getByText('No condition could be read from it (not understood: "big fans of cats").', { exact: false }).waitFor();
    assert.equal(await box.getAttribute('aria-invalid'), 'true');
    await page.getByRole('alert').filter({ hasText: 'Some fields need attention.' }).waitFor();
    assert.deepEqual(await rowOf(page, 1), ['totalAmountSpent', 'gte', ''], 'the rows are untouched');
  });

  test('a marketer describes an audience, checks the rows it fills and saves the segment with its count', async () => {
    const box = page.getByLabel('Audience in your words');
    await box.fill('customers in Germany with at least 3 purchases');
    await page.getByRole('button', { name: 'Fill in the conditions' }).click();
    const reading = page.locator('.draft-reading');
    await reading.getByText('Customers in Germany with at least 3 purchases', { exact: true }).waitFor();
    assert.equal(await reading.locator('[data-size="draft"]').textContent(), '3');
    assert.equal(await box.getAttribute('aria-invalid'), null, 'the earlier error is gone');
    assert.equal(await page.getByText('Not understood:').count(), 0);
    assert.deepEqual(await rowOf(page, 1), ['country', 'eq', 'Germany']);
    assert.deepEqual(await rowOf(page, 2), ['totalTransactions', 'gte', '3']);
    assert.equal(await page.getByRole('group', { name: 'Condition 3' }).count(), 0);
    assert.equal(await page.getByLabel('Segment name').inputValue(), 'Customers in Germany with at least 3 purchases');
    await page.locator('.count-value').filter({ hasText: /^3$/ }).waitFor();

    // Words it cannot use are listed; a name the marketer typed is kept.
    await page.getByLabel('Segment name').fill('German regulars');
    await box.fill('customers in Germany who love cats with at least 3 purchases');
    await page.getByRole('button', { name: 'Fill in the conditions' }).click();
    await reading.getByText('Not understood: “love cats”').waitFor();
    assert.deepEqual([await rowOf(page, 1), await rowOf(page, 2)], [['country', 'eq', 'Germany'], ['totalTransactions', 'gte', '3']]);
    assert.equal(await page.getByLabel('Segment name').inputValue(), 'German regulars');
    await screenshots(page, 'segment-from-words', SHOTS);

    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.getByRole('dialog', { name: 'Save without some of your words?' }).getByRole('button', { name: 'Save anyway' }).click();
    await page.waitForURL(/\/segments$/);
    const card = page.locator('.segment-card').filter({ hasText: 'German regulars' });
    await card.locator('.segment-size').filter({ hasText: '3 customers' }).waitFor();
    assert.deepEqual(await card.locator('.chip').allInnerTexts(), ['Country is Germany', 'Transactions at least 3']);
  });

  test('on a draft, "Shorter" rewrites the copy while the buttons wait, and the versions list shows it revised', async () => {
    const segments = await harness.service.request('GET', '/v1/segments', { token: marketer });
    const segmentId = segments.body.find((s: { name: string }) => s.name === 'German regulars').id as string;
    campaign = await generateOk(harness.service, marketer, { segmentId, objective: 'Win back German regulars with 15% off their next order', channel: 'sms', tone: 'friendly' });
    await page.goto(`/campaigns/${campaign.id}`);
    await page.getByRole('heading', { name: 'Revise the draft' }).waitFor();
    // The page says who wrote the draft, and how to get better copy.
    const preview = page.getByRole('region', { name: 'Preview: SMS' });
    await preview.getByText('The built-in generator wrote this draft from its own stock phrases, without a model. Connecting a model writes better copy: see “Model providers” in the README.').waitFor();
    await page.locator('.details dd').filter({ hasText: 'The built-in generator (no model connected)' }).waitFor();
    const versions = page.locator('ol.versions > li');
    await versions.first().filter({ hasText: 'Generated' }).waitFor();
    assert.equal(await versions.count(), 1);
    assert.equal(await versions.first().getByText('Current').count(), 1);
    const before = (await currentBubble(page).textContent())!;
    assert.equal(before, campaign.message);

    // The answer is held back until the page has shown that it waits.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/v1/campaigns/*/revise', async (route) => {
      await held;
      await route.continue();
    });
    await page.getByRole('button', { name: 'Shorter' }).click();
    await page.getByRole('status').filter({ hasText: 'The model is rewriting the draft.' }).waitFor();
    for (const name of ['Shorter', 'More urgent', 'Friendlier', 'Revise', 'Write 2 variants', 'Write 3 variants']) {
      assert.equal(await page.getByRole('button', { name, exact: true }).isDisabled(), true, `${name} is disabled while the model writes`);
    }
    release();
    await versions.first().filter({ hasText: 'Revised' }).waitFor();
    await page.unroute('**/v1/campaigns/*/revise');
    await page.getByText('Revised: shorter.').waitFor();
    const after = (await currentBubble(page).textContent())!;
    assert.ok(after.length < before.length, `shorter: ${after.length} < ${before.length}`);
    const top = versions.first();
    assert.equal(await top.getAttribute('data-source'), 'revised');
    await top.getByText('Version 2').waitFor();
    await top.getByText('“shorter”').waitFor();
    await top.getByText('by you', { exact: false }).waitFor();
    assert.equal(await top.getByText('Current').count(), 1);
    assert.equal(await versions.nth(1).getByRole('button', { name: 'Restore' }).count(), 1, 'the generated copy can be restored');
    await page.getByText('Revised as version 2: shorter').waitFor(); // in the trail
    assert.equal(await page.getByRole('button', { name: 'Shorter' }).isEnabled(), true);
  });

  test('an instruction the local generator does not know is an error beside the box; model and rate failures are explained', async () => {
    const instruction = page.getByLabel('Instruction', { exact: true });
    await instruction.fill('make it sing');
    await page.getByRole('button', { name: 'Revise', exact: true }).click();
    await page.getByText('The local generator understands only plain instructions', { exact: false }).waitFor();
    assert.equal(await instruction.getAttribute('aria-invalid'), 'true');

    await page.route('**/v1/campaigns/*/revise', (route) => route.fulfill(problem(503, 'llm_unavailable', 'The model provider did not answer.')));
    await page.getByRole('button', { name: 'More urgent' }).click();
    await page.getByRole('alert').filter({ hasText: 'The writing model cannot be reached right now. Try again in a moment.' }).waitFor();
    await page.unroute('**/v1/campaigns/*/revise');
    assert.equal(await page.getByRole('button', { name: 'More urgent' }).isEnabled(), true);

    await page.route('**/v1/campaigns/*/variants', (route) => route.fulfill({ ...problem(429, 'rate_limited', 'Too many model calls.'), headers: { 'retry-after': '30' } }));
    await instruction.fill('');
    await page.getByRole('button', { name: 'Write 2 variants' }).click();
    await page.getByRole('alert').filter({ hasText: 'Too many attempts in a short time. Try again in 30 seconds.' }).waitFor();
    await page.unroute('**/v1/campaigns/*/variants');
    assert.equal(await page.locator('section.variants').isHidden(), true);
    assert.equal((await harness.service.request('GET', `/v1/campaigns/${campaign.id}/versions`, { token: marketer })).body.length, 2, 'nothing was written');
  });

  test('2 variants are shown side by side on the channel, and "Use this one" makes the chosen one current', async () => {
    await page.getByRole('button', { name: 'Write 2 variants' }).click();
    const area = page.getByRole('region', { name: 'Variants on SMS' });
    await area.waitFor();
    const variants = area.locator('li.variant');
    assert.equal(await variants.count(), 2);
    await area.getByText('The built-in generator wrote these variants', { exact: false }).waitFor();
    await page.locator('ol.versions > li').first().getByText('built-in generator', { exact: false }).waitFor();
    const [first, second] = [(await variants.nth(0).boundingBox())!, (await variants.nth(1).boundingBox())!];
    assert.equal(Math.round(first.y), Math.round(second.y), 'on one row');
    assert.ok(second.x >= first.x + first.width, 'side by side');
    const messages = await variants.locator('.sms-bubble').allInnerTexts();
    const current = (await currentBubble(page).textContent())!;
    assert.equal(new Set([...messages, current]).size, 3, 'two alternatives, each different from the current copy');
    await page.getByText('2 variants are shown above the preview.').waitFor();
    await page.locator('ol.versions > li[data-source="variant"]').nth(1).waitFor();
    assert.deepEqual(await page.locator('ol.versions > li').evaluateAll((items) => items.map((li) => li.getAttribute('data-source'))), ['variant', 'variant', 'revised', 'generated']);
    assert.equal(await currentBubble(page).textContent(), current, 'a variant is not made current by itself');
    await screenshots(page, 'campaign-variants', SHOTS);

    const chosen = variants.nth(1);
    const version = Number(await chosen.getAttribute('data-version'));
    assert.equal(version, 4);
    await chosen.getByRole('button', { name: 'Use this one' }).click();
    await page.getByText('Version 4 is the current copy now.').waitFor();
    await currentBubble(page).filter({ hasText: messages[1]! }).waitFor();
    assert.equal(await currentBubble(page).textContent(), messages[1]);
    assert.equal(await page.locator('section.variants').isHidden(), true);
    const top = page.locator('ol.versions > li').first();
    await top.filter({ hasText: 'Restored' }).waitFor();
    assert.equal(await top.getAttribute('data-version'), '5');
    await top.getByText('from version 4').waitFor();
    assert.equal(await top.getByText('Current').count(), 1);
    await page.getByText('Restored version 4 as version 5').waitFor(); // in the trail
    const stored = await harness.service.request('GET', `/v1/campaigns/${campaign.id}`, { token: marketer });
    assert.equal(stored.body.message, messages[1]);
    await screenshots(page, 'campaign-versions', SHOTS);
    assertNoPageProblems(harness);
  });

  test('a draft submitted for review offers no revising, variants or versions', async () => {
    await page.getByRole('button', { name: 'Submit for review' }).click();
    await page.locator('.page-header .badge').filter({ hasText: 'In review' }).waitFor();
    for (const name of ['Revise the draft', 'Versions']) assert.equal(await page.getByRole('heading', { name, exact: true }).count(), 0, name);
    assertNoPageProblems(harness);
  });
});
