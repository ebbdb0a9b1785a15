import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { authorizeForTest, newTestClientKey, registerTestApp } from '../oauth/testing.ts';
import { WebhookReceiver } from '../events/testing/receiver.ts';
import { addSessionCookie, ensureWebBuilt, launchChromium } from './browser.ts';

const receiver = new WebhookReceiver();
before(() => receiver.start());
after(() => receiver.stop());

/** A phone, a small laptop window, the widths an audit found rows cut at, a laptop and a desktop. */
const WIDTHS = [390, 800, 900, 1024, 1280, 1440];

/** Each page with a list, and what shows once its rows are in. */
const PAGES = [
  { route: 'keys', rows: 'tr[data-key-id]' },
  { route: 'developer', rows: 'tbody tr' },
  { route: 'apps', rows: '.app-card' },
  { route: 'webhooks', rows: '[data-deliveries-of] tbody tr' },
  { route: 'usage', rows: 'tbody tr' },
  { route: 'wallet', rows: 'tbody tr' },
] as const;

/**
 * What sticks out on `page`: the page wider than the window, a table wider than its box, and every button or link of
 * the content (a row's Revoke, Delete, Copy, Receipt) that is not wholly inside the window and inside its table's box.
 */
function outOfView(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    const pageWidth = document.documentElement.scrollWidth;
    if (pageWidth > innerWidth) problems.push(`the page is ${pageWidth} px wide in a ${innerWidth} px window`);
    for (const wrap of document.querySelectorAll<HTMLElement>('.table-wrap')) {
      if (wrap.scrollWidth > wrap.clientWidth + 1)
        problems.push(`a table is ${wrap.scrollWidth} px wide in its ${wrap.clientWidth} px box`);
    }
    for (const control of document.querySelectorAll<HTMLElement>('main button, main a')) {
      if (control.closest('.sr-only') || control.getClientRects().length === 0) continue;
      const rect = control.getBoundingClientRect();
      const wrap = control.closest('.table-wrap')?.getBoundingClientRect();
      const left = Math.max(0, wrap?.left ?? 0);
      const right = Math.min(innerWidth, wrap?.right ?? innerWidth);
      if (rect.left < left - 0.5 || rect.right > right + 0.5)
        problems.push(
          `"${control.textContent!.trim()}" spans ${Math.round(rect.left)}–${Math.round(rect.right)} px, out of ${Math.round(left)}–${Math.round(right)}`,
        );
    }
    return problems;
  });
}

