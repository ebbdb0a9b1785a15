import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

const WIDTHS = { phone: { width: 390, height: 844 }, desktop: { width: 1280, height: 800 } } as const;

/** What a proxy in front of the gateway answers when the gateway is down: a 502 with an HTML page. */
const BAD_GATEWAY = {
  status: 502,
  contentType: 'text/html',
  body: '<html><body><h1>502 Bad Gateway</h1></body></html>',
};

describeEachDatabase('the wallet page when its reads fail (Chromium)', (env) => {
  const browser = chromiumForSuite();

  for (const [width, viewport] of Object.entries(WIDTHS))
    test(`${width}: a read that failed says what could not be loaded, with Try again, and never claims "No transactions yet."`, async () => {
      const user = await env.createUser();
      const granted = await env.admin('POST', `/api/admin/users/${user.userId}/credits`, {
        amount: 5,
        reason: 'welcome',
      });
      assert.equal(granted.status, 200, granted.text);
      const context = await browser.newContext({ viewport });
      await addSessionCookie(context, env.baseUrl, user);
      await context.route('**/api/wallet/**', (route) => route.fulfill(BAD_GATEWAY));
      await context.route('**/api/usage?*', (route) => route.fulfill(BAD_GATEWAY));
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${env.baseUrl}/#/wallet`);

      const transactions = page.getByTestId('transactions-failed');
      await transactions.waitFor();
      assert.equal(
        (await transactions.textContent())!.trim(),
        'Your transactions could not be loaded. The gateway answered 502.Try again to load the transactions',
      );
      for (const [testId, what] of [
        ['balance-failed', 'Your balance'],
        ['topups-failed', 'Adding credits and your top-ups'],
        ['spend-failed', 'Your daily spend'],
      ])
        assert.match((await page.getByTestId(testId).textContent())!, new RegExp(`^${what} could not be loaded\\.`));
      const content = await page.locator('#content').innerText();
      assert.doesNotMatch(content, /No transactions yet|No top-ups yet/);
      assert.equal(await page.getByTestId('wallet-balance').textContent(), '—', 'no balance is made up');
      assert.equal(await page.getByRole('img', { name: /Daily spend/ }).count(), 0, 'no chart of zeros');
      assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 0);

      // The gateway is back: each Try again loads its part.
      await context.unrouteAll();
      await page.getByRole('button', { name: 'Try again to load the transactions' }).click();
      await page.locator('table tbody tr', { hasText: 'welcome' }).waitFor();
      await transactions.waitFor({ state: 'detached' });
      await page.getByRole('button', { name: 'Try again to load the balance' }).click();
      await page.getByTestId('wallet-balance').filter({ hasText: /^5/ }).waitFor();
      await page.getByRole('button', { name: 'Try again to load the daily spend' }).click();
      await page.getByRole('img', { name: /Daily spend/ }).waitFor();
      await page.getByRole('button', { name: 'Try again to load adding credits and the top-ups' }).click();
      await page.getByTestId('topups-off').waitFor();
      await context.close();
    });
});
