import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { addSessionCookie, chromiumForSuite, otherOriginPageForSuite } from './browser.ts';
import { registerTestApp, startSignIn } from '../oauth/testing.ts';

/** The longest name an app may have, without a space to wrap at. */
const LONG_NAME = 'Notes'.repeat(20);

/** How far the page sticks out past a 390 px viewport, and the buttons that end past its right edge. */
async function overflowOf(page: Page) {
  return page.evaluate(() => ({
    page: document.documentElement.scrollWidth - window.innerWidth,
    buttons: [...document.querySelectorAll('button, input, select')]
      .filter((element) => element.getBoundingClientRect().right > window.innerWidth + 1)
      .map((element) => element.textContent?.trim() || element.getAttribute('name') || element.tagName),
  }));
}

describeEachDatabase('an app with a 100-character name without spaces, at 390 px, in Chromium', (env) => {
  const browser = chromiumForSuite();
  const appSite = otherOriginPageForSuite('Back at the app');

  it("wraps on the sign-in and consent pages and in the dashboard's authorized apps: nothing sticks out", async () => {
    const app = await registerTestApp(env, {
      name: LONG_NAME,
      scopes: ['read', 'billing:read'],
      redirectUris: [`${appSite.origin}/callback/long`],
    });
    await registerTestApp(env, { name: 'Short App', scopes: ['read'] });
    const user = await env.createUser();
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);

    await page.goto((await startSignIn(env, app, ['read', 'billing:read'])).url.href);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.deepEqual(await overflowOf(page), { page: 0, buttons: [] }, 'the sign-in page');
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    assert.deepEqual(await overflowOf(page), { page: 0, buttons: [] }, 'the consent page');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.href.startsWith(app.redirectUri));

    await addSessionCookie(context, env.baseUrl, user);
    await page.goto(`${env.baseUrl}/#/apps`);
    await page.getByRole('heading', { name: LONG_NAME }).waitFor();
    assert.deepEqual(await overflowOf(page), { page: 0, buttons: [] }, 'the authorized apps page');
    await context.close();
  });
});