describeEachDatabase(
  'every dashboard table fits its box at every width, its rows’ actions in view (Chromium)',
  (env) => {
    let browser: Browser;
    let session: DashboardSession;

    before(async () => {
      ensureWebBuilt();
      browser = await launchChromium();
      session = await env.createUser({ name: 'Table Fit' });
      await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 25, reason: 'table fit' });
      // Keys as a busy account has them: long names, several permissions, a limit with its meter, an expiry,
      // models, and use.
      const keys = [
        {
          name: 'Nightly batch summariser for the analytics warehouse',
          permissions: ['ai:chat', 'ai:completions', 'ai:models', 'ai:embeddings', 'billing:read'],
          limit: 12.5,
          limitPeriod: 'monthly',
          expiresAt: '2031-06-30T12:00:00.000Z',
          models: ['tollgate/echo', 'anthropic/*', 'openrouter/anthropic/claude-3.5-sonnet-20241022'],
        },
        { name: 'Laptop scripts', permissions: ['ai:chat'], limit: 0.75, limitPeriod: 'daily' },
        {
          name: 'CI',
          permissions: ['ai:chat', 'ai:images', 'ai:audio'],
          limit: 1000,
          limitPeriod: 'total',
          expiresAt: '2030-12-31T23:00:00.000Z',
        },
        { name: 'unlimited', permissions: ['ai:chat', 'billing:read'], models: ['tollgate/echo'] },
      ];
      for (const body of keys) {
        const created = await env.dashboard(session, 'POST', '/api/user/api-keys', body);
        assert.equal(created.status, 200, created.text);
        const call = await env.request('POST', '/api/v1/chat/completions', {
          token: created.body.apiKey.key,
          body: { model: 'tollgate/echo', messages: [{ role: 'user', content: 'a few words to bill for this key' }] },
        });
        assert.equal(call.status, 200, call.text);
      }
      // Developer apps with long redirect URIs, one with a key pair (its row has Replace keys as well as Delete).
      const { publicJwk } = await newTestClientKey();
      for (const [index, app] of [
        { type: 'public', redirectUris: ['https://chat.example-company.com/oauth/tollgate/callback?tenant=acme'] },
        {
          type: 'confidential',
          jwks: { keys: [publicJwk] },
          redirectUris: [
            'https://internal-tools.example-enterprise.co.uk/integrations/tollgate/oauth2/redirect',
            'http://127.0.0.1:53682/callback',
          ],
        },
        { type: 'confidential', redirectUris: ['https://a.example/cb'] },
      ].entries()) {
        const registered = await env.dashboard(session, 'POST', '/api/user/apps', {
          name: index === 0 ? 'Acme customer support assistant' : `Integration ${index}`,
          scopes: ['openid', 'profile', 'email', 'read', 'ai:chat', 'billing:read'],
          ...app,
        });
        assert.equal(registered.status, 201, registered.text);
      }
      // An app the user authorized, and a webhook endpoint with deliveries.
      const other = await registerTestApp(env, { name: 'Writing helper with a rather long name', scopes: ['read'] });
      await authorizeForTest(env, { user: session, app: other, scopes: ['read'] });
      const endpoint = await env.dashboard(session, 'POST', '/api/user/webhooks', {
        url: `${receiver.url}/a/rather/long/path/of/the/receiving/endpoint/for/tollgate/events`,
        eventTypes: ['limit.reached', 'wallet.low_balance'],
      });
      assert.equal(endpoint.status, 201, endpoint.text);
      for (let i = 0; i < 2; i++) {
        const sent = await env.dashboard(session, 'POST', `/api/user/webhooks/${endpoint.body.webhook.id}/test`);
        assert.ok(sent.status < 300, sent.text);
      }
      await receiver.waitFor(2);
    });
    after(() => browser?.close());

    for (const width of WIDTHS) {
      test(`at ${width} px no table is wider than its box and every row's buttons are in view, on every page`, async () => {
        const context = await browser.newContext({
          viewport: { width, height: 900 },
          colorScheme: 'light',
          locale: 'en-US',
          timezoneId: 'UTC',
        });
        await addSessionCookie(context, env.baseUrl, session);
        const page = await context.newPage();
        page.setDefaultTimeout(15_000);
        await page.goto(`${env.baseUrl}/#/wallet`);
        // Only once the dashboard listens for a new page does going to one show it.
        await page.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
        for (const { route, rows } of PAGES) {
          await page.goto(`${env.baseUrl}/#/${route}`);
          if (route === 'webhooks') await page.getByRole('button', { name: 'Deliveries' }).click();
          await page.locator(rows).first().waitFor();
          await page.waitForLoadState('networkidle');
          assert.deepEqual(await outOfView(page), [], `${route} at ${width} px`);
          if (route === 'keys') {
            // Asked to confirm, a row's action is two buttons: both in view too.
            const row = page.locator('tr[data-key-id]').first();
            await row.getByRole('button', { name: /^Revoke/ }).click();
            await row.getByRole('button', { name: /^Confirm Revoke key/ }).waitFor();
            await page.waitForTimeout(50);
            assert.deepEqual(await outOfView(page), [], `keys at ${width} px, asking to confirm`);
            await row.getByRole('button', { name: /^Cancel/ }).click();
          }
        }
        await context.close();
      });
    }
  },
  { config: { OAUTH_LOOPBACK_ANY_PORT: true, WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true } },
);
