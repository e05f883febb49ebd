// The browser tests' harness: the real service in-process on a temporary database, Debian's chromium driven by
// playwright-core (never a downloaded browser), sign-in, screenshots at desktop and phone width, and a record of
// anything the page got wrong (uncaught errors, Content-Security-Policy violations).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import type { Role } from '../../../src/domain/auth-user.ts';
import { realSleep, type Sleep } from '../../../src/llm/sleep.ts';
import { PASSWORD, startService, TestClock, type TestService } from '../../helpers.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SHOTS = new URL('../../../test-results/', import.meta.url);
export const DESKTOP = { width: 1280, height: 860 };
export const PHONE = { width: 360, height: 780 };

export interface Harness {
  service: TestService;
  context: BrowserContext;
  /** Users by role, all with the password PASSWORD. */
  emails: Record<Role, string>;
  /** Uncaught page errors and CSP violations seen so far. */
  problems: string[];
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/**
 * Starts the service (by default on a clock set to the real time, so dates typed in the page are valid; `slowStreams`
 * paces the local generator's streamed pieces so a reply can be watched and stopped) and a browser with a fresh profile.
 */
export async function startHarness(options: { slowStreams?: number; env?: Record<string, string>; clock?: TestClock } = {}): Promise<Harness> {
  const factor = options.slowStreams ?? 1;
  const sleep: Sleep = (ms, signal) => realSleep(ms * factor, signal);
  const service = await startService({ clock: options.clock ?? new TestClock(new Date()), sleep, env: { LOG_LEVEL: 'warn', ...options.env } });
  const emails = {} as Record<Role, string>;
  for (const role of ['lifecycle_marketer', 'marketing_lead', 'admin'] as const) emails[role] = (await service.createUser(role)).email;
  const profile = mkdtempSync(join(tmpdir(), 'console-browser-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: DESKTOP, baseURL: service.url });
  context.setDefaultTimeout(10_000);
  for (const page of context.pages()) await page.close();
  const problems: string[] = [];
  return {
    service,
    context,
    emails,
    problems,
    async newPage() {
      const page = await context.newPage();
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) problems.push(`console: ${message.text()}`);
      });
      return page;
    },
    async close() {
      await context.close();
      await service.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Signs in through the form and waits for the layout. */
export async function signIn(page: Page, email: string, password = PASSWORD): Promise<void> {
  if (!page.url().startsWith('http')) await page.goto('/');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** Signs out with the sidebar button (at desktop width). */
export async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
}

/**
 * Saves `<name>-1280.png` and `-360.png`, whole page, from the top, after the layout settles: in `directory`, else in
 * `SCREENSHOTS_DIR` when set (to keep them out of the working tree), else in test-results/ at the top.
 */
export async function screenshots(page: Page, name: string, directory = process.env.SCREENSHOTS_DIR): Promise<void> {
  const shots = directory ? pathToFileURL(`${directory.replace(/\/+$/, '')}/`) : SHOTS;
  mkdirSync(shots, { recursive: true });
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: new URL(`${name}-${size.width}.png`, shots).pathname, fullPage: true });
  }
  await page.setViewportSize(DESKTOP);
}

/** Fails with what the page got wrong, if anything. */
export function assertNoPageProblems(harness: Harness): void {
  assert.deepEqual(harness.problems, []);
}
