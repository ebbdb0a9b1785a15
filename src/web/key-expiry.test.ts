import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

// The gateway's (manual) clock and the page's are the same instant, so "in 30 days" is exact.
const NOW = '2030-03-01T10:00:00.000Z';
const DAY_MS = 86_400_000;
/** A model id as long as OpenRouter's get, for the phone layout. */
const LONG_MODEL = 'openrouter/anthropic/claude-3.5-sonnet-20241022:beta';
const WIDTHS = { desktop: { width: 1280, height: 860 }, phone: { width: 390, height: 844 } } as const;

/** A browser context signed in as `session`, in UTC (a date input's day ends at UTC midnight), at `width`. */
async function signedIn(browser: Browser, baseUrl: string, session: DashboardSession, width: keyof typeof WIDTHS) {
  const context = await browser.newContext({ viewport: WIDTHS[width], colorScheme: 'light', timezoneId: 'UTC' });
  await addSessionCookie(context, baseUrl, session);
  return context;
}

async function keysPage(context: BrowserContext, baseUrl: string, at = NOW): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.clock.setFixedTime(new Date(at));
  await page.goto(`${baseUrl}/#/keys`);
  await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
  return page;
}

/** Form controls of the key form without an accessible name from a label (or aria-label). */
function unlabelledControls(page: Page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('form[aria-label="Create an API key"] :is(input, select, textarea)')]
      .filter((control) => {
        const labels = (control as HTMLInputElement).labels;
        const named =
          (labels && [...labels].some((label) => label.textContent!.trim() !== '')) ||
          control.getAttribute('aria-label');
        return !named;
      })
      .map((control) => control.getAttribute('name')),
  );
}

/** What sticks out sideways: the page itself, and any table wider than the box it scrolls in. */
function overflow(page: Page) {
  return page.evaluate(() => ({
    page: document.documentElement.scrollWidth - window.innerWidth,
    tables: [...document.querySelectorAll('.table-wrap')]
      .map((wrap) => wrap.scrollWidth - wrap.clientWidth)
      .filter((extra) => extra > 1),
  }));
}

