import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

const WIDTHS = { phone: { width: 390, height: 844 }, desktop: { width: 1280, height: 800 } } as const;

/** Whether the element with `testId` is wholly inside the viewport, and whether the focus is in its notice. */
async function seen(page: Page, testId: string) {
  return page.getByTestId(testId).evaluate((element) => {
    const box = element.getBoundingClientRect();
    return {
      inView: box.top >= 0 && box.bottom <= window.innerHeight,
      focused: element.closest('.notice')?.contains(document.activeElement) ?? false,
    };
  });
}

describeEachDatabase('secrets shown once, in Chromium', (env) => {
  const browser = chromiumForSuite();

  for (const [width, viewport] of Object.entries(WIDTHS))
    test(`${width}: a new app's client secret and a new API key are scrolled into view and take the focus, however far below the form is`, async () => {
      const user = await env.createUser();
      const context = await browser.newContext({ viewport });
      await addSessionCookie(context, env.baseUrl, user);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);

      await page.goto(`${env.baseUrl}/#/developer`);
      await page.getByLabel('App name').fill('Secret Test');
      await page.getByLabel(/Redirect URIs/).fill('https://example.com/cb');
      await page.getByLabel(/^Confidential/).check();
      await page.getByRole('button', { name: 'Register app' }).click();
      await page.getByTestId('new-client-secret').waitFor();
      assert.deepEqual(await seen(page, 'new-client-secret'), { inView: true, focused: true });

      await page.goto(`${env.baseUrl}/#/keys`);
      await page.getByLabel('Name').fill('Laptop scripts');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.getByTestId('new-key').waitFor();
      assert.deepEqual(await seen(page, 'new-key'), { inView: true, focused: true });
      await context.close();
    });
});
