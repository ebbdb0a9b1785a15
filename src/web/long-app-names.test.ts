import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { addSessionCookie, chromiumForSuite, otherOriginPageForSuite, startSdkSourcePage } from './browser.ts';
import { registerTestApp, startSignIn } from '../oauth/testing.ts';

/** The longest name an app may have, without a space to wrap at. */
const LONG_NAME = 'Notes'.repeat(20);

const WIDTHS = { phone: { width: 390, height: 844 }, desktop: { width: 1280, height: 800 } } as const;

/** A third-party app's page with the SDK's sign-in dialog, given the long name. */
const SDK_PAGE = `<!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>app</title>
<tollgate-signin-dialog app-name="${LONG_NAME}"></tollgate-signin-dialog>
<script type="module">
import { defineTollgateElements } from '/sdk/index.ts';
defineTollgateElements();
const dialog = document.querySelector('tollgate-signin-dialog');
dialog.client = { signIn: async () => {} };
dialog.show();
</script>`;

/** How far the page sticks out past the viewport, and the buttons that end past its right edge. */
async function overflowOf(page: Page) {
  return page.evaluate(() => ({
    page: document.documentElement.scrollWidth - window.innerWidth,
    buttons: [...document.querySelectorAll('button, input, select')]
      .filter((element) => element.getBoundingClientRect().right > window.innerWidth + 1)
      .map((element) => element.textContent?.trim() || element.getAttribute('name') || element.tagName),
  }));
}

describeEachDatabase('an app with a 100-character name without spaces, in Chromium', (env) => {
  const browser = chromiumForSuite();
  const appSite = otherOriginPageForSuite('Back at the app');
  let sdkPage: Awaited<ReturnType<typeof startSdkSourcePage>> | undefined;
  before(async () => void (sdkPage = await startSdkSourcePage(SDK_PAGE)));
  after(() => sdkPage?.close());

  for (const [width, viewport] of Object.entries(WIDTHS)) {
    it(`${width}: wraps on the sign-in and consent pages and in the dashboard's authorized apps: nothing sticks out`, async () => {
      const app = await registerTestApp(env, {
        name: LONG_NAME,
        scopes: ['read', 'billing:read'],
        redirectUris: [`${appSite.origin}/callback/long`],
      });
      await registerTestApp(env, { name: 'Short App', scopes: ['read'] });
      const user = await env.createUser();
      const context = await browser.newContext({ viewport });
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

    it(`${width}: the SDK's sign-in dialog shows the whole name, wrapped inside the dialog`, async () => {
      const page = await browser.newPage({ viewport });
      page.setDefaultTimeout(15_000);
      await page.goto(`${sdkPage!.origin}/`);
      const description = page.locator('tollgate-signin-dialog #description');
      await description.waitFor();
      const fit = await description.evaluate((text) => {
        const dialog = text.closest('dialog')!.getBoundingClientRect();
        const box = text.getBoundingClientRect();
        return {
          wider: text.scrollWidth - text.clientWidth,
          inDialog: box.left >= dialog.left && box.right <= dialog.right,
          dialogInView: dialog.left >= 0 && dialog.right <= window.innerWidth,
        };
      });
      assert.deepEqual(fit, { wider: 0, inDialog: true, dialogInView: true });
      assert.match((await description.textContent())!, new RegExp(`^${LONG_NAME} uses your Tollgate account`));
      assert.deepEqual(await overflowOf(page), { page: 0, buttons: [] }, 'the page under the dialog');
      await page.close();
    });
  }
});