describeEachDatabase(
  'API key expiry in the dashboard (Chromium)',
  (env) => {
    const browser = chromiumForSuite();

    async function listed(session: DashboardSession) {
      const response = await env.dashboard(session, 'GET', '/api/user/api-keys');
      return new Map((response.body.apiKeys as any[]).map((k) => [k.name, k]));
    }

    test('the form creates a key that never expires, one in 30 days and one through a chosen day; the list shows each', async () => {
      const session = await env.createUser();
      const context = await signedIn(browser, env.baseUrl, session, 'desktop');
      const page = await keysPage(context, env.baseUrl);
      const create = async (name: string, expires: string, day?: string) => {
        await page.getByLabel('Name').fill(name);
        await page.getByLabel('Expires').selectOption(expires);
        if (day) await page.getByLabel('Last day the key works').fill(day);
        await page.getByRole('button', { name: 'Create key' }).click();
        await page.locator('tr', { hasText: name }).waitFor();
      };
      assert.equal(await page.getByLabel('Expires').inputValue(), 'never');
      assert.equal(await page.getByLabel('Last day the key works').count(), 0, 'no date field until asked for');
      await create('forever', 'never');
      await create('contractor', '30');
      await create('demo day', 'date', '2030-03-15');
      assert.equal(await page.getByLabel('Expires').inputValue(), 'never', 'the form resets to never');

      const keys = await listed(session);
      assert.equal(keys.get('forever').expiresAt, null);
      assert.equal(keys.get('contractor').expiresAt, new Date(Date.parse(NOW) + 30 * DAY_MS).toISOString());
      // Through the chosen day: it stops at the day's end in the reader's time zone (UTC here).
      assert.equal(keys.get('demo day').expiresAt, '2030-03-16T00:00:00.000Z');

      const expiresCell = (name: string) =>
        page.locator('tr', { hasText: name }).getByTestId('key-expires').textContent();
      assert.equal((await expiresCell('forever'))!.trim(), 'Never');
      assert.match((await expiresCell('contractor'))!, /Mar 31, 2030/);
      // Listed as the day chosen, not the next day's first instant it is stored as.
      assert.equal((await expiresCell('demo day'))!.trim(), 'Mar 15, 2030');
      assert.equal(
        await page
          .locator('tr', { hasText: 'demo day' })
          .getByTestId('key-expires')
          .locator('span')
          .getAttribute('title'),
        'Stops working Mar 16, 2030, 12:00 AM',
      );
      assert.deepEqual(await overflow(page), { page: 0, tables: [] }, 'the list with its Expires column fits a laptop');
      await context.close();
    });

    test('the form creates a key limited to the models typed (commas or spaces); the list shows them, "All models" for an unlimited key, and a bad entry is said in the form', async () => {
      const session = await env.createUser();
      const context = await signedIn(browser, env.baseUrl, session, 'desktop');
      const page = await keysPage(context, env.baseUrl);
      assert.equal(await page.getByLabel('Models (optional)').getAttribute('placeholder'), 'All models');
      await page.getByLabel('Name').fill('ci job');
      await page.getByLabel('Models (optional)').fill(' acme/cheap,anthropic/*  openai/gpt-4o-mini, acme/cheap ');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('tr', { hasText: 'ci job' }).waitFor();
      assert.equal(await page.getByLabel('Models (optional)').inputValue(), '', 'the form resets');
      await page.getByLabel('Name').fill('everything');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('tr', { hasText: 'everything' }).waitFor();

      const keys = await listed(session);
      assert.deepEqual(keys.get('ci job').models, ['acme/cheap', 'anthropic/*', 'openai/gpt-4o-mini']);
      assert.equal(keys.get('everything').models, null);
      const modelsCell = (name: string) => page.locator('tr', { hasText: name }).getByTestId('key-models');
      assert.deepEqual(await modelsCell('ci job').locator('.chip').allTextContents(), [
        'acme/cheap',
        'anthropic/*',
        'openai/gpt-4o-mini',
      ]);
      assert.equal((await modelsCell('everything').textContent())!.trim(), 'All models');
      assert.deepEqual(
        await overflow(page),
        { page: 0, tables: [] },
        'the list with the models under the permissions fits a laptop',
      );

      await page.getByLabel('Name').fill('typo');
      await page.getByLabel('Models (optional)').fill('gpt-4o');
      await page.getByRole('button', { name: 'Create key' }).click();
      // Said at the field, in the form's word for it (the API's is models[0]), and the field has the focus.
      await page.getByText('Models: "gpt-4o" is not a catalogue model id').waitFor();
      const models = page.getByLabel('Models (optional)');
      assert.equal(await models.getAttribute('aria-invalid'), 'true');
      assert.equal(await models.evaluate((input) => input === document.activeElement), true);
      assert.equal(await models.inputValue(), 'gpt-4o', 'what was typed stays');
      assert.equal((await listed(session)).has('typo'), false);
      await context.close();
    });

    test('an expired key stays in the list, marked "Expired", and can still be revoked', async () => {
      const session = await env.createUser();
      const expiresAt = new Date(Date.parse(NOW) + 60_000).toISOString();
      const created = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        name: 'short-lived',
        permissions: ['ai:chat'],
        expiresAt,
      });
      assert.equal(created.status, 200, created.text);
      const context = await signedIn(browser, env.baseUrl, session, 'desktop');
      // The page's clock two minutes on: the key's expiry has passed there.
      const page = await keysPage(context, env.baseUrl, new Date(Date.parse(NOW) + 120_000).toISOString());
      const row = page.locator(`tr[data-key-id="${created.body.apiKey.id}"]`);
      await row.waitFor();
      const chip = row.getByTestId('key-expires').locator('.chip.expired');
      assert.equal((await chip.textContent())!.trim(), 'Expired');
      assert.match((await chip.getAttribute('title'))!, /^Expired Mar 1, 2030/);
      await row.getByRole('button', { name: 'Revoke' }).click();
      await row.getByRole('button', { name: 'Revoke key' }).click();
      await row.waitFor({ state: 'detached' });
      assert.equal((await listed(session)).size, 0);
      await context.close();
    });

    test('at phone width (390 px) the form and the list fit (a long model id too), every field of the form is labelled, the date field too', async () => {
      const session = await env.createUser();
      for (const [name, expiresAt] of [
        ['a key for the contractor', new Date(Date.parse(NOW) + 90 * DAY_MS).toISOString()],
        ['expired demo key', new Date(Date.parse(NOW) + 60_000).toISOString()],
      ]) {
        const response = await env.dashboard(session, 'POST', '/api/user/api-keys', {
          name,
          permissions: ['ai:chat'],
          expiresAt,
          ...(name === 'a key for the contractor' ? { models: [LONG_MODEL, 'acme/*'] } : {}),
        });
        assert.equal(response.status, 200, response.text);
      }
      const context = await signedIn(browser, env.baseUrl, session, 'phone');
      const page = await keysPage(context, env.baseUrl, new Date(Date.parse(NOW) + 120_000).toISOString());
      await page.locator('tr', { hasText: 'expired demo key' }).getByText('Expired', { exact: true }).waitFor();
      await page.getByLabel('Expires').selectOption('date');
      await page.getByLabel('Last day the key works').waitFor();
      await page.waitForLoadState('networkidle');
      assert.deepEqual(await unlabelledControls(page), []);
      assert.deepEqual(await overflow(page), { page: 0, tables: [] });
      // Stacked rows name each cell: the expiry reads "Expires" on a phone.
      assert.equal(
        await page
          .locator('tr', { hasText: 'a key for the contractor' })
          .getByTestId('key-expires')
          .getAttribute('data-label'),
        'Expires',
      );
      // A long model id breaks inside its chip rather than widen the stacked row (the overflow above).
      assert.deepEqual(
        await page
          .locator('tr', { hasText: 'a key for the contractor' })
          .getByTestId('key-models')
          .locator('.chip')
          .allTextContents(),
        [LONG_MODEL, 'acme/*'],
      );
      await context.close();
    });
  },
  { manualClock: NOW },
);
