// In a real browser, the assistant through a model provider (the fake, replaying what real servers send): a reply the
// model had to stop at its token budget is shown as cut while it streams in and again when the thread is reopened.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { assertNoPageProblems, screenshots, signIn, startHarness, type Harness } from './support/harness.ts';

describe('console: assistant through a provider', () => {
  let fake: FakeProvider;
  let harness: Harness;
  let page: Page;

  before(async () => {
    fake = await startFakeProvider();
    harness = await startHarness({ env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: 'gpt-4o-mini' } });
    page = await harness.newPage();
    await signIn(page, harness.emails.lifecycle_marketer);
  });
  after(async () => {
    await harness.close();
    await fake.close();
  });

  test('a reply cut at the token limit is marked as cut, live and after reopening the thread', async () => {
    fake.enqueue({ transcript: 'openai/stream-length.http' });
    await page.getByRole('link', { name: 'Assistant' }).click();
    await page.getByLabel('Message').fill('Summarise our customer base in detail.');
    await page.keyboard.press('Enter');
    const cut = page.locator('.message.assistant.truncated');
    await cut.getByText('Cut short: the model reached its length limit').waitFor();
    const shown = await cut.locator('.message-text').textContent();

    await page.reload();
    await cut.getByText('Cut short: the model reached its length limit').waitFor();
    assert.equal(await cut.locator('.message-text').textContent(), shown);
    assert.equal(await page.locator('.message.assistant').count(), 1);
    await screenshots(page, 'assistant-cut');
    assertNoPageProblems(harness);
  });
});
