// In a real browser, the hand-off of product.md section 10: a lead approves a campaign, sees the audience frozen at
// approval beside its size now, downloads it as CSV (plain and for listmonk) and copies the text; a segment is
// exported from its card; an admin adds a webhook pointing at a receiver on loopback, sees its secret once, sends a
// test and watches the delivery succeed in the log.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Download, Page } from 'playwright-core';
import { Webhook as Verifier } from 'standardwebhooks';
import { generateOk, moveCampaignTo } from '../support/campaigns.ts';
import { createCustomer, customerRow } from '../support/customers.ts';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { assertNoPageProblems, screenshots, signIn, signOut, startHarness, type Harness } from './support/harness.ts';

const HEADER = 'email,name,country,status,total_amount_spent,total_transactions,last_activity_date';

/** The downloaded file's text. */
async function textOf(download: Download): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of (await download.createReadStream())!) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Returns the delivery's body when its signature is valid for the secret (Standard Webhooks' own verifier); throws otherwise. */
function verified(secret: string, request: ReceivedRequest): { type: string; data: Record<string, unknown> } {
  return new Verifier(secret).verify(request.body, request.headers) as { type: string; data: Record<string, unknown> };
}

/** Clicks the button and returns the file it downloads. */
async function downloadBy(page: Page, name: string): Promise<Download> {
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name, exact: true }).click();
  return download;
}

