// In a real browser: the focus lands on the page's heading after signing in and after each navigation, and an admin
// is asked to confirm before a user's role changes or a user is deactivated (with the mouse or the keyboard);
// what the service holds is checked over the API after each answer.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { assertNoPageProblems, signIn, startHarness, type Harness } from './support/harness.ts';

describe('console: users and focus', () => {
  let harness: Harness;
  let page: Page;
  let token: string;
  let marketer: Locator;

  /** The marketer as the service holds them now. */
  const stored = async () => {
    const users = await harness.service.request('GET', '/v1/users', { token });
    const found = users.body.find((u: { email: string }) => u.email === harness.emails.lifecycle_marketer);
    return { role: found.role, isActive: found.isActive };
  };
  /** The element that has the focus, as "tag: text". */
  const focused = () => page.evaluate(() => `${document.activeElement?.tagName}: ${document.activeElement?.textContent}`);

  before(async () => {
    harness = await startHarness();
    token = (await harness.service.signIn(harness.emails.admin)).accessToken;
    const segment = await harness.service.request('POST', '/v1/segments', { token, body: { name: 'Big spenders', conditions: [{ field: 'totalAmountSpent', operator: 'gte', value: 1000 }] } });
    assert.equal(segment.status, 200, segment.text);
    page = await harness.newPage();
    marketer = page.locator('tbody tr').filter({ hasText: harness.emails.lifecycle_marketer });
  });
  after(() => harness.close());

  test('after signing in, and after each navigation, the focus is on the page heading', async () => {
    await signIn(page, harness.emails.admin);
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    assert.equal(await focused(), 'H1: Overview');
    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByRole('heading', { name: 'Users', level: 1 }).waitFor();
    assert.equal(await focused(), 'H1: Users');
    await page.getByRole('link', { name: 'Segments' }).click();
    await page.getByRole('link', { name: 'Big spenders', exact: true }).click(); // this screen loads the segment before its heading
    await page.getByRole('heading', { name: 'Big spenders', level: 1 }).waitFor();
    await page.waitForFunction(() => document.activeElement?.tagName === 'H1');
    assert.equal(await focused(), 'H1: Big spenders');
    await page.goBack();
    await page.getByRole('heading', { name: 'Segments', level: 1 }).waitFor();
    assert.equal(await focused(), 'H1: Segments');
    await page.getByRole('link', { name: 'Users' }).click();
    await marketer.getByRole('combobox').waitFor();
  });

  test('a role change asks first: Cancel (or Escape) leaves the role as it was, Confirm changes it', async () => {
    const role = marketer.getByRole('combobox');
    await role.selectOption('marketing_lead');
    const dialog = page.getByRole('dialog', { name: 'Change role' });
    await dialog.getByText(/will be marketing lead instead of lifecycle marketer/).waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await role.inputValue(), 'lifecycle_marketer');
    assert.deepEqual(await stored(), { role: 'lifecycle_marketer', isActive: true });

    await role.focus(); // as the keyboard reaches it
    await role.selectOption('admin');
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await role.inputValue(), 'lifecycle_marketer');
    assert.equal(await focused(), await role.evaluate((select) => `SELECT: ${select.textContent}`), 'the focus is back on the select');
    assert.deepEqual(await stored(), { role: 'lifecycle_marketer', isActive: true });

    await role.selectOption('marketing_lead');
    await dialog.waitFor();
    assert.equal(await focused(), 'BUTTON: Change role', 'the keyboard starts on Confirm');
    await page.keyboard.press('Enter');
    await page.getByText(/is now marketing lead/).waitFor();
    assert.deepEqual(await stored(), { role: 'marketing_lead', isActive: true });
  });

  test('deactivating asks first: Cancel leaves the user active, Confirm deactivates', async () => {
    const dialog = page.getByRole('dialog', { name: 'Deactivate user' });
    await marketer.getByRole('button', { name: 'Deactivate' }).click();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.deepEqual(await stored(), { role: 'marketing_lead', isActive: true });
    await marketer.getByRole('button', { name: 'Deactivate' }).click();
    await dialog.getByRole('button', { name: 'Deactivate' }).click();
    await marketer.getByText('Deactivated').waitFor();
    assert.deepEqual(await stored(), { role: 'marketing_lead', isActive: false });
    assertNoPageProblems(harness);
  });
});
