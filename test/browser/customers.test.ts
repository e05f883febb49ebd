// In a real browser: signing in (and failing to), the overview, searching customers with the URL kept in step,
// importing a CSV with a bad row, building a segment whose count follows the typing, and a silent token refresh.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { customerRow, importRows } from '../support/customers.ts';
import { assertNoPageProblems, screenshots, signIn, startHarness, type Harness } from './support/harness.ts';

const DAY = 86_400_000;
const COUNTRIES = ['Germany', 'France', 'Spain', 'Italy'];

describe('console: customers, import, segments, session', () => {
  let harness: Harness;
  let page: Page;
  let token: string;

  before(async () => {
    harness = await startHarness();
    const now = harness.service.clock.now().getTime();
    token = (await harness.service.signIn(harness.emails.admin)).accessToken;
    const rows = Array.from({ length: 40 }, (_, i) =>
      customerRow({
        name: i === 7 ? 'Grace Hopper' : `Customer ${String(i).padStart(2, '0')}`,
        email: i === 7 ? 'grace.hopper@navy.example.com' : `customer${i}@example.com`,
        country: COUNTRIES[i % COUNTRIES.length]!,
        totalTransactions: i,
        totalAmountSpent: i * 125.5,
        lastActivityDate: new Date(now - (i * 9 + 1) * DAY).toISOString(),
        status: i % 7 === 0 ? 'churned' : i % 3 === 0 ? 'inactive' : 'active',
      }),
    );
    await importRows(harness.service, token, rows);
    page = await harness.newPage();
  });
  after(() => harness.close());

  test('a wrong password is refused with words, and the form stays', async () => {
    await page.goto('/');
    await page.getByLabel('Email').fill(harness.emails.lifecycle_marketer);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'That email and password do not match an active account.' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Sign out' }).count(), 0);
    await screenshots(page, 'sign-in-error');
  });

  test('a marketer signs in and sees the overview with live figures and the trend chart', async () => {
    await signIn(page, harness.emails.lifecycle_marketer);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.locator('.kpi-value').first().filter({ hasText: '40' }).waitFor();
    await page.locator('.chart svg rect.bar').first().waitFor();
    await page.locator('.ring').waitFor();
    assert.equal(await page.locator('.chart svg g').count(), 12);
    await page.getByLabel('Period').selectOption('6');
    await page.waitForURL(/\?months=6$/);
    await page.waitForFunction(() => document.querySelectorAll('.chart svg g').length === 6);
    assert.equal(await page.getByRole('link', { name: 'Users' }).count(), 0, 'no user management for a marketer');
    await screenshots(page, 'overview');
  });

  test('searching customers puts the search in the URL; back and forward replay it', async () => {
    await page.getByRole('link', { name: 'Customers' }).click();
    await page.getByText('Showing 1–25 of 40 customers').waitFor();
    await page.getByLabel('Search').fill('hopper');
    await page.waitForURL(/\/customers\?search=hopper$/);
    await page.getByText('Showing 1–1 of 1 customers').waitFor();
    await page.getByRole('cell', { name: /^Grace Hopper/ }).waitFor();
    assert.equal(await page.getByRole('button', { name: /^Delete / }).count(), 0, 'a marketer may not delete customers');

    await page.getByRole('link', { name: 'Name' }).click();
    await page.waitForURL(/search=hopper&sort=name&direction=asc$/);
    await page.goBack();
    await page.waitForURL(/\/customers\?search=hopper$/);
    await page.goBack();
    await page.waitForURL(/\/customers$/);
    await page.getByText('Showing 1–25 of 40 customers').waitFor();
    assert.equal(await page.getByLabel('Search').inputValue(), '');
    await page.goForward();
    await page.getByText('Showing 1–1 of 1 customers').waitFor();
    assert.equal(await page.getByLabel('Search').inputValue(), 'hopper');

    await page.getByLabel('Search').fill('');
    await page.getByRole('link', { name: 'Next' }).click();
    await page.getByText('Showing 26–40 of 40 customers').waitFor();
    assert.match(page.url(), /\/customers\?page=2$/);
    await screenshots(page, 'customers');
  });

  test('a CSV with quoted fields and one bad row, imported as a job: good rows stored, the bad one in failures.csv with its line', async () => {
    await page.goto('/customers');
    await page.getByRole('button', { name: 'Import CSV' }).click();
    const csv = [
      'Name,Email,Country,Total transactions,Total amount spent,Last activity date,Status',
      '"Doe, Jane",jane.doe@example.com,Germany,3,"120,50",2026-09-30,active',
      'Bad Row,not-an-email,France,1,10,2026-09-30,active',
      '"Ken ""The Closer"" Lee",ken.lee@example.com,Spain,7,980.25,2026-10-15,inactive',
    ].join('\r\n');
    await page.getByLabel('CSV file').setInputFiles({ name: 'customers.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByText('Done. Imported 2 customers. 1 row was skipped.').waitFor();
    assert.equal(await page.locator('progress').getAttribute('value'), String(Buffer.byteLength(csv)));
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download skipped rows (failures.csv)' }).click();
    const file = await download;
    assert.equal(file.suggestedFilename(), 'customers-failures.csv');
    const chunks: Buffer[] = [];
    for await (const chunk of (await file.createReadStream())!) chunks.push(chunk as Buffer);
    assert.equal(Buffer.concat(chunks).toString('utf8'), 'line,email,reason\r\n3,not-an-email,"Email must be a valid email address, such as ada@example.com."\r\n');
    await screenshots(page, 'customers-import');
    await page.getByRole('button', { name: 'Done' }).click();

    await page.getByLabel('Search').fill('doe, jane');
    await page.getByRole('cell', { name: /^Doe, Jane/ }).waitFor();
    const stored = await harness.service.request('GET', '/v1/customers?search=ken.lee', { token });
    assert.equal(stored.body.items[0].name, 'Ken "The Closer" Lee');
  });

  test('the segment builder counts as the marketer types, and the segment is saved with that count', async () => {
    const preview = async (conditions: unknown[]) =>
      (await harness.service.request('POST', '/v1/segments/preview', { token, body: { conditions } })).body.matchCount as number;
    const rich = await preview([{ field: 'totalAmountSpent', operator: 'gte', value: 1000 }]);
    const richGermans = await preview([{ field: 'totalAmountSpent', operator: 'gte', value: 1000 }, { field: 'country', operator: 'eq', value: 'germany' }]);
    assert.ok(rich > richGermans && richGermans > 0, `${rich} > ${richGermans} > 0`);

    await page.getByRole('link', { name: 'Segments' }).click();
    await page.getByText('No segments yet').waitFor();
    await page.getByRole('link', { name: 'New segment' }).first().click();
    await page.getByLabel('Segment name').fill('Big spenders in Germany');
    const count = page.locator('.count-value');
    const first = page.getByRole('group', { name: 'Condition 1' });
    await first.getByLabel('Value').fill('1000');
    await count.filter({ hasText: new RegExp(`^${rich}$`) }).waitFor();

    await page.getByRole('button', { name: '+ Add condition' }).click();
    const second = page.getByRole('group', { name: 'Condition 2' });
    await second.getByLabel('Field').selectOption('country');
    await second.getByLabel('Value').pressSequentially('germany');
    await count.filter({ hasText: new RegExp(`^${richGermans}$`) }).waitFor();
    await screenshots(page, 'segment-builder');

    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.waitForURL(/\/segments$/);
    const card = page.locator('.segment-card').filter({ hasText: 'Big spenders in Germany' });
    await card.getByText(`${richGermans} customers`).waitFor();
    await card.getByText('Country is germany').waitFor();
    await screenshots(page, 'segments');
  });

  test('an expired access token is renewed once, whatever number of requests were waiting, and the user sees nothing of it', async () => {
    const refreshes: string[] = [];
    page.on('request', (request) => {
      if (request.url().endsWith('/v1/auth/refresh')) refreshes.push(request.method());
    });
    harness.service.clock.advance((harness.service.config.accessTokenTtlSeconds + 60) * 1000);
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.locator('.kpi-value').first().filter({ hasText: '42' }).waitFor();
    await page.locator('.chart svg rect.bar').first().waitFor();
    assert.deepEqual(refreshes, ['POST'], 'four requests refused at once, one refresh');
    assert.equal(await page.getByRole('heading', { name: 'Sign in' }).count(), 0);
    assert.equal(await page.getByRole('alert').count(), 0);
  });

  test('a refresh token that is no longer valid ends the session with a clear message', async () => {
    await page.evaluate(() => sessionStorage.setItem('campaign-console.refresh-token', 'revoked-or-forged'));
    harness.service.clock.advance((harness.service.config.accessTokenTtlSeconds + 60) * 1000);
    await page.getByRole('link', { name: 'Customers' }).click();
    await page.getByText('Your session has expired. Sign in again to continue where you were.').waitFor();
    assert.match(page.url(), /\/customers$/);
    await signIn(page, harness.emails.lifecycle_marketer);
    await page.getByRole('heading', { name: 'Customers' }).waitFor();
  });

  test('a marketing lead creates, edits and deletes a customer; a duplicate email is refused beside its field', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, harness.emails.marketing_lead);
    await page.getByRole('link', { name: 'Customers' }).click();
    await page.getByRole('button', { name: 'New customer' }).click();
    const dialog = page.getByRole('dialog', { name: 'New customer' });
    await dialog.getByLabel('Name').fill('Ada Byron');
    await dialog.getByLabel('Email').fill('grace.hopper@navy.example.com');
    await dialog.getByLabel('Country').fill('United Kingdom');
    await dialog.getByLabel('Transactions').fill('-1');
    await dialog.getByRole('button', { name: 'Create customer' }).click();
    await dialog.getByText('Must be 0 or more.').waitFor();
    assert.equal(await dialog.getByLabel('Transactions').getAttribute('aria-invalid'), 'true');
    await dialog.getByLabel('Transactions').fill('4');
    await dialog.getByRole('button', { name: 'Create customer' }).click();
    await dialog.getByText('A customer with the email grace.hopper@navy.example.com already exists.').waitFor();
    await dialog.getByLabel('Email').fill('ada@analytical.example.com');
    await dialog.getByRole('button', { name: 'Create customer' }).click();
    await dialog.waitFor({ state: 'detached' });

    await page.getByLabel('Search').fill('ada byron');
    const row = page.locator('tbody tr').filter({ hasText: 'ada@analytical.example.com' });
    await row.getByRole('button', { name: 'Edit Ada Byron' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Ada Byron' });
    await edit.getByLabel('Status').selectOption('churned');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await row.getByText('Churned').waitFor();

    await row.getByRole('button', { name: 'Delete Ada Byron' }).click();
    await page.getByRole('dialog', { name: 'Delete customer' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No customers match').waitFor();
  });

  test('a large file goes up as it is, in one request, and the dialog follows the job to its end', async () => {
    const uploads: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && /\/v1\/customers\/import/.test(request.url()) && !request.url().includes('/imports/preview')) uploads.push(`${request.url()} ${request.headers()['content-type']}`);
    });
    const lines = ['name,email,country,totalTransactions,totalAmountSpent,lastActivityDate,status'];
    for (let i = 0; i < 2100; i++) lines.push(`Bulk ${i},bulk${i}@example.com,Portugal,${i % 9},${i % 300}.5,2026-10-01,active`);
    await page.getByLabel('Search').fill('');
    await page.getByRole('button', { name: 'Import CSV' }).click();
    await page.getByLabel('CSV file').setInputFiles({ name: 'bulk.csv', mimeType: 'text/csv', buffer: Buffer.from(lines.join('\n')) });
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByText('Done. Imported 2,100 customers. No rows were skipped.').waitFor();
    assert.equal(uploads.length, 1);
    assert.match(uploads[0]!, /\/v1\/customers\/imports\?fileName=bulk\.csv text\/csv$/);
    assert.equal(await page.locator('progress').getAttribute('value'), String(Buffer.byteLength(lines.join('\n'))));
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByText(/of 2,142 customers$/).waitFor(); // 40 + 2 imported earlier + 2,100
    assertNoPageProblems(harness);
  });
});
