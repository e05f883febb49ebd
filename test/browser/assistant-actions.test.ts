// In a real browser, the assistant that acts (product.md section 12) with the local generator: it proposes to save a
// segment and to draft a campaign, each as a card in its reply; the marketer confirms, sees what was made and follows
// the link to it, dismisses another, and finds every card as it left it when the thread is reopened. A proposal that can
// no longer run shows the problem on its card and stays usable; one dismissed elsewhere shows as dismissed.
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page, Route } from 'playwright-core';
import { createCustomer, customerRow } from '../support/customers.ts';
import { assertNoPageProblems, screenshots, signIn, startHarness, type Harness } from './support/harness.ts';

/** Screenshots stay out of the working tree. */
const SHOTS = process.env.SCREENSHOTS_DIR ?? join(tmpdir(), 'console-assistant-actions-screenshots');
const SEGMENT = 'Customers in Portugal with at least 1 purchase';

/** The card of the proposal whose summary starts with `summary`. */
const card = (page: Page, summary: string): Locator => page.getByRole('group', { name: `Proposal: ${summary}` });

/** Asks the assistant and waits for the reply to be complete. */
async function ask(page: Page, question: string): Promise<void> {
  await page.getByLabel('Message').fill(question);
  await page.keyboard.press('Enter');
  await page.getByRole('button', { name: 'Send' }).and(page.locator(':enabled')).waitFor();
}

/** The condition row's field, comparison and value as the segment editor holds them. */
async function rowOf(page: Page, n: number): Promise<[string, string, string]> {
  const row = page.getByRole('group', { name: `Condition ${n}` });
  return [await row.getByLabel('Field').inputValue(), await row.getByLabel('Comparison').inputValue(), await row.getByLabel('Value').inputValue()];
}

