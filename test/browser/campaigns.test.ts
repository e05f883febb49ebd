// In a real browser: a marketer drafts a campaign with the local generator and submits it, without being offered
// approval; a lead approves it; the assistant's reply streams in and can be stopped; an admin manages users.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { customerRow, importRows } from '../support/customers.ts';
import { assertNoPageProblems, screenshots, signIn, signOut, startHarness, type Harness } from './support/harness.ts';

describe('console: campaigns, review, assistant, users', () => {
  let harness: Harness;
  let page: Page;
  let token: string;
  let campaignUrl = '';

  before(async () => {
    // The local generator's pieces come every 15 ms x 8, so a reply takes a few seconds to stream and can be stopped.
    harness = await startHarness({ slowStreams: 8 });
    token = (await harness.service.signIn(harness.emails.admin)).accessToken;
    const now = harness.service.clock.now().getTime();
    await importRows(
      harness.service,
      token,
      Array.from({ length: 12 }, (_, i) => customerRow({ totalTransactions: 10 + i, totalAmountSpent: 200 * i, lastActivityDate: new Date(now - (i * 15 + 2) * 86_400_000).toISOString() })),
    );
    const segment = await harness.service.request('POST', '/v1/segments', {
      token,
      body: { name: 'Lapsing regulars', conditions: [{ field: 'totalTransactions', operator: 'gte', value: 10 }, { field: 'lastActivityDays', operator: 'gt', value: 60 }] },
    });
    assert.equal(segment.status, 200, segment.text);
    page = await harness.newPage();
  });
  after(() => harness.close());

  test('a marketer drafts an SMS with the local generator, sees it on the channel with its limits, and submits it', async () => {
    await page.goto('/campaigns');
    await signIn(page, harness.emails.lifecycle_marketer);
    await page.getByText('No campaigns yet').waitFor();
    await page.getByRole('link', { name: 'New campaign' }).first().click();
    const objective = page.getByLabel('Objective');
    await objective.fill('Win back');
    await page.getByText('8 / 600 (at least 10)').waitFor();
    await page.getByRole('button', { name: 'Draft campaign' }).click();
    await page.getByText('Must be at least 10 characters long.').waitFor(); // the service's field error, beside the field
    assert.equal(await objective.getAttribute('aria-invalid'), 'true');

    await objective.fill('Win back lapsing regulars with 15% off their next order this month');
    await page.getByLabel('SMS').check();
    await page.getByLabel('Tone').selectOption('urgent');
    await screenshots(page, 'campaign-new');

    // The first answer is lost on the way back (the service did draft it): "Try again" must get that draft, not a second.
    const keys: string[] = [];
    await page.route('**/v1/campaigns/generate', async (route) => {
      keys.push(route.request().headers()['idempotency-key'] ?? '');
      if (keys.length === 1) {
        await route.fetch();
        await route.abort('connectionreset');
      } else {
        await route.continue();
      }
    });
    await page.getByRole('button', { name: 'Draft campaign' }).click();
    await page.getByText('The service cannot be reached. Check your connection and try again.').waitFor();
    const replayed = page.waitForResponse((response) => response.url().endsWith('/v1/campaigns/generate'));
    await page.getByRole('button', { name: 'Try again' }).click();
    assert.equal((await replayed).headers()['idempotency-replayed'], 'true');
    await page.unroute('**/v1/campaigns/generate');
    assert.equal(keys.length, 2);
    assert.match(keys[0]!, /^[0-9a-f-]{32,36}$/);
    assert.equal(keys[1], keys[0]);
    await page.getByRole('heading', { name: 'Preview: SMS' }).waitFor();
    assert.equal((await harness.service.request('GET', '/v1/campaigns', { token })).body.total, 1);
    campaignUrl = new URL(page.url()).pathname;
    assert.match(campaignUrl, /^\/campaigns\/[^/]+$/);
    await page.locator('.sms-bubble').filter({ hasText: '15%' }).waitFor();
    const limits = await page.getByRole('list', { name: 'Length limits for sms' }).locator('li').allInnerTexts();
    assert.deepEqual(limits.map((l) => l.replace(/[\d,]+\s*\/\s*/, 'n / ').replace(/\s+/g, ' ')), ['Title n / 60', 'Message n / 320', 'Call to action n / 40']);

    await page.getByRole('button', { name: 'Submit for review' }).click();
    await page.locator('.page-header .badge').filter({ hasText: 'In review' }).waitFor();
    await page.getByText('moved it from draft to in review').waitFor();
  });

  test('a lifecycle marketer is not offered approval, only told who reviews', async () => {
    await page.getByText('Waiting for a marketing lead or an admin to review it.').waitFor();
    for (const name of ['Approve', 'Request changes', 'Mark as sent']) assert.equal(await page.getByRole('button', { name }).count(), 0, name);
    await screenshots(page, 'campaign-in-review');
  });

  test('a marketing lead approves it with a note, and the trail shows who did what', async () => {
    await signOut(page);
    await signIn(page, harness.emails.marketing_lead);
    await page.goto(campaignUrl);
    await page.getByLabel('Note for the trail').fill('Good to go on Friday.');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('.page-header .badge').filter({ hasText: 'Approved' }).waitFor();
    await page.getByText('moved it from in review to approved').waitFor();
    await page.locator('.trail blockquote').filter({ hasText: 'Good to go on Friday.' }).waitFor();
    await page.getByRole('button', { name: 'Mark as sent' }).waitFor();
    await screenshots(page, 'campaign-approved');

    await page.getByRole('link', { name: 'Campaigns' }).click();
    await page.getByLabel('Status').selectOption('approved');
    await page.waitForURL(/\/campaigns\?status=approved$/);
    await page.locator('tbody tr').filter({ hasText: 'Approved' }).waitFor();
    await screenshots(page, 'campaigns');
  });

  test("the assistant's reply streams in piece by piece, and a second one can be stopped", async () => {
    await page.getByRole('link', { name: 'Assistant' }).click();
    await page.getByRole('button', { name: 'How healthy is our customer base?' }).waitFor();
    await page.getByLabel('Message').fill('How healthy is our customer base right now?');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/assistant\/[^/]+$/);
    const reply = page.locator('.message.assistant').last();
    const text = reply.locator('.message-text');
    // Seen part-way: still streaming with some text, then more text while still streaming.
    await page.waitForFunction(() => (document.querySelector('.message.assistant.streaming .message-text')?.textContent ?? '').length > 0);
    const early = (await text.textContent()) ?? '';
    await page.waitForFunction((before) => {
      const now = document.querySelector('.message.assistant.streaming .message-text')?.textContent ?? '';
      return now.length > before.length;
    }, early);
    await page.waitForFunction(() => !document.querySelector('.message.streaming'));
    const threadId = new URL(page.url()).pathname.split('/').pop()!;
    const stored = await harness.service.request('GET', `/v1/chat/threads/${threadId}/messages`, { token: (await harness.service.signIn(harness.emails.marketing_lead)).accessToken });
    assert.equal(stored.body.length, 2);
    assert.equal(await text.textContent(), stored.body[1].content);
    assert.ok(stored.body[1].content.length > early.length);
    await page.locator('.thread-list a[aria-current="page"]').filter({ hasText: 'How healthy is our customer base' }).waitFor();
    await screenshots(page, 'assistant');

    await page.getByLabel('Message').fill('Which segment should we win back first?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.waitForFunction(() => (document.querySelector('.message.assistant.streaming .message-text')?.textContent ?? '').length > 0);
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.locator('.message.assistant').last().getByText('Stopped. This partial reply was not saved.').waitFor();
    assert.equal(await page.locator('.message.streaming').count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Stop' }).isVisible(), false);
    assert.equal(await page.getByRole('button', { name: 'Send' }).isEnabled(), true);
    const after = await harness.service.request('GET', `/v1/chat/threads/${threadId}/messages`, { token: (await harness.service.signIn(harness.emails.marketing_lead)).accessToken });
    assert.deepEqual(after.body.map((m: { role: string }) => m.role), ['user', 'assistant', 'user'], 'the stopped reply is not stored');
  });

  test('an admin sees the users, changes a role and deactivates a user', async () => {
    await signOut(page);
    await signIn(page, harness.emails.admin);
    await page.getByRole('link', { name: 'Users' }).click();
    const marketer = page.locator('tbody tr').filter({ hasText: harness.emails.lifecycle_marketer });
    await marketer.getByRole('combobox').selectOption('marketing_lead');
    await page.getByRole('dialog').getByRole('button', { name: 'Change role' }).click();
    await page.getByText(/is now marketing lead/).waitFor();
    await marketer.getByRole('button', { name: 'Deactivate' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Deactivate' }).click();
    await marketer.getByText('Deactivated').waitFor();
    await screenshots(page, 'users');
    const users = await harness.service.request('GET', '/v1/users', { token });
    const changed = users.body.find((u: { email: string }) => u.email === harness.emails.lifecycle_marketer);
    assert.deepEqual([changed.role, changed.isActive], ['marketing_lead', false]);
    assertNoPageProblems(harness);
  });
});
