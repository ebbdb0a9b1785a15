import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { authorizeForTest, registerTestApp } from '../oauth/testing.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

/** A Friday: the week resets on Monday 4 March 2030 at 00:00 UTC, in 2 days and 14 hours. */
const NOW = '2030-03-01T10:00:00.000Z';
const WIDTHS = { desktop: { width: 1280, height: 860 }, phone: { width: 390, height: 844 } } as const;

/** How far the page and its tables stick out past the viewport (0 and none when everything fits). */
const overflowOf = (page: Page) =>
  page.evaluate(() => ({
    page: document.documentElement.scrollWidth - window.innerWidth,
    tables: [...document.querySelectorAll('.table-wrap')]
      .map((wrap) => wrap.scrollWidth - wrap.clientWidth)
      .filter((extra) => extra > 1),
  }));

describeEachDatabase(
  'weekly spending limits in the dashboard (Chromium)',
  (env) => {
    const browser = chromiumForSuite();

    /** The dashboard at `route` and `width`, signed in as `session`, its clock fixed at NOW. */
    async function dashboardPage(session: DashboardSession, route: string, width: keyof typeof WIDTHS) {
      const context = await browser.newContext({ viewport: WIDTHS[width], colorScheme: 'light', timezoneId: 'UTC' });
      await addSessionCookie(context, env.baseUrl, session);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.clock.setFixedTime(new Date(NOW));
      await page.goto(`${env.baseUrl}/#/${route}`);
      return { context, page };
    }

    test("a key's limit is made weekly from its row, and its meter shows the week's spend and the reset on Monday, on a phone and a laptop", async () => {
      const session = await env.createUser();
      await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 10, reason: 't' });
      const created = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        name: 'weekly job',
        permissions: ['ai:chat'],
        limit: 1,
        limitPeriod: 'daily',
      });
      assert.equal(created.status, 200, created.text);
      const chat = await env.request('POST', '/api/v1/chat/completions', {
        token: created.body.apiKey.key,
        body: { model: 'tollgate/echo', messages: [{ role: 'user', content: 'a few words to bill' }] },
      });
      assert.equal(chat.status, 200, chat.text);
      const spent: number = chat.body.usage.cost;

      for (const [width, limit] of [
        ['phone', '2'],
        ['desktop', '3'],
      ] as const) {
        const { context, page } = await dashboardPage(session, 'keys', width);
        const row = page.locator('tr', { hasText: 'weekly job' });
        await row.getByRole('button', { name: 'Change limit' }).click();
        const form = page.getByRole('form', { name: 'Limit of key weekly job' });
        await form.getByLabel('Spending limit (credits)').fill(limit);
        await form.getByLabel('Period').selectOption('weekly');
        await form.getByRole('button', { name: 'Save limit' }).click();
        await form.waitFor({ state: 'detached' });

        // The list reloads after the save: on the second width the first width's weekly meter is there already.
        await row
          .getByTestId('key-limit')
          .filter({ hasText: `${limit}.00 / weekly` })
          .waitFor();
        const meter = row.getByRole('meter', { name: 'Weekly spending' });
        assert.equal(Number(await meter.getAttribute('aria-valuenow')), spent, `${width}: the key's spend this week`);
        assert.equal(Number(await meter.getAttribute('aria-valuemax')), Number(limit));
        const cell = (await row.getByTestId('key-limit').textContent())!;
        assert.match(cell, new RegExp(`${limit}\\.00 / weekly`));
        assert.match(cell, /spent · resets in 2d 14h/);
        assert.deepEqual(await overflowOf(page), { page: 0, tables: [] }, `${width}: nothing sticks out`);
        await context.close();
      }
      const listed = (await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys[0];
      assert.deepEqual(
        [listed.limit, listed.limitPeriod, listed.limitUsage.resetsAt],
        [3, 'weekly', '2030-03-04T00:00:00.000Z'],
      );
    });

    test("an app's weekly limit is set beside its daily, monthly and total ones, and shown as a bar with its reset, on a phone and a laptop", async () => {
      const session = await env.createUser();
      const registered = await registerTestApp(env, { name: 'Weekly App', scopes: ['read', 'ai:chat'] });
      await authorizeForTest(env, { user: session, app: registered, scopes: ['read', 'ai:chat'] });

      for (const [width, limit] of [
        ['phone', '4'],
        ['desktop', '5.5'],
      ] as const) {
        const { context, page } = await dashboardPage(session, 'apps', width);
        const card = page.getByRole('region', { name: 'Weekly App' });
        await card.getByRole('button', { name: 'Change limits' }).click();
        const form = page.getByRole('form', { name: 'Limits of Weekly App' });
        const labels = await form.locator('label').allTextContents();
        assert.deepEqual(
          labels.map((label) => label.trim()),
          ['Daily limit (credits)', 'Weekly limit (credits)', 'Monthly limit (credits)', 'Total limit (credits)'],
        );
        await form.getByLabel('Weekly limit (credits)').fill(limit);
        await form.getByRole('button', { name: 'Save limits' }).click();
        await form.waitFor({ state: 'detached' });

        const bar = card.getByTestId('limit-weekly');
        await bar.getByText(`of ${Number(limit).toFixed(2)} credits`).waitFor();
        assert.match((await bar.textContent())!, /Resets in 2d 14h/);
        await bar.getByRole('meter', { name: 'Weekly spending' }).waitFor();
        assert.deepEqual(await overflowOf(page), { page: 0, tables: [] }, `${width}: nothing sticks out`);
        await context.close();
      }
      const apps = await env.dashboard(session, 'GET', '/api/user/authorized-apps');
      assert.deepEqual(apps.body.apps[0].limits.weekly, {
        limit: 5.5,
        spent: 0,
        reserved: 0,
        resetsAt: '2030-03-04T00:00:00.000Z',
      });
    });
  },
  { manualClock: NOW },
);
