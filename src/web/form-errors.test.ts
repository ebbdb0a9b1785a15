import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { authorizeForTest, registerTestApp } from '../oauth/testing.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

const WIDTHS = [390, 1280];

/** What a screen reader hears of the focused field: its name, whether it is invalid, and its description. */
function focusedField(page: Page): Promise<{ name: string; invalid: string | null; description: string }> {
  return page.evaluate(() => {
    const element = document.activeElement as HTMLInputElement;
    const text = (ids: string | null) =>
      (ids ?? '')
        .split(' ')
        .filter(Boolean)
        .map((id) => document.getElementById(id)?.textContent?.trim() ?? '')
        .join(' ');
    return {
      name: element.name,
      invalid: element.getAttribute('aria-invalid'),
      description: text(element.getAttribute('aria-describedby')),
    };
  });
}

/** The dashboard page `route` signed in as `user`, in a new context `width` pixels wide. */
async function openDashboard(
  browser: Browser,
  baseUrl: string,
  user: DashboardSession,
  route: string,
  width: number,
): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 860 } });
  await addSessionCookie(context, baseUrl, user);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${baseUrl}/#/${route}`);
  return page;
}

describeEachDatabase("the dashboard's forms and removals, in Chromium", (env) => {
  const browser = chromiumForSuite();

  const open = (user: DashboardSession, route: string, width: number) =>
    openDashboard(browser, env.baseUrl, user, route, width);

  /** Asserts a refusal told at the field `name`, in the form's words, with the focus there and the input kept. */
  async function assertRefusedAt(page: Page, name: string, words: RegExp, kept: string, apiWords: RegExp) {
    await page.locator(`[name="${name}"][aria-invalid="true"]`).first().waitFor();
    const field = await focusedField(page);
    assert.equal(field.name, name, 'the refused field has the focus');
    assert.equal(field.invalid, 'true');
    assert.match(field.description, words, "the field's description says what is wrong in the form's words");
    assert.doesNotMatch(field.description, apiWords, "and not in the API's");
    assert.equal(await page.locator(`[name="${name}"]`).first().inputValue(), kept, 'what the user typed is kept');
    assert.equal(await page.locator('.error-note').count(), 0, 'no sentence about fields the form does not have');
  }

  for (const width of WIDTHS) {
    test(`a key's spending limit refused is told at "Spending limit", in the form's words (${width} px)`, async () => {
      const user = await env.createUser();
      const page = await open(user, 'keys', width);
      const form = page.getByRole('form', { name: 'Create an API key' });
      await form.getByLabel('Name').fill('laptop');
      await form.getByLabel('Spending limit (credits, optional)').fill('99999999999');
      await form.getByRole('button', { name: 'Create key' }).click();
      await assertRefusedAt(page, 'limit', /^Spending limit must be a number of credits/, '99999999999', /^limit /);
      assert.equal(await form.getByLabel('Name').inputValue(), 'laptop');
      await page.context().close();
    });

    test(`an app's monthly limit refused is told at "Monthly", not as limits.monthly (${width} px)`, async () => {
      const user = await env.createUser();
      const app = await registerTestApp(env, { name: 'Acme', scopes: ['read', 'ai:chat'] });
      await authorizeForTest(env, { user, app, scopes: ['read', 'ai:chat'] });
      const page = await open(user, 'apps', width);
      await page.getByRole('button', { name: 'Change limits' }).click();
      await page.locator('input[name="monthly"]').fill('99999999999');
      await page.getByRole('button', { name: 'Save' }).click();
      await assertRefusedAt(page, 'monthly', /^Monthly limit must be a number of credits/, '99999999999', /limits\./);
      await page.context().close();
    });

    test(`a limit the API's schema refuses (its param dotted, its sentence the validator's path) is told at its field in the form's words (${width} px)`, async () => {
      const user = await env.createUser();
      const app = await registerTestApp(env, { name: 'Acme', scopes: ['read', 'ai:chat'] });
      await authorizeForTest(env, { user, app, scopes: ['read', 'ai:chat'] });
      const page = await open(user, 'apps', width);
      await page.getByRole('button', { name: 'Change limits' }).click();
      // What the input's own min stops in a browser, a script or an older page can still send.
      await page.locator('input[name="monthly"]').evaluate((input) => input.removeAttribute('min'));
      await page.locator('input[name="monthly"]').fill('-1');
      await page.getByRole('button', { name: 'Save' }).click();
      await assertRefusedAt(page, 'monthly', /^Monthly limit must be 0 or more\./, '-1', /limits/);
      await page.context().close();
    });

    test(`a webhook URL without https and a threshold too large are told at their fields (${width} px)`, async () => {
      const user = await env.createUser();
      const page = await open(user, 'webhooks', width);
      const endpoint = page.getByRole('form', { name: 'Add a webhook endpoint' });
      await endpoint.getByLabel('Endpoint URL').fill('http://example.com/hook');
      await endpoint.getByRole('button', { name: 'Add endpoint' }).click();
      await assertRefusedAt(page, 'url', /must use https/, 'http://example.com/hook', /^url /);

      const alert = page.getByRole('form', { name: 'Low-balance alert' });
      await alert.locator('input[name="threshold"]').fill('99999999999');
      await alert.getByRole('button', { name: 'Save threshold' }).click();
      await assertRefusedAt(page, 'threshold', /^The alert threshold must be a number/, '99999999999', /^threshold /);
      await page.context().close();
    });

    test(`a redirect URI without https is told at "Redirect URIs" (${width} px)`, async () => {
      const user = await env.createUser();
      const page = await open(user, 'developer', width);
      const form = page.getByRole('form', { name: 'Register an app' });
      await form.getByLabel('App name').fill('Acme');
      await form.locator('textarea[name="redirectUris"]').fill('http://acme.example/callback');
      await form.getByRole('button', { name: 'Register app' }).click();
      await assertRefusedAt(page, 'redirectUris', /must use https/, 'http://acme.example/callback', /^$/);
      await page.context().close();
    });

    test(`Revoke's question has a name of its own, and the revoke is announced (${width} px)`, async () => {
      const user = await env.createUser();
      for (const name of ['laptop', 'server']) {
        const created = await env.dashboard(user, 'POST', '/api/user/api-keys', { name, permissions: ['ai:chat'] });
        assert.equal(created.status, 200, created.text);
      }
      const page = await open(user, 'keys', width);
      const row = page.locator('tr', { hasText: 'laptop' });
      await row.getByRole('button', { name: 'Revoke key laptop', exact: true }).click();
      const question = row.getByRole('button', { name: 'Confirm Revoke key laptop', exact: true });
      assert.equal(await question.count(), 1, 'the question is named "Confirm …"');
      assert.equal(await row.getByRole('button', { name: 'Revoke key laptop', exact: true }).count(), 0);
      await question.click();
      await row.waitFor({ state: 'detached' });
      const status = page.getByRole('status').filter({ hasText: 'Key laptop revoked.' });
      await status.waitFor({ state: 'attached' });
      assert.equal(await status.getAttribute('aria-live'), 'polite');
      const focused = await page.evaluate(() => document.activeElement?.textContent?.trim());
      assert.equal(focused, 'Revoke key server', "the focus is on the next row's action");
      await page.context().close();
    });
  }
});

