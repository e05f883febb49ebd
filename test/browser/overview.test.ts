// In a real browser, with CURRENCY set (in lower case, as an operator may type it): every key figure fits its card
// from a phone to a wide screen, large amounts are shortened with the exact value kept, amounts carry the currency,
// and the trend chart says what it counts. Figures are computed here from the rows imported.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { customerRow, importRows } from '../support/customers.ts';
import { assertNoPageProblems, signIn, startHarness, type Harness } from './support/harness.ts';

/** 500 customers, half at 8,000.00 and half at 8,284.94: an average of 8,142.47 (the longest exact figure a card shows) and a total of 4,071,235.00. */
const ROWS = Array.from({ length: 500 }, (_, i) => customerRow({ totalAmountSpent: i % 2 === 0 ? 8_000 : 8_284.94, status: i % 5 === 0 ? 'churned' : 'active' }));
const TOTAL = ROWS.reduce((sum, row) => sum + Math.round(row.totalAmountSpent * 100), 0) / 100;
const AVERAGE = Math.round((TOTAL / ROWS.length) * 100) / 100;
const WIDTHS = [360, 1024, 1280, 1920];

/** What each key figure's card overflows by, in pixels, at the current width: the card itself and each line in it. */
function overflows(page: Page) {
  return page.locator('.kpi').evaluateAll((cards) =>
    cards.flatMap((card) => {
      const box = card.getBoundingClientRect();
      const label = card.querySelector('.kpi-label')?.textContent ?? '';
      const lines = [card, ...Array.from(card.children)];
      return lines.flatMap((line) => {
        const inner = line.getBoundingClientRect();
        const spill = Math.max(line.scrollWidth - line.clientWidth, box.left - inner.left, inner.right - box.right, box.top - inner.top, inner.bottom - box.bottom);
        return spill > 0.5 ? [`${label}: ${line.className || line.tagName} by ${spill.toFixed(1)} px`] : [];
      });
    }),
  );
}

describe('console: overview', () => {
  let harness: Harness;
  let page: Page;
  let locale: string;

  before(async () => {
    harness = await startHarness({ env: { CURRENCY: 'chf' } });
    await importRows(harness.service, (await harness.service.signIn(harness.emails.admin)).accessToken, ROWS);
    page = await harness.newPage();
    await signIn(page, harness.emails.lifecycle_marketer);
    await page.locator('.kpi-value').first().waitFor();
    locale = await page.evaluate(() => navigator.language);
  });
  after(() => harness.close());

  test('every key figure stays inside its card at 360, 1024, 1280 and 1920 px', async () => {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      assert.deepEqual(await overflows(page), [], `at ${width} px`);
    }
    assert.equal(await page.locator('.kpi').count(), 5);
  });

  test('amounts are in the CURRENCY; a large one is shortened, its exact value on hover and for screen readers', async () => {
    const exact = (n: number) => new Intl.NumberFormat(locale, { style: 'currency', currency: 'CHF' }).format(n);
    const shortened = new Intl.NumberFormat(locale, { style: 'currency', currency: 'CHF', notation: 'compact', maximumSignificantDigits: 3 }).format(TOTAL);
    const total = page.locator('.kpi').filter({ hasText: 'Total customer value' }).locator('.kpi-value');
    assert.equal(await total.getAttribute('title'), exact(TOTAL));
    assert.equal(await total.locator('[aria-hidden="true"]').textContent(), shortened);
    assert.equal(await total.locator('.visually-hidden').textContent(), exact(TOTAL));
    assert.match(shortened, /CHF\s?4\.07M/);
    const average = page.locator('.kpi').filter({ hasText: 'Average customer value' }).locator('.kpi-value');
    assert.equal(await average.textContent(), exact(AVERAGE), 'an amount under 10,000 is shown exactly');
    assert.equal(await average.getAttribute('title'), null);
    const spent = await page.locator('section[aria-labelledby="top-title"] tbody td.num').first().textContent();
    assert.equal(spent, exact(8_284.94), 'top customers');
    const counts = await page.evaluate(async (path) => {
      const format = (await import(path)) as { countFigure(n: number): { shown: string; exact: string } };
      return [format.countFigure(99_999), format.countFigure(4_071_234)];
    }, '/js/format.js');
    const plain = new Intl.NumberFormat(locale);
    assert.deepEqual(counts, [
      { shown: plain.format(99_999), exact: plain.format(99_999) },
      { shown: new Intl.NumberFormat(locale, { notation: 'compact', maximumSignificantDigits: 3 }).format(4_071_234), exact: plain.format(4_071_234) },
    ], 'a count is shortened from 100,000');
    assertNoPageProblems(harness);
  });

  test('after a reload, which resumes the session, amounts keep the currency', async () => {
    await page.reload();
    const total = page.locator('.kpi').filter({ hasText: 'Total customer value' }).locator('.kpi-value');
    await total.waitFor();
    assert.equal(await total.getAttribute('title'), new Intl.NumberFormat(locale, { style: 'currency', currency: 'CHF' }).format(TOTAL));
  });

  test('the trend chart says it counts customers by the month of their last activity, for either measure', async () => {
    const caption = page.locator('.chart figcaption');
    assert.match((await caption.textContent()) ?? '', /by the month of their last activity/);
    await page.getByLabel('Show').selectOption('customers');
    await caption.filter({ hasText: 'Customers counted by the month of their last activity' }).waitFor();
    assertNoPageProblems(harness);
  });
});