describe('console: hand-off of an approved campaign, segment exports, webhooks', () => {
  let harness: Harness;
  let page: Page;
  let admin: string;
  let campaign: { id: string; title: string; message: string; callToAction: string };
  let segmentId: string;
  let receiver: WebhookReceiver;
  let webhookUrl = '';
  let secret = '';

  // Three customers in Handoffland, in the order they were created (the export's id order); one name starts like a formula.
  const customers = [
    customerRow({ name: 'Ada Lovelace', email: 'ada@handoff.example.com', country: 'Handoffland', totalTransactions: 4, totalAmountSpent: 120, lastActivityDate: '2026-10-01T00:00:00.000Z' }),
    customerRow({ name: '=Sum Shop', email: 'sum@handoff.example.com', country: 'Handoffland', totalTransactions: 2, totalAmountSpent: 99.5, lastActivityDate: '2026-09-15T00:00:00.000Z', status: 'inactive' }),
    customerRow({ name: 'Lee, Ken', email: 'ken@handoff.example.com', country: 'Handoffland', totalTransactions: 7, totalAmountSpent: 980.25, lastActivityDate: '2026-10-20T00:00:00.000Z' }),
  ];
  const later = customerRow({ name: 'Grace Hopper', email: 'grace@handoff.example.com', country: 'Handoffland', totalTransactions: 1, totalAmountSpent: 15, lastActivityDate: '2026-10-30T00:00:00.000Z' });
  const line = (c: (typeof customers)[number]) =>
    [c.email, c.name.startsWith('=') ? `'${c.name}` : c.name, c.country, c.status, c.totalAmountSpent, c.totalTransactions, c.lastActivityDate].map((cell) => (/[",]/.test(String(cell)) ? `"${cell}"` : String(cell))).join(',');

  before(async () => {
    // One retry 1.5 s after a failed attempt (on the service's clock, which the test moves), then `failed`.
    harness = await startHarness({ env: { WEBHOOK_RETRY_SCHEDULE: '1500' } });
    receiver = await startWebhookReceiver({ name: 'campaigns', fallback: 204 });
    admin = (await harness.service.signIn(harness.emails.admin)).accessToken;
    for (const c of customers) await createCustomer(harness.service, admin, c);
    await createCustomer(harness.service, admin, customerRow({ country: 'Elsewhere' }));
    const segment = await harness.service.request('POST', '/v1/segments', { token: admin, body: { name: 'Handoff regulars', conditions: [{ field: 'country', operator: 'eq', value: 'Handoffland' }] } });
    assert.equal(segment.status, 200, segment.text);
    segmentId = segment.body.id;
    const marketer = (await harness.service.signIn(harness.emails.lifecycle_marketer)).accessToken;
    campaign = await generateOk(harness.service, marketer, { segmentId, objective: 'Thank our Handoffland regulars with early access to the winter sale.', channel: 'email', tone: 'friendly' });
    await moveCampaignTo(harness.service, { campaign: campaign.id, author: marketer, reviewer: admin }, 'in_review');
    page = await harness.newPage();
    await harness.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: harness.service.url });
  });
  after(async () => {
    await harness.close();
    await receiver.close();
  });

  test('a lead approves the campaign and the hand-off shows the audience frozen at approval, then its size now', async () => {
    await page.goto(`/campaigns/${campaign.id}`);
    await signIn(page, harness.emails.marketing_lead);
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Hand-off' }).count(), 0, 'no hand-off before approval');
    await page.getByRole('button', { name: 'Approve' }).click();
    const handoff = page.locator('section.handoff');
    await handoff.getByRole('heading', { name: 'Hand-off' }).waitFor();
    await handoff.locator('.audience-description').filter({ hasText: 'Handoffland' }).waitFor();
    assert.equal(await handoff.locator('[data-size="at-approval"]').textContent(), '3');
    assert.equal(await handoff.locator('[data-size="now"]').textContent(), '3');
    await handoff.getByText('the same as at approval').waitFor();
    assert.equal(await page.getByText('Approved and ready to send.').count(), 0);

    // A fourth customer arrives and the segment is changed: the frozen conditions stay, the size now follows.
    await createCustomer(harness.service, admin, later);
    const edited = await harness.service.request('PATCH', `/v1/segments/${segmentId}`, { token: admin, body: { conditions: [{ field: 'country', operator: 'eq', value: 'Elsewhere' }] } });
    assert.equal(edited.status, 200, edited.text);
    await page.reload();
    await handoff.locator('[data-size="now"]').filter({ hasText: '4' }).waitFor();
    assert.equal(await handoff.locator('[data-size="at-approval"]').textContent(), '3');
    await handoff.getByText('1 customer more than at approval').waitFor();
    assert.match((await handoff.locator('.audience-description').textContent()) ?? '', /Handoffland/);
    await screenshots(page, 'campaign-handoff');
  });

  test('the audience downloads as CSV, one row per customer matching the frozen conditions, and for listmonk', async () => {
    const file = await downloadBy(page, 'Download audience (CSV)');
    assert.equal(file.suggestedFilename(), `campaign-${campaign.id}-audience.csv`);
    const lines = (await textOf(file)).split('\r\n');
    assert.equal(lines[0], HEADER);
    assert.deepEqual(lines.slice(1), [...customers, later].map(line).concat(''));
    await page.locator('section.handoff').getByText(`Downloaded campaign-${campaign.id}-audience.csv.`).waitFor();

    const listmonk = await downloadBy(page, 'Download for listmonk');
    assert.equal(listmonk.suggestedFilename(), `campaign-${campaign.id}-audience-listmonk.csv`);
    const rows = (await textOf(listmonk)).split('\r\n');
    assert.equal(rows[0], 'email,name,attributes');
    assert.equal(rows.length, 6);
    const ada = /^ada@handoff\.example\.com,Ada Lovelace,"(.*)"$/.exec(rows[1]!);
    assert.ok(ada, rows[1]);
    assert.deepEqual(JSON.parse(ada[1]!.replace(/""/g, '"')), { country: 'Handoffland', status: 'active', total_amount_spent: 120, total_transactions: 4, last_activity_date: '2026-10-01T00:00:00.000Z' });
  });

  test('the title, message and call to action copy to the clipboard, and a refused clipboard leaves the text selected', async () => {
    const handoff = page.locator('section.handoff');
    await handoff.getByRole('button', { name: 'Copy title' }).click();
    await handoff.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), campaign.title);
    await handoff.getByRole('button', { name: 'Copy call to action' }).click();
    await page.waitForFunction((text) => navigator.clipboard.readText().then((copied) => copied === text), campaign.callToAction);

    await page.evaluate(() => {
      navigator.clipboard.writeText = () => Promise.reject(new DOMException('Write permission denied.', 'NotAllowedError'));
    });
    await handoff.getByRole('button', { name: 'Copy message' }).click();
    await handoff.getByText('The browser did not allow copying. The text is selected: press Ctrl+C (⌘C on a Mac).').waitFor();
    assert.equal(await page.evaluate(() => getSelection()?.toString()), campaign.message);
    await page.reload(); // the page's own clipboard again
  });

  test("a segment's customers export from its card, as CSV and for listmonk", async () => {
    await page.getByRole('link', { name: 'Segments' }).click();
    const file = await downloadBy(page, 'Export CSV of Handoff regulars');
    assert.equal(file.suggestedFilename(), 'segment-handoff-regulars-customers.csv');
    const lines = (await textOf(file)).split('\r\n');
    assert.equal(lines[0], HEADER);
    assert.equal(lines.length, 3, 'the one customer in Elsewhere, as the segment now says');
    assert.match(lines[1]!, /,Elsewhere,/);
    const listmonk = await downloadBy(page, 'Export for listmonk of Handoff regulars');
    assert.equal(listmonk.suggestedFilename(), 'segment-handoff-regulars-customers-listmonk.csv');
    assert.equal((await textOf(listmonk)).split('\r\n')[0], 'email,name,attributes');
    await screenshots(page, 'segments-export');

    // The editor offers the same, for the conditions as saved.
    await page.getByRole('link', { name: 'Edit Handoff regulars' }).click();
    const card = page.getByRole('region', { name: 'Export customers' });
    const again = page.waitForEvent('download');
    await card.getByRole('button', { name: 'Export CSV of Handoff regulars' }).click();
    assert.equal((await again).suggestedFilename(), 'segment-handoff-regulars-customers.csv');
    await card.getByText('Downloaded segment-handoff-regulars-customers.csv.').waitFor();
    await screenshots(page, 'segment-editor-export');
    assert.equal(await page.getByRole('link', { name: 'Webhooks' }).count(), 0, 'no webhooks for a lead');
  });

  test('an admin adds a webhook: field errors beside the fields, then the secret shown once, with a copy button', async () => {
    await signOut(page);
    await signIn(page, harness.emails.admin);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByText('No webhooks yet').waitFor();
    await page.getByRole('button', { name: 'New webhook' }).click();
    const dialog = page.getByRole('dialog');
    const url = dialog.getByLabel('Endpoint URL');
    await url.fill(receiver.url.replace('http://', 'http://someone:hunter2@'));
    for (const event of ['campaign.status_changed', 'campaign.approved', 'customers.import_completed']) await dialog.getByRole('checkbox', { name: event }).uncheck();
    await dialog.getByRole('button', { name: 'Create webhook' }).click();
    await dialog.getByText('Must not carry a user name or password: the signature authenticates deliveries.').waitFor();
    await dialog.getByText('Must name at least one event type.').waitFor();
    assert.equal(await url.getAttribute('aria-invalid'), 'true');
    await dialog.getByRole('alert').filter({ hasText: 'Some fields need attention.' }).waitFor();

    await url.fill(receiver.url);
    await dialog.getByRole('checkbox', { name: 'campaign.status_changed' }).check();
    await dialog.getByLabel('Description (optional)').fill('Loopback receiver');
    await dialog.getByRole('button', { name: 'Create webhook' }).click();
    const shown = page.getByRole('dialog', { name: 'Webhook created: its signing secret' });
    await shown.getByText('Copy this secret now: you will not see it again.').waitFor();
    secret = await shown.getByLabel('Signing secret').inputValue();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    await shown.getByRole('button', { name: 'Copy signing secret' }).click();
    await shown.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
    await screenshots(page, 'webhook-secret');
    await shown.getByRole('button', { name: 'I have stored it' }).click();

    await page.waitForURL(/\/webhooks\/[^/]+$/);
    webhookUrl = new URL(page.url()).pathname;
    await page.getByRole('heading', { name: 'Loopback receiver' }).waitFor();
    await page.getByText('No deliveries yet').waitFor();
    assert.equal((await page.content()).includes(secret), false, 'the secret is not shown again');
    const stored = await harness.service.request('GET', `/v1${webhookUrl}`, { token: admin });
    assert.deepEqual([stored.body.url, stored.body.events, 'secret' in stored.body], [receiver.url, ['campaign.status_changed'], false]);
  });

  test('a test is delivered, signed with that secret, and the log shows it succeeded; a real event follows on Refresh', async () => {
    await page.getByRole('button', { name: 'Send a test' }).click();
    await page.getByText('Test delivered: the endpoint answered 204.').waitFor();
    const row = page.locator('tbody tr').filter({ hasText: 'webhook.test' });
    await row.getByText('Succeeded').waitFor();
    assert.deepEqual(await row.locator('td').allInnerTexts().then((cells) => cells.slice(1, 5)), ['webhook.test', 'Succeeded', '1', 'HTTP 204']);
    const delivered = await receiver.nth(1);
    assert.equal(verified(secret, delivered).type, 'webhook.test');

    const sent = await harness.service.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: admin, body: { status: 'sent' } });
    assert.equal(sent.status, 200, sent.text);
    const moved = verified(secret, await receiver.nth(2));
    assert.deepEqual([moved.type, moved.data.from, moved.data.to], ['campaign.status_changed', 'approved', 'sent']);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator('tbody tr[data-status="succeeded"]').filter({ hasText: 'campaign.status_changed' }).waitFor();
    assert.deepEqual(await page.locator('tbody tr code').allInnerTexts(), ['campaign.status_changed', 'webhook.test'], 'newest first');
    await page.getByText('2 deliveries.', { exact: false }).waitFor();
  });

  test('a failed attempt shows as pending with its error and next attempt, and the log refreshes on its own until it succeeds', async () => {
    receiver.script([{ status: 503, body: 'Down for maintenance' }]);
    await page.getByRole('button', { name: 'Send a test' }).click();
    await page.getByText(/^The endpoint did not accept the test\. The endpoint answered 503: Down for maintenance.*It is tried again at/).waitFor();
    const row = page.locator('tbody tr').first();
    await row.getByText('Pending').waitFor();
    await row.getByText('HTTP 503').waitFor();
    await row.getByText('The endpoint answered 503: Down for maintenance').waitFor();
    assert.notEqual(await row.locator('td').nth(5).innerText(), '–', 'the next attempt is shown');
    await page.getByText('Refreshing on its own while a delivery is pending.', { exact: false }).waitFor();
    await screenshots(page, 'webhook-pending');

    harness.service.clock.advance(1500); // the retry is due: the service sends it, and the page sees it without a click
    await row.getByText('Succeeded').waitFor();
    assert.deepEqual(await row.locator('td').allInnerTexts().then((cells) => [cells[2], cells[3], cells[5]]), ['Succeeded', '2', '–']);
    assert.equal(receiver.requests.length, 4);
    assert.equal(receiver.requests[2]!.headers['webhook-id'], receiver.requests[3]!.headers['webhook-id'], 'one event, two attempts');
    await screenshots(page, 'webhook');
  });

  test('the secret rotates (the new one shown once), the webhook is disabled and enabled, and deleted after confirming', async () => {
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('dialog', { name: 'Rotate the signing secret' }).getByRole('button', { name: 'Rotate secret' }).click();
    const shown = page.getByRole('dialog', { name: 'New signing secret' });
    await shown.getByText('you will not see it again').waitFor();
    const rotated = await shown.getByLabel('Signing secret').inputValue();
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);
    await shown.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByText(/each delivery also carries the signature of the previous secret/).waitFor();
    const sentBefore = receiver.requests.length;
    await page.getByRole('button', { name: 'Send a test' }).click();
    const signed = await receiver.nth(sentBefore + 1);
    assert.equal(verified(rotated, signed).type, 'webhook.test');
    assert.equal(verified(secret, signed).type, 'webhook.test', 'the previous secret signs too, for a day');

    await page.getByRole('button', { name: 'Disable', exact: true }).click();
    await page.locator('.page-header [data-enabled="false"]').waitFor();
    await page.getByRole('button', { name: 'Send a test' }).click();
    await page.getByRole('alert').filter({ hasText: 'The webhook is disabled: enable it before sending a test event.' }).waitFor();
    await page.getByRole('button', { name: 'Enable', exact: true }).click();
    await page.locator('.page-header [data-enabled="true"]').waitFor();

    await page.getByRole('link', { name: 'All webhooks' }).click();
    const listed = page.locator('tbody tr').filter({ hasText: receiver.url });
    await listed.getByText('Enabled').waitFor();
    await screenshots(page, 'webhooks');
    await listed.getByRole('button', { name: `Delete ${receiver.url}` }).click();
    await page.getByRole('dialog', { name: 'Delete webhook' }).getByRole('button', { name: 'Cancel' }).click();
    await listed.waitFor();
    await listed.getByRole('button', { name: `Delete ${receiver.url}` }).click();
    await page.getByRole('dialog', { name: 'Delete webhook' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No webhooks yet').waitFor();
    assert.deepEqual((await harness.service.request('GET', '/v1/webhooks', { token: admin })).body, []);
    assertNoPageProblems(harness);
  });
});