describeEachDatabase(
  "the dashboard's removals, announced, in Chromium",
  (env) => {
    const browser = chromiumForSuite();
    const open = (user: DashboardSession, route: string, width: number) =>
      openDashboard(browser, env.baseUrl, user, route, width);

    test('deleting an app, an endpoint and revoking an authorized app are announced', async () => {
      const user = await env.createUser();
      const app = await registerTestApp(env, { name: 'Acme', scopes: ['read', 'ai:chat'] });
      await authorizeForTest(env, { user, app, scopes: ['read', 'ai:chat'] });
      const hook = await env.dashboard(user, 'POST', '/api/user/webhooks', {
        url: 'http://127.0.0.1:9/hook',
        eventTypes: ['wallet.low_balance'],
      });
      assert.equal(hook.status, 201, hook.text);
      const own = await env.dashboard(user, 'POST', '/api/user/apps', {
        name: 'Mine',
        redirectUris: ['https://mine.example/callback'],
        type: 'public',
        scopes: ['ai:chat'],
      });
      assert.ok(own.status < 300, own.text);

      const cases: Array<[string, string, string, string]> = [
        ['apps', 'Revoke Acme', 'Confirm Revoke access of Acme', 'Access of Acme revoked.'],
        ['developer', 'Delete app Mine', 'Confirm Delete app Mine', 'App Mine deleted.'],
        [
          'webhooks',
          'Delete endpoint http://127.0.0.1:9/hook',
          'Confirm Delete endpoint http://127.0.0.1:9/hook',
          'Endpoint http://127.0.0.1:9/hook deleted.',
        ],
      ];
      for (const [route, ask, confirm, said] of cases) {
        const page = await open(user, route, 1280);
        await page.getByRole('button', { name: ask, exact: true }).click();
        await page.getByRole('button', { name: confirm, exact: true }).click();
        await page.getByRole('status').filter({ hasText: said }).waitFor({ state: 'attached' });
        await page.context().close();
      }
    });
  },
  // The endpoint deleted is a local one: the refusal of http:// is the other describe's.
  { config: { WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true } },
);