describe('console: the assistant proposes, the marketer confirms or dismisses', () => {
  let harness: Harness;
  let page: Page;
  let admin: string;
  let marketer: string;

  before(async () => {
    // Paced pieces, so a reply can be watched while its proposal waits for it to finish.
    harness = await startHarness({ slowStreams: 8 });
    admin = (await harness.service.signIn(harness.emails.admin)).accessToken;
    // In Portugal with a purchase or more: 3; the others fall out on purchases or on country.
    for (const [country, totalTransactions] of [['Portugal', 1], ['Portugal', 4], ['Portugal', 9], ['Portugal', 0], ['Spain', 5]] as const) {
      await createCustomer(harness.service, admin, customerRow({ country, totalTransactions }));
    }
    marketer = (await harness.service.signIn(harness.emails.lifecycle_marketer)).accessToken;
    page = await harness.newPage();
    await signIn(page, harness.emails.lifecycle_marketer);
  });
  after(() => harness.close());

  test('a proposed segment is confirmed, saved, and its link opens it with its name and conditions', async () => {
    await page.getByRole('link', { name: 'Assistant' }).click();
    await page.getByLabel('Message').fill('make a segment of customers in Portugal with at least 1 purchase');
    await page.keyboard.press('Enter');
    const proposal = card(page, `Save segment “${SEGMENT}” — 3 customers`);
    await proposal.waitFor();
    // Streamed before the reply is stored: shown at once, confirmable once the reply is complete.
    assert.equal(await proposal.getByRole('button', { name: 'Confirm' }).isDisabled(), true);
    await proposal.getByText('You can confirm it once the reply is complete.').waitFor();
    await proposal.getByText('Nothing is done until you confirm.').waitFor();
    assert.equal(await proposal.getByRole('button', { name: 'Confirm' }).isEnabled(), true);
    assert.equal(await proposal.getByRole('button', { name: 'Dismiss' }).isEnabled(), true);
    assert.match((await proposal.locator('.action-summary').textContent()) ?? '', new RegExp(`^Save segment “${SEGMENT}” — 3 customers \\(.+\\)$`));
    await page.locator('.message.assistant .message-text').getByText('Confirm it to save the segment, or dismiss it.', { exact: false }).waitFor();
    assert.equal(await page.locator('.action-card').count(), 1);
    await screenshots(page, 'assistant-action-proposed', SHOTS);

    await proposal.getByRole('button', { name: 'Confirm' }).click();
    await proposal.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    assert.equal(await proposal.getByRole('button').count(), 0, 'no buttons once confirmed');
    const link = proposal.getByRole('link', { name: `Open segment “${SEGMENT}”` });
    assert.equal(await link.evaluate((a) => a === document.activeElement), true, 'focus moves to the link');
    const segments = (await harness.service.request('GET', '/v1/segments', { token: marketer })).body as { id: string; name: string }[];
    assert.deepEqual(segments.map((s) => s.name), [SEGMENT]);
    assert.equal(await link.getAttribute('href'), `/segments/${segments[0]!.id}`);
    await screenshots(page, 'assistant-action-saved', SHOTS);

    await link.click();
    await page.waitForURL(`**/segments/${segments[0]!.id}`);
    await page.getByRole('group', { name: 'Condition 1' }).waitFor();
    assert.equal(await page.getByLabel('Segment name').inputValue(), SEGMENT);
    assert.deepEqual(await rowOf(page, 1), ['country', 'eq', 'Portugal']);
    assert.deepEqual(await rowOf(page, 2), ['totalTransactions', 'gte', '1']);
    await page.locator('.count-value').filter({ hasText: /^3$/ }).waitFor();
    assertNoPageProblems(harness);
  });

  test('reopening the thread shows the confirmed card with its link; a proposed campaign is confirmed and opens as a draft', async () => {
    await page.goBack();
    const saved = card(page, `Save segment “${SEGMENT}”`);
    await saved.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    await saved.getByRole('link', { name: `Open segment “${SEGMENT}”` }).waitFor();
    assert.equal(await saved.getByRole('button').count(), 0);

    await ask(page, `draft an email campaign for ${SEGMENT} to win them back with a small thank-you`);
    const proposal = card(page, `Draft an email campaign for “${SEGMENT}” — Win them back with a small thank-you (friendly)`);
    await proposal.getByText('Nothing is done until you confirm.').waitFor();

    // Held on its way, the confirm shows its busy state: both buttons disabled, a busy label, words saying why.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const hold = async (route: Route) => {
      await held;
      await route.continue();
    };
    await page.route('**/v1/chat/threads/*/actions/*/confirm', hold);
    await proposal.getByRole('button', { name: 'Confirm' }).click();
    await proposal.getByRole('button', { name: 'Drafting…' }).waitFor();
    assert.equal(await proposal.getByRole('button', { name: 'Drafting…' }).isDisabled(), true);
    assert.equal(await proposal.getByRole('button', { name: 'Dismiss' }).isDisabled(), true);
    await proposal.getByRole('status').getByText('The model is drafting the campaign.', { exact: false }).waitFor();
    release();
    await proposal.getByRole('status').filter({ hasText: 'Drafted' }).waitFor();
    await page.unroute('**/v1/chat/threads/*/actions/*/confirm', hold);

    const link = proposal.getByRole('link', { name: 'Open the draft campaign' });
    const href = (await link.getAttribute('href')) ?? '';
    assert.match(href, /^\/campaigns\/[^/]+$/);
    const campaign = (await harness.service.request('GET', `/v1${href}`, { token: marketer })).body as { title: string; message: string; status: string; segmentName: string };
    assert.equal(campaign.status, 'draft');
    assert.equal(campaign.segmentName, SEGMENT);
    await screenshots(page, 'assistant-action-drafted', SHOTS);

    await link.click();
    await page.getByRole('heading', { level: 1, name: campaign.title }).waitFor();
    await page.locator('.page-header .badge[data-status="draft"]').filter({ hasText: 'Draft' }).waitFor();
    await page.getByRole('link', { name: SEGMENT }).waitFor();
    const preview = page.getByLabel('Email preview');
    await preview.locator('.email-head dd.strong').filter({ hasText: campaign.title }).waitFor();
    const body = (await preview.locator('.email-body').textContent()) ?? '';
    for (const paragraph of campaign.message.split(/\n{2,}/)) assert.ok(body.includes(paragraph), paragraph);
    assertNoPageProblems(harness);
  });

  test('a dismissed proposal stays dismissed after reloading; nothing is saved', async () => {
    await page.getByRole('link', { name: 'Assistant' }).click();
    await page.getByRole('link', { name: 'New conversation' }).click();
    await ask(page, 'make a segment of customers in Spain with at least 2 purchases');
    const proposal = card(page, 'Save segment “Customers in Spain with at least 2 purchases” — 1 customer');
    await proposal.getByRole('button', { name: 'Dismiss' }).click();
    await proposal.getByRole('status').filter({ hasText: 'Dismissed' }).waitFor();
    assert.equal(await proposal.getByRole('button').count(), 0);
    assert.equal(await proposal.getByRole('link').count(), 0);

    await page.reload();
    await proposal.getByRole('status').filter({ hasText: 'Dismissed' }).waitFor();
    assert.equal(await proposal.getByRole('button').count(), 0);
    const segments = (await harness.service.request('GET', '/v1/segments', { token: marketer })).body as { name: string }[];
    assert.deepEqual(segments.map((s) => s.name), [SEGMENT]);
    await screenshots(page, 'assistant-action-dismissed', SHOTS);
    assertNoPageProblems(harness);
  });

  test('a proposal dismissed elsewhere meanwhile: confirming it says why and shows it dismissed', async () => {
    await page.getByRole('link', { name: 'New conversation' }).click();
    await ask(page, 'make a segment of customers in Spain with at least 5 purchases');
    const proposal = card(page, 'Save segment “Customers in Spain with at least 5 purchases” — 1 customer');
    await proposal.getByText('Nothing is done until you confirm.').waitFor();
    const threadId = new URL(page.url()).pathname.split('/').pop() ?? '';
    const stored = (await harness.service.request('GET', `/v1/chat/threads/${threadId}/messages`, { token: marketer })).body as { actions?: { id: string }[] }[];
    const actionId = stored.flatMap((m) => m.actions ?? [])[0]?.id;
    const rejected = await harness.service.request('POST', `/v1/chat/threads/${threadId}/actions/${actionId}/reject`, { token: marketer });
    assert.equal(rejected.status, 200, rejected.text);

    await proposal.getByRole('button', { name: 'Confirm' }).click();
    await proposal.getByRole('alert').getByText('This proposal was rejected; ask the assistant for a new one.').waitFor();
    await proposal.getByRole('status').filter({ hasText: 'Dismissed' }).waitFor();
    assert.equal(await proposal.getByRole('button').count(), 0);
    assertNoPageProblems(harness);
  });

  test('a proposal that can no longer run shows why on its card, and its buttons stay usable', async () => {
    const made = await harness.service.request('POST', '/v1/segments', { token: marketer, body: { name: 'Spain regulars', conditions: [{ field: 'country', operator: 'eq', value: 'Spain' }] } });
    assert.equal(made.status, 200, made.text);
    await page.getByRole('link', { name: 'New conversation' }).click();
    await ask(page, 'draft an sms campaign for Spain regulars to thank them for staying with us');
    const proposal = card(page, 'Draft an SMS campaign for “Spain regulars”');
    await proposal.getByText('Nothing is done until you confirm.').waitFor();
    const gone = await harness.service.request('DELETE', `/v1/segments/${(made.body as { id: string }).id}`, { token: admin });
    assert.equal(gone.status, 200, gone.text);

    await proposal.getByRole('button', { name: 'Confirm' }).click();
    const alert = proposal.getByRole('alert');
    await alert.getByText('No saved segment has this id.').waitFor();
    await alert.getByText('Some fields need attention.').waitFor();
    const confirm = proposal.getByRole('button', { name: 'Confirm' });
    assert.equal(await confirm.isEnabled(), true);
    assert.equal(await confirm.evaluate((b) => b === document.activeElement), true, 'focus back on Confirm');
    await screenshots(page, 'assistant-action-failed', SHOTS);

    await proposal.getByRole('button', { name: 'Dismiss' }).click();
    await proposal.getByRole('status').filter({ hasText: 'Dismissed' }).waitFor();
    assert.equal(await proposal.getByRole('alert').count(), 0, 'the earlier problem is cleared');
    assertNoPageProblems(harness);
  });
});
