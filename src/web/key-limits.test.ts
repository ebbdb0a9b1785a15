import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

const NOW = '2030-03-01T10:00:00.000Z';
const WIDTHS = { desktop: { width: 1280, height: 860 }, phone: { width: 390, height: 844 } } as const;

describeEachDatabase(
  "API keys' spending limits in the dashboard (Chromium)",
  (env) => {
    const browser = chromiumForSuite();

    /** The keys page at `width`, signed in as `session`, its clock fixed at NOW. */
    async function keysPage(session: DashboardSession, width: keyof typeof WIDTHS) {
      const context = await browser.newContext({ viewport: WIDTHS[width], colorScheme: 'light', timezoneId: 'UTC' });
      await addSessionCookie(context, env.baseUrl, session);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.clock.setFixedTime(new Date(NOW));
      await page.goto(`${env.baseUrl}/#/keys`);
      return { context, page };
    }

    test("a limited key shows its period's spend against its limit as a meter, with when it resets; the list fits a laptop and a phone", async () => {
      const session = await env.createUser();
      await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 10, reason: 't' });
      const created = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        name: 'nightly job',
        permissions: ['ai:chat'],
        limit: 0.001,
        limitPeriod: 'daily',
      });
      assert.equal(created.status, 200, created.text);
      await env.dashboard(session, 'POST', '/api/user/api-keys', { name: 'unlimited', permissions: ['ai:chat'] });
      const chat = await env.request('POST', '/api/v1/chat/completions', {
        token: created.body.apiKey.key,
        body: { model: 'tollgate/echo', messages: [{ role: 'user', content: 'a few words to bill' }] },
      });
      assert.equal(chat.status, 200, chat.text);
      const spent: number = chat.body.usage.cost;

      for (const width of ['desktop', 'phone'] as const) {
        const { context, page } = await keysPage(session, width);
        const meter = page.locator('tr', { hasText: 'nightly job' }).getByRole('meter', { name: 'Daily spending' });
        await meter.waitFor();
        assert.equal(Number(await meter.getAttribute('aria-valuenow')), spent, `${width}: the key's spend today`);
        assert.equal(Number(await meter.getAttribute('aria-valuemax')), 0.001);
        const cell = page.locator('tr', { hasText: 'nightly job' }).getByTestId('key-limit');
        assert.match((await cell.textContent())!, /0\.001 \/ daily/);
        assert.match((await cell.textContent())!, /spent · resets in 14h/);
        assert.match(
          (await page.locator('tr', { hasText: 'unlimited' }).getByTestId('key-limit').textContent())!.trim(),
          /^None/,
        );
        const overflow = await page.evaluate(() => ({
          page: document.documentElement.scrollWidth - window.innerWidth,
          tables: [...document.querySelectorAll('.table-wrap')]
            .map((wrap) => wrap.scrollWidth - wrap.clientWidth)
            .filter((extra) => extra > 1),
        }));
        assert.deepEqual(overflow, { page: 0, tables: [] }, `${width}: nothing sticks out`);
        await context.close();
      }
    });

    test("a key's limit is changed in place from its row: a new amount and period, a refusal shown at the field, and removed", async () => {
      const session = await env.createUser();
      const created = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        name: 'batch runner',
        permissions: ['ai:chat'],
        limit: 1,
        limitPeriod: 'total',
      });
      assert.equal(created.status, 200, created.text);
      const limitOf = async () =>
        (await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys.find(
          (k: { id: string }) => k.id === created.body.apiKey.id,
        );

      for (const width of ['phone', 'desktop'] as const) {
        const { context, page } = await keysPage(session, width);
        const row = page.locator('tr', { hasText: 'batch runner' });
        const change = row.getByRole('button', { name: 'Change limit' });
        await change.click();
        const form = page.getByRole('form', { name: 'Limit of key batch runner' });
        const amount = form.getByLabel('Spending limit (credits)');
        assert.equal(await amount.evaluate((input) => input === document.activeElement), true, `${width}: focus`);

        await amount.fill('99999999999');
        await form.getByRole('button', { name: 'Save limit' }).click();
        await form.getByText(/limit must be a number of credits/).waitFor();
        assert.equal((await limitOf()).limit, width === 'phone' ? 1 : 2.5, `${width}: a refusal changes nothing`);

        await amount.fill(width === 'phone' ? '2.5' : '');
        if (width === 'phone') await form.getByLabel('Period').selectOption('daily');
        await form.getByRole('button', { name: 'Save limit' }).click();
        await form.waitFor({ state: 'detached' });
        assert.equal(
          await change.evaluate((button) => button === document.activeElement),
          true,
          `${width}: focus back`,
        );
        if (width === 'phone') {
          await row.getByRole('meter', { name: 'Daily spending' }).waitFor();
          assert.match((await row.getByTestId('key-limit').textContent())!, /2\.50 \/ daily/);
          const listed = await limitOf();
          assert.deepEqual([listed.limit, listed.limitPeriod], [2.5, 'daily']);
        } else {
          await row.getByTestId('key-limit').getByText('None').waitFor();
          assert.equal((await limitOf()).limit, null, 'an empty amount removes the limit');
        }
        await context.close();
      }
    });
  },
  { manualClock: NOW },
);
