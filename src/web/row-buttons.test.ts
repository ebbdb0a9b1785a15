import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { authorizeForTest, registerTestApp } from '../oauth/testing.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

const WIDTHS = { phone: { width: 390, height: 844 }, desktop: { width: 1280, height: 800 } } as const;

/** The names a screen reader gives the buttons of the page's content that share their name with another. */
async function sharedButtonNames(page: Page): Promise<string[]> {
  const names = await page
    .locator('#content button')
    .evaluateAll((buttons) => buttons.map((button) => button.textContent!.replace(/\s+/g, ' ').trim()));
  return [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
}

/**
 * The buttons in a table's box whose focus ring (outline and its offset) would be cut off by the box, or that show
 * none when focused: the box scrolls (overflow), so nothing of a button's ring beyond its inner edges is painted.
 */
async function clippedFocusRings(page: Page): Promise<string[]> {
  return page.locator('.table-wrap button').evaluateAll((buttons) =>
    buttons
      .filter((button) => {
        // Focused first: focusing scrolls the page, which moves both boxes.
        (button as HTMLElement).focus();
        const wrap = button.closest<HTMLElement>('.table-wrap')!;
        const outer = wrap.getBoundingClientRect();
        const inner = {
          left: outer.left + wrap.clientLeft,
          top: outer.top + wrap.clientTop,
          right: outer.left + wrap.clientLeft + wrap.clientWidth,
          bottom: outer.top + wrap.clientTop + wrap.clientHeight,
        };
        const style = getComputedStyle(button);
        const ring = parseFloat(style.outlineWidth) + parseFloat(style.outlineOffset);
        const box = button.getBoundingClientRect();
        return (
          !(ring > 0) ||
          box.left - ring < inner.left - 0.5 ||
          box.top - ring < inner.top - 0.5 ||
          box.right + ring > inner.right + 0.5 ||
          box.bottom + ring > inner.bottom + 0.5
        );
      })
      .map((button) => button.textContent!.replace(/\s+/g, ' ').trim()),
  );
}

describeEachDatabase("the rows' buttons of the dashboard's lists (Chromium)", (env) => {
  const browser = chromiumForSuite();

  /** `route` of the dashboard at `viewport`, signed in as `session`. */
  async function open(session: DashboardSession, route: string, viewport: (typeof WIDTHS)[keyof typeof WIDTHS]) {
    const context = await browser.newContext({ viewport });
    await addSessionCookie(context, env.baseUrl, session);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/#/${route}`);
    return page;
  }

  /** A user with two API keys and two authorized apps. */
  async function userWithRows() {
    const user = await env.createUser();
    for (const name of ['laptop', 'server']) {
      const created = await env.dashboard(user, 'POST', '/api/user/api-keys', { name, permissions: ['ai:chat'] });
      assert.equal(created.status, 200, created.text);
    }
    for (const name of ['Alpha App', 'Beta App']) {
      const app = await registerTestApp(env, { name, scopes: ['read', 'ai:chat'] });
      await authorizeForTest(env, { user, app, scopes: ['read', 'ai:chat'] });
    }
    return user;
  }

  for (const [width, viewport] of Object.entries(WIDTHS)) {
    test(`${width}: each key's Change limit and each app's Change limits is named with its key or app, as Revoke and Copy are`, async () => {
      const user = await userWithRows();
      const keys = await open(user, 'keys', viewport);
      await keys.getByRole('button', { name: 'Revoke key server' }).waitFor();
      for (const name of ['laptop', 'server'])
        assert.equal(await keys.getByRole('button', { name: `Change limit of key ${name}`, exact: true }).count(), 1);
      assert.deepEqual(await sharedButtonNames(keys), [], 'the keys page');
      await keys.context().close();

      const apps = await open(user, 'apps', viewport);
      await apps.getByRole('button', { name: 'Revoke Beta App' }).waitFor();
      for (const name of ['Alpha App', 'Beta App'])
        assert.equal(await apps.getByRole('button', { name: `Change limits of ${name}`, exact: true }).count(), 1);
      assert.deepEqual(await sharedButtonNames(apps), [], 'the authorized apps page');
      await apps.context().close();
    });

    test(`${width}: the focus ring of every button in a table is shown whole, not cut off at the table's edge, and nothing scrolls sideways`, async () => {
      const user = await userWithRows();
      const page = await open(user, 'keys', viewport);
      await page.getByRole('button', { name: 'Revoke key server' }).waitFor();
      assert.deepEqual(await clippedFocusRings(page), [], 'the focus rings cut off');
      const overflow = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth - window.innerWidth,
        tables: [...document.querySelectorAll('.table-wrap')]
          .map((wrap) => wrap.scrollWidth - wrap.clientWidth)
          .filter((extra) => extra > 1),
      }));
      assert.deepEqual(overflow, { page: 0, tables: [] });
      await page.context().close();
    });
  }
});
