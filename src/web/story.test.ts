import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { ensureWebBuilt, launchChromium, screenshot, signInToDemo } from './browser.ts';

// The page's clock is frozen at the gateway's (manual) time, so "resets in" is exact: 20:48 UTC is 3h 12m
// before the daily limit resets at midnight UTC.
const NOW = '2030-01-01T20:48:00.000Z';

/** Makes every `tollgate/echo` call cost exactly 1 credit (hold and charge), so the numbers are easy to check. */
async function priceEchoAtOneCredit(env: TestEnv) {
  const response = await env.admin('PUT', '/api/admin/models/tollgate/echo', {
    provider: 'echo',
    upstreamModel: 'echo',
    pricing: { request: 1, prompt: 0, completion: 0 },
  });
  assert.equal(response.status, 200, response.text);
}

async function grantCredits(env: TestEnv, userId: string, amount: number) {
  const response = await env.admin('POST', `/api/admin/users/${userId}/credits`, { amount, reason: 'test top-up' });
  assert.equal(response.status, 200, response.text);
}

async function newPage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.clock.setFixedTime(new Date(NOW));
  return page;
}

async function sessionUserId(page: Page): Promise<string> {
  return page.evaluate(async () => (await (await fetch('/api/auth/session')).json()).user.id as string);
}

async function say(page: Page, text: string) {
  await page.getByLabel('Message').fill(text);
  await page.getByLabel('Message').press('Enter');
}

async function waitForReply(page: Page, text: string) {
  await page.locator('#log li.assistant', { hasText: text }).waitFor();
}

async function part(dialog: Locator, name: string): Promise<string> {
  return ((await dialog.locator(`[part="${name}"]`).textContent()) ?? '').trim();
}

