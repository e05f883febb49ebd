// The console's CSV import (product.md section 14, "Look before importing"): choosing a file shows how each column
// will be read and the first rows; changing a column's reading refreshes them; the job starts with that mapping and
// with updates of stored emails when chosen, and its result is shown.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { customerRow, importRows } from '../support/customers.ts';
import { assertNoPageProblems, PHONE, DESKTOP, screenshots, signIn, startHarness, type Harness } from './support/harness.ts';

describe('console: importing a CSV after a preview', () => {
  let harness: Harness;
  let page: Page;
  let token: string;
  const stored = customerRow({ name: 'Stored Before', email: 'stored.person@shop.example.com', country: 'Kenya' });

  before(async () => {
    harness = await startHarness();
    token = (await harness.service.signIn(harness.emails.admin)).accessToken;
    await importRows(harness.service, token, [stored]);
    page = await harness.newPage();
    await signIn(page, harness.emails.lifecycle_marketer);
  });
  after(() => harness.close());

  test('the preview shows the columns and first rows; a changed mapping and "update" go with the job, whose result is shown', async () => {
    const uploads: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().includes('/v1/customers/imports')) uploads.push(new URL(request.url()).pathname + new URL(request.url()).search);
    });
    await page.goto('/customers');
    await page.getByRole('button', { name: 'Import CSV' }).click();
    const today = new Date().toISOString().slice(0, 10);
    const csv = [
      'Mail,Client,Country,Orders,Amount,Last activity,Status,Notes',
      `${stored.email},Stored After,Kenya,4,99.5,${today},churned,vip`,
      `new.person@shop.example.com,New Person,Ghana,1,10,${today},active,`,
      `broken@shop.example.com,Broken,Ghana,many,10,${today},active,`,
    ].join('\n');
    await page.getByLabel('CSV file').setInputFiles({ name: 'weekly.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });

    const clientColumn = page.getByLabel('Read column Client as');
    await clientColumn.waitFor();
    assert.equal(await page.getByLabel('Read column Mail as').inputValue(), 'email');
    assert.equal(await clientColumn.inputValue(), '', 'Client is no known name: not imported until chosen');
    assert.equal(await page.getByLabel('Read column Notes as').inputValue(), '');
    const problems = page.locator('.import-problems li');
    await page.getByText('Line 3 (new.person@shop.example.com): Name is missing.').waitFor();

    await clientColumn.selectOption('name');
    await page.getByRole('cell', { name: 'New Person' }).waitFor();
    // Skipping (the default), the stored email is a problem; the broken row is one too.
    await page.getByText(`Line 2 (${stored.email}): A customer with the email ${stored.email} already exists.`).waitFor();
    await page.getByText('Line 4 (broken@shop.example.com): Number of transactions must be a whole number of 0 or more.').waitFor();
    await page.getByLabel('Update that customer with the row’s values').check();
    await page.getByRole('cell', { name: 'Stored After' }).waitFor();
    await page.getByRole('cell', { name: 'updates a customer' }).waitFor();
    assert.equal(await problems.count(), 1);
    await screenshots(page, 'import-preview');
    await page.setViewportSize(PHONE);
    const help = page.locator('.import-help');
    const overflowing = await help.evaluate((element) => element.scrollWidth > element.clientWidth);
    assert.equal(overflowing, false, 'the import help fits a phone');
    await page.setViewportSize(DESKTOP);

    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByText('Done. Imported 1 customer. Updated 1 customer. 1 row was skipped.').waitFor();
    const jobUpload = uploads.find((url) => url.startsWith('/v1/customers/imports?'))!;
    const query = new URL(jobUpload, 'http://x').searchParams;
    assert.deepEqual(JSON.parse(query.get('columns')!), { Client: 'name' });
    assert.equal(query.get('onExisting'), 'update');
    assert.ok(uploads.some((url) => url.startsWith('/v1/customers/imports/preview')));

    const after = await harness.service.request('GET', `/v1/customers?search=${encodeURIComponent('shop.example.com')}`, { token });
    assert.deepEqual(
      after.body.items.map((c: { name: string; status: string }) => [c.name, c.status]).sort(),
      [['New Person', 'active'], ['Stored After', 'churned']],
    );
    await page.getByRole('button', { name: 'Done' }).click();
    assertNoPageProblems(harness);
  });
});
