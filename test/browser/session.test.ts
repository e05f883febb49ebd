// In a real browser, on a service whose access tokens live two seconds: the page renews its token before it
// expires, so no request is ever refused, and signing out revokes the refresh token.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { TestClock } from '../helpers.ts';
import { signIn, signOut, startHarness, type Harness } from './support/harness.ts';

/** A clock that follows real time, so two-second tokens really expire. */
class RealClock extends TestClock {
  override now = (): Date => new Date();
}

describe('console: session', () => {
  let harness: Harness;
  let page: Page;

  before(async () => {
    harness = await startHarness({ env: { ACCESS_TOKEN_TTL: '2' }, clock: new RealClock() });
    page = await harness.newPage();
  });
  after(() => harness.close());

  test('the access token is renewed before it expires, so no request meets a 401', async () => {
    const refused: string[] = [];
    page.on('response', (response) => {
      if (response.status() === 401) refused.push(response.url());
    });
    await signIn(page, harness.emails.marketing_lead);
    const isRefresh = (request: { url(): string }) => request.url().endsWith('/v1/auth/refresh');
    await page.waitForRequest(isRefresh); // about 1.6 s after sign-in, by itself
    await page.waitForRequest(isRefresh); // and again: the first token has long expired now
    await page.getByRole('link', { name: 'Customers' }).click();
    await page.getByText('No customers yet').waitFor();
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.locator('.chart svg').waitFor();
    assert.deepEqual(refused, []);
  });

  test('signing out revokes the refresh token and forgets it', async () => {
    const sent = page.waitForRequest((request) => request.url().endsWith('/v1/auth/sign-out'));
    await signOut(page);
    const { refreshToken } = (await sent).postDataJSON() as { refreshToken: string };
    assert.ok(refreshToken);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('campaign-console.refresh-token')), null);
    const reply = await harness.service.request('POST', '/v1/auth/refresh', { body: { refreshToken } });
    assert.equal(reply.status, 401);
    assert.equal(reply.body.code, 'session_expired');
  });
});