describeEachDatabase(
  'the dashboard, the demo app and the restriction dialog in Chromium',
  (env) => {
    let browser: Browser;
    before(async () => {
      ensureWebBuilt();
      browser = await launchChromium();
      await priceEchoAtOneCredit(env);
    });
    after(() => browser?.close());

    test('sign up, create a key, register an app, hit its daily limit in the demo, raise the limit, retry and succeed', async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: 'light' });
      const dashboard = await newPage(context);
      const user = { email: `story-${Date.now()}@example.com`, password: 'correct horse battery' };

      // Sign up in the dashboard.
      await dashboard.goto(`${env.baseUrl}/`);
      await screenshot(dashboard, 'sign-in');
      await dashboard.getByRole('button', { name: 'Create an account' }).click();
      await dashboard.getByLabel('Name').fill('Ada Lovelace');
      await dashboard.getByLabel('Email').fill(user.email);
      await dashboard.getByLabel('Password').fill(user.password);
      await dashboard.getByRole('button', { name: 'Create account' }).click();
      await dashboard.getByRole('heading', { name: 'Wallet' }).waitFor();
      const userId = await sessionUserId(dashboard);
      await grantCredits(env, userId, 10);
      await dashboard.reload();
      await dashboard.getByTestId('wallet-balance').filter({ hasText: '10.00' }).waitFor();

      // Create an API key with a permission set and a limit; it is shown once, then listed.
      await dashboard.goto(`${env.baseUrl}/#/keys`);
      await dashboard.getByLabel('Name').fill('Laptop scripts');
      await dashboard.getByRole('checkbox', { name: /billing:read/ }).check();
      await dashboard.getByLabel('Spending limit (credits, optional)').fill('5');
      await dashboard.getByLabel('Period').selectOption('daily');
      await dashboard.getByRole('button', { name: 'Create key' }).click();
      const key = (await dashboard.getByTestId('new-key').textContent())!;
      assert.match(key, /^ak_/);
      const row = dashboard.locator('tr', { hasText: 'Laptop scripts' });
      await row.waitFor();
      // Its name with when it was last used (never yet), then its permissions and its daily limit, nothing spent.
      assert.match((await row.textContent())!, /Never used.*ai:chat.*billing:read.*5\.00 \/ daily0\.00 spent/s);
      const keyCall = await env.request('GET', '/api/wallet/balance', { token: key });
      assert.equal(keyCall.status, 200, 'the new key works');
      await screenshot(dashboard, 'api-keys');

      // Register an OAuth app for the demo page; its client id is shown.
      await dashboard.goto(`${env.baseUrl}/#/developer`);
      await dashboard.getByLabel('App name').fill('Echo Chat (mine)');
      await dashboard.getByLabel(/Redirect URIs/).fill(`${env.baseUrl}/demo/`);
      await dashboard.getByRole('button', { name: 'Register app' }).click();
      const clientId = (await dashboard.getByTestId('new-client-id').textContent())!;
      assert.match(clientId, /^app_/);
      await dashboard.locator('tr', { hasText: 'Echo Chat (mine)' }).waitFor();
      await screenshot(dashboard, 'developer-apps');

      // The demo app, as that OAuth client: sign in through the consent page with a daily limit of 2.5.
      const demo = await newPage(context);
      await demo.goto(`${env.baseUrl}/demo/?client_id=${clientId}`);
      await screenshot(demo, 'demo-signed-out');
      await signInToDemo(demo, user, '2.5');
      await demo.locator('#who', { hasText: user.email }).waitFor();

      // Two messages fit under the limit (1 credit each); the third would make 3 > 2.5.
      await say(demo, 'hello');
      await waitForReply(demo, 'hello');
      await say(demo, 'again');
      await waitForReply(demo, 'again');
      await say(demo, 'one more');
      const dialog = demo.getByRole('dialog', { name: 'Daily spending limit reached' });
      await dialog.waitFor();
      assert.equal(await part(dialog, 'limit'), '2.50 credits');
      assert.equal(await part(dialog, 'used'), '2.00 credits');
      assert.equal(await part(dialog, 'requested'), '1.00 credits');
      assert.equal(await part(dialog, 'resets'), 'resets in 3h 12m');
      await dialog.locator('[part="wallet"]').waitFor();
      assert.equal(await part(dialog, 'wallet'), '8.00 credits', 'read with the app token from /api/wallet/balance');
      assert.equal(await dialog.locator('[part="manage-link"]').getAttribute('href'), `${env.baseUrl}/#/apps`);
      assert.equal(await demo.locator('#log li.assistant').count(), 2);
      await screenshot(demo, 'restriction-dialog-spending-limit');

      // Raise the limit in the dashboard; the app's card shows its use against the limit.
      await dashboard.goto(`${env.baseUrl}/#/apps`);
      const card = dashboard.getByRole('region', { name: 'Echo Chat (mine)' });
      await card.getByTestId('limit-daily').filter({ hasText: '2.00 of 2.50 credits' }).waitFor();
      assert.match((await card.getByTestId('limit-daily').textContent())!, /Resets in 3h 12m/);
      await screenshot(dashboard, 'authorized-apps');
      await card.getByRole('button', { name: 'Change limits' }).click();
      await card.getByLabel('Daily limit (credits)').fill('10');
      await card.getByRole('button', { name: 'Save limits' }).click();
      await card.getByTestId('limit-daily').filter({ hasText: '2.00 of 10.00 credits' }).waitFor();

      // Retry from the dialog: the same message goes through now.
      await dialog.getByRole('button', { name: 'Retry' }).click();
      await waitForReply(demo, 'one more');
      assert.equal(await dialog.isVisible(), false);
      await screenshot(demo, 'demo-chat');

      // The reply shows while its stream is still open; the charge lands as the stream ends (the wallet page
      // reads the balance once, so it is opened after that).
      for (let i = 0; (await env.request('GET', '/api/wallet/balance', { token: key })).body.reserved !== 0; i++) {
        assert.ok(i < 400, 'the last call was settled');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }

      // The wallet shows the three charges and the usage page counts them by app and model.
      await dashboard.goto(`${env.baseUrl}/#/wallet`);
      await dashboard.getByTestId('wallet-balance').filter({ hasText: '7.00' }).waitFor();
      await screenshot(dashboard, 'wallet');
      await dashboard.goto(`${env.baseUrl}/#/usage`);
      await dashboard.getByTestId('usage-requests').filter({ hasText: '3' }).waitFor();
      await dashboard.getByRole('table', { name: 'App' }).getByText('Echo Chat (mine)').waitFor();
      await dashboard.getByRole('table', { name: 'Model' }).getByText('tollgate/echo').waitFor();
      await screenshot(dashboard, 'usage');
      await context.close();
    });

    test('sign in, run out of credits in the demo, see available against needed, get credits, retry and succeed', async () => {
      const context = await browser.newContext({ viewport: { width: 1100, height: 760 }, colorScheme: 'dark' });
      const user = await env.createUser({ password: 'a long enough password' });
      await grantCredits(env, user.userId, 1.5);

      // Sign in through the dashboard's form (and out again, to prove it).
      const dashboard = await newPage(context);
      await dashboard.goto(`${env.baseUrl}/`);
      await dashboard.getByLabel('Email').fill(user.email);
      await dashboard.getByLabel('Password').fill(user.password);
      await dashboard.getByRole('button', { name: 'Sign in' }).click();
      await dashboard.getByTestId('wallet-available').filter({ hasText: '1.50' }).waitFor();
      await dashboard.getByRole('button', { name: 'Sign out' }).click();
      await dashboard.getByRole('heading', { name: 'Sign in' }).waitFor();

      // The built-in demo client; signed out of the dashboard, so the OAuth sign-in page asks first.
      const demo = await newPage(context);
      await demo.goto(`${env.baseUrl}/demo/`);
      await signInToDemo(demo, user, '');
      await demo.locator('#balance', { hasText: '1.50 credits' }).waitFor();
      await say(demo, 'first');
      await waitForReply(demo, 'first');
      await say(demo, 'second');

      const dialog = demo.getByRole('dialog', { name: 'Not enough credits' });
      await dialog.waitFor();
      assert.equal(await part(dialog, 'available'), '0.50 credits');
      assert.equal(await part(dialog, 'required'), '1.00 credits');
      assert.equal(
        await dialog.getByRole('link', { name: 'Add credits' }).getAttribute('href'),
        `${env.baseUrl}/#/wallet?need=0.5`,
      );
      await screenshot(demo, 'restriction-dialog-credits');

      // Keyboard: focus starts on Retry and Tab stays inside; Escape closes and gives focus back to the input.
      const focusedPart = () =>
        demo.evaluate(
          () =>
            document.querySelector('tollgate-restriction-dialog')!.shadowRoot!.activeElement?.getAttribute('part') ??
            null,
        );
      assert.equal(await focusedPart(), 'retry');
      for (let i = 0; i < 4; i++) await demo.keyboard.press('Tab');
      assert.ok(['add-credits', 'close', 'retry'].includes((await focusedPart())!), 'focus stays in the dialog');
      await demo.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      assert.equal(await demo.evaluate(() => document.activeElement?.id), 'message');

      // Again, then credits arrive and Retry succeeds.
      await say(demo, 'second');
      await dialog.waitFor();
      await grantCredits(env, user.userId, 5);
      await dialog.getByRole('button', { name: 'Retry' }).click();
      await waitForReply(demo, 'second');
      await demo.locator('#balance', { hasText: '4.50 credits' }).waitFor();
      await context.close();
    });
  },
  { manualClock: NOW },
);
