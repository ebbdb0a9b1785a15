import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { authorizeForTest, registerTestApp } from '../oauth/testing.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

/** A browser context holding `session`'s dashboard cookie. */
async function withCookie(
  browser: Browser,
  baseUrl: string,
  session: DashboardSession,
  viewport = { width: 1280, height: 860 },
): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport });
  await addSessionCookie(context, baseUrl, session);
  return context;
}

/** The focused element, as a screen reader names it: its tag and text (or label). */
function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const element = document.activeElement as HTMLInputElement | null;
    if (!element || element === document.body) return 'body';
    const name = element.getAttribute('aria-label') ?? element.labels?.[0]?.textContent ?? element.textContent;
    return `${element.tagName.toLowerCase()} ${name?.trim()}`;
  });
}

describeEachDatabase('the dashboard by keyboard alone, in Chromium', (env) => {
  const browser = chromiumForSuite();

  test('Revoke asks with the focus on its question, and Cancel or Escape gives the focus back to Revoke', async () => {
    const user = await env.createUser();
    const created = await env.dashboard(user, 'POST', '/api/user/api-keys', {
      name: 'laptop',
      permissions: ['ai:chat'],
    });
    assert.equal(created.status, 200, created.text);
    const context = await withCookie(browser, env.baseUrl, user);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/#/keys`);
    const row = page.locator('tr', { hasText: 'laptop' });
    await row.waitFor();

    await row.getByRole('button', { name: 'Revoke' }).focus();
    await page.keyboard.press('Enter');
    assert.equal(await focused(page), 'button Confirm Revoke key laptop', 'the question has the focus');
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), 'button Cancel');
    await page.keyboard.press('Enter');
    assert.equal(await focused(page), 'button Revoke key laptop', 'Cancel gives the focus back');

    await page.keyboard.press('Enter');
    await page.keyboard.press('Escape');
    assert.equal(await focused(page), 'button Revoke key laptop', 'Escape cancels and gives the focus back');
    assert.equal(await row.getByRole('button', { name: 'Cancel' }).count(), 0, 'the question is gone');

    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
    await row.waitFor({ state: 'detached' });
    const keys = await env.dashboard(user, 'GET', '/api/user/api-keys');
    assert.equal(keys.body.apiKeys.length, 0, 'Enter on the question revoked the key');
    await context.close();
  });

  test("each key's Copy button is named for its key, so a screen reader tells the rows apart", async () => {
    const user = await env.createUser();
    for (const name of ['laptop', 'server']) {
      const created = await env.dashboard(user, 'POST', '/api/user/api-keys', { name, permissions: ['ai:chat'] });
      assert.equal(created.status, 200, created.text);
    }
    const context = await withCookie(browser, env.baseUrl, user);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/#/keys`);
    await page.locator('tr', { hasText: 'server' }).waitFor();
    for (const name of ['laptop', 'server']) {
      const copy = page.getByRole('button', { name: `Copy key ${name}`, exact: true });
      assert.equal(await copy.count(), 1, `one button named "Copy key ${name}"`);
      // What a sighted user sees stays Copy: the key's name is in a visually hidden part.
      const hidden = await copy.locator('.sr-only').boundingBox();
      assert.ok(hidden && hidden.width <= 1 && hidden.height <= 1, JSON.stringify(hidden));
      assert.match((await copy.textContent()) ?? '', new RegExp(`^Copy key ${name}$`));
    }
    await context.close();
  });

  test("each row's Revoke button is named for its key or app, and its visible text stays Revoke", async () => {
    const user = await env.createUser();
    for (const name of ['laptop', 'server']) {
      const created = await env.dashboard(user, 'POST', '/api/user/api-keys', { name, permissions: ['ai:chat'] });
      assert.equal(created.status, 200, created.text);
    }
    for (const name of ['Alpha App', 'Beta App']) {
      const app = await registerTestApp(env, { name, scopes: ['read', 'ai:chat'] });
      await authorizeForTest(env, { user, app, scopes: ['read', 'ai:chat'] });
    }
    const context = await withCookie(browser, env.baseUrl, user);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const named = async (name: string, visible: string) => {
      const button = page.getByRole('button', { name, exact: true });
      assert.equal(await button.count(), 1, `one button named "${name}"`);
      // The visually hidden part (1px, clipped) completes the name; the rest is what is seen.
      const seen = await button.evaluate((element) => {
        const copy = element.cloneNode(true) as HTMLElement;
        copy.querySelectorAll('.sr-only').forEach((hidden) => hidden.remove());
        return copy.textContent?.trim();
      });
      assert.equal(seen, visible, `what a sighted user reads on "${name}"`);
      return button;
    };
    await page.goto(`${env.baseUrl}/#/keys`);
    await page.locator('tr', { hasText: 'server' }).waitFor();
    for (const name of ['laptop', 'server']) await named(`Revoke key ${name}`, 'Revoke');
    await (await named('Revoke key laptop', 'Revoke')).focus();
    await page.keyboard.press('Enter');
    await named('Confirm Revoke key laptop', 'Revoke key');

    await page.goto(`${env.baseUrl}/#/apps`);
    await page.getByRole('region', { name: 'Beta App' }).waitFor();
    for (const name of ['Alpha App', 'Beta App']) await named(`Revoke ${name}`, 'Revoke');
    await (await named('Revoke Alpha App', 'Revoke')).focus();
    await page.keyboard.press('Enter');
    await named('Confirm Revoke access of Alpha App', 'Revoke access');
    await context.close();
  });

  for (const viewport of [
    { width: 390, height: 844 },
    { width: 1280, height: 860 },
  ]) {
    test(`at ${viewport.width}px, a key or app revoked by keyboard hands the focus to the next row's Revoke, else the previous, else the empty-state text`, async () => {
      const user = await env.createUser();
      for (const name of ['one', 'two', 'three']) {
        const created = await env.dashboard(user, 'POST', '/api/user/api-keys', { name, permissions: ['ai:chat'] });
        assert.equal(created.status, 200, created.text);
      }
      for (const name of ['Alpha App', 'Beta App']) {
        const app = await registerTestApp(env, { name, scopes: ['read', 'ai:chat'] });
        await authorizeForTest(env, { user, app, scopes: ['read', 'ai:chat'] });
      }
      const context = await withCookie(browser, env.baseUrl, user, viewport);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      const revoke = async (name: string) => {
        const rows = await page.locator('[data-row-action]').count();
        await page.getByRole('button', { name, exact: true }).focus();
        await page.keyboard.press('Enter');
        await page.keyboard.press('Enter');
        // The row is gone when the list has one action fewer.
        await page.waitForFunction(
          (before) => document.querySelectorAll('[data-row-action]').length === before - 1,
          rows,
        );
        await page.waitForFunction(() => document.activeElement !== document.body);
      };

      await page.goto(`${env.baseUrl}/#/keys`);
      await page.locator('tr', { hasText: 'three' }).waitFor();
      const order = await page.locator('tbody tr td[data-label="Name"] strong').allInnerTexts();
      assert.equal(order.length, 3);
      await revoke(`Revoke key ${order[1]}`);
      assert.equal(await focused(page), `button Revoke key ${order[2]}`, 'the next row');
      await revoke(`Revoke key ${order[2]}`);
      assert.equal(await focused(page), `button Revoke key ${order[0]}`, 'the previous row');
      await revoke(`Revoke key ${order[0]}`);
      assert.equal(await focused(page), 'div No keys yet. Create one above.', 'the empty-state text');

      await page.goto(`${env.baseUrl}/#/apps`);
      await page.getByRole('region', { name: 'Beta App' }).waitFor();
      await revoke('Revoke Alpha App');
      assert.equal(await focused(page), 'button Revoke Beta App');
      await revoke('Revoke Beta App');
      assert.match(await focused(page), /^div No app is authorized\./);
      await context.close();
    });
  }

  test('Change limits puts the focus in the first field; Escape, Cancel and Save give it back, and Save sends once', async () => {
    const user = await env.createUser();
    const app = await registerTestApp(env, { name: 'Keyboard App', scopes: ['read', 'ai:chat'] });
    await authorizeForTest(env, { user, app, scopes: ['read', 'ai:chat'] });
    const context = await withCookie(browser, env.baseUrl, user);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const patches: string[] = [];
    page.on('request', (request) => void (request.method() === 'PATCH' && patches.push(request.url())));
    await page.goto(`${env.baseUrl}/#/apps`);
    const card = page.getByRole('region', { name: 'Keyboard App' });
    const change = card.getByRole('button', { name: 'Change limits' });

    await change.focus();
    await page.keyboard.press('Enter');
    assert.equal(await focused(page), 'input Daily limit (credits)');
    await page.keyboard.press('Escape');
    assert.equal(await card.getByRole('form').count(), 0, 'Escape closed the form');
    assert.equal(await focused(page), 'button Change limits');

    await page.keyboard.press('Enter');
    await card.getByRole('button', { name: 'Cancel' }).focus();
    await page.keyboard.press('Enter');
    assert.equal(await focused(page), 'button Change limits', 'Cancel gives the focus back');

    await page.keyboard.press('Enter');
    await page.keyboard.type('3');
    // Two presses before the first answer: one PATCH.
    await card.getByRole('button', { name: 'Save limits' }).dblclick();
    await card.getByTestId('limit-daily').waitFor();
    assert.equal(await card.getByRole('form').count(), 0);
    assert.equal(await focused(page), 'button Change limits', 'Save gives the focus back');
    assert.equal(patches.length, 1, `one PATCH, not ${patches.length}`);
    const apps = await env.dashboard(user, 'GET', '/api/user/authorized-apps');
    assert.equal(apps.body.apps[0].limits.daily.limit, 3);
    await context.close();
  });
  test('at the cap of 20 apps, whose refusal says "delete one first", Developer apps deletes one (by keyboard) and the next registers', async () => {
    const user = await env.createUser();
    for (let i = 1; i <= 20; i++) {
      const registered = await env.dashboard(user, 'POST', '/api/user/apps', {
        name: `App ${i}`,
        redirectUris: [`https://app${i}.example.com/callback`],
        scopes: ['read'],
        type: 'public',
      });
      assert.equal(registered.status, 201, registered.text);
    }
    const context = await withCookie(browser, env.baseUrl, user);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/#/developer`);
    const register = async () => {
      await page.getByLabel('App name').fill('App 21');
      await page.getByLabel(/Redirect URIs/).fill('https://app21.example.com/callback');
      await page.getByRole('button', { name: 'Register app' }).click();
    };
    await register();
    await page.getByRole('alert').filter({ hasText: 'delete one first' }).waitFor();

    const row = page.locator('tr', { hasText: 'App 7' }).filter({ hasText: 'app7.example.com' });
    await row.getByRole('button', { name: 'Delete' }).focus();
    await page.keyboard.press('Enter');
    assert.equal(await focused(page), 'button Confirm Delete app App 7');
    await page.keyboard.press('Enter');
    await row.waitFor({ state: 'detached' });
    const apps = await env.dashboard(user, 'GET', '/api/user/apps');
    assert.equal(apps.body.apps.length, 19);
    assert.ok(!apps.body.apps.some((app: { name: string }) => app.name === 'App 7'));

    await register();
    await page.getByTestId('new-client-id').waitFor();
    await context.close();
  });
  test('a page chosen in the menu by keyboard takes the focus: the next Tab is in that page, not further down the menu', async () => {
    const user = await env.createUser();
    const context = await withCookie(browser, env.baseUrl, user);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/#/wallet`);
    await page.getByRole('heading', { name: 'Wallet', level: 1 }).waitFor();
    // Every part of the page is in a landmark: the menu, the top bar with the account, the page.
    assert.match((await page.getByRole('banner').textContent())!, new RegExp(`${user.email}.*Sign out`));
    assert.equal(await page.getByRole('main').count(), 1);

    await page.getByRole('link', { name: 'API keys' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), 'input Name');

    // The sign-in page has its main landmark too.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('main').getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    await context.close();
  });
  test('Load more pressed by keyboard keeps the focus on Load more while there is more, so Enter goes on paging', async () => {
    const user = await env.createUser();
    // 45 movements: three pages of 20.
    for (let i = 0; i < 45; i++) {
      const grant = await env.admin('POST', `/api/admin/users/${user.userId}/credits`, { amount: 1, reason: `${i}` });
      assert.equal(grant.status, 200, grant.text);
    }
    const context = await withCookie(browser, env.baseUrl, user);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/#/wallet`);
    const rows = page.getByRole('region', { name: 'Transactions' }).locator('tbody tr');
    await rows.nth(19).waitFor();

    await page.getByRole('button', { name: 'Load more' }).focus();
    await page.keyboard.press('Enter');
    await rows.nth(39).waitFor();
    await page.waitForLoadState('networkidle');
    // The button was disabled while the page loaded, which drops the focus to the page's start.
    assert.equal(await focused(page), 'button Load more');
    await page.keyboard.press('Enter');
    await rows.nth(44).waitFor();
    assert.equal(await rows.count(), 45);
    await context.close();
  });
  test('a page chosen in the menu at phone width opens at its top, its title not under the sticky top bar', async () => {
    const user = await env.createUser();
    const context = await withCookie(browser, env.baseUrl, user, { width: 390, height: 844 });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/#/wallet`);
    await page.getByRole('heading', { name: 'Wallet', level: 1 }).waitFor();
    await page.waitForLoadState('networkidle');
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    const { title, bar, focus } = await page.evaluate(() => ({
      title: document.querySelector('h1')!.getBoundingClientRect().top,
      bar: document.querySelector('.topbar')!.getBoundingClientRect().bottom,
      focus: document.activeElement?.id,
    }));
    assert.ok(title >= bar, `the title's top ${title} is under the top bar (bottom ${bar})`);
    assert.equal(focus, 'content', 'the page has the focus');
    await context.close();
  });
});
