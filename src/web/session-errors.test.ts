import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { addSessionCookie, signInToDemo, chromiumForSuite } from './browser.ts';

/** A browser context holding `session`'s dashboard cookie, as a browser that signed in earlier does. */
async function withCookie(browser: Browser, baseUrl: string, session: DashboardSession): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  await addSessionCookie(context, baseUrl, session);
  return context;
}

async function open(context: BrowserContext, url: string, heading: string): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(url);
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  // The page's own reads done: one still on its way when the cookie goes would end the session first.
  await page.waitForLoadState('networkidle');
  return page;
}

describeEachDatabase('the dashboard and the demo app when a session ends or the network fails, in Chromium', (env) => {
  const browser = chromiumForSuite();

  test('once its cookie has expired, the next action shows the sign-in page saying why, and signing in goes back to the same page', async () => {
    const user = await env.createUser();
    const context = await withCookie(browser, env.baseUrl, user);
    const page = await open(context, `${env.baseUrl}/#/keys`, 'API keys');

    // The browser drops an expired cookie: the gateway then sees no session at all.
    await context.clearCookies();
    await page.getByLabel('Name').fill('after expiry');
    await page.getByRole('button', { name: 'Create key' }).click();

    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    assert.equal(
      (await page.getByTestId('session-ended').textContent())?.trim(),
      'Your session has ended. Sign in again to go on.',
    );
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    assert.equal(new URL(page.url()).hash, '#/keys');
    assert.equal(await page.getByTestId('session-ended').count(), 0);
    await context.close();
  });

  test('signed out in another tab, opening another page shows the sign-in page, not the API’s 401 sentence', async () => {
    const user = await env.createUser();
    const context = await withCookie(browser, env.baseUrl, user);
    const page = await open(context, `${env.baseUrl}/#/wallet`, 'Wallet');

    const signedOut = await env.dashboard(user, 'POST', '/api/auth/signout');
    assert.equal(signedOut.status, 200, signedOut.text);
    await page.getByRole('link', { name: 'Authorized apps' }).click();

    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    await page.getByTestId('session-ended').waitFor();
    assert.equal(await page.getByText(/bearer token, API key or session/).count(), 0);
    await context.close();
  });

  test('an action that gets no answer (offline) says Tollgate could not be reached, not the browser’s "Failed to fetch"', async () => {
    const user = await env.createUser();
    const context = await withCookie(browser, env.baseUrl, user);
    const page = await open(context, `${env.baseUrl}/#/keys`, 'API keys');

    await context.setOffline(true);
    await page.getByLabel('Name').fill('offline');
    await page.getByRole('button', { name: 'Create key' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.equal(
      (await alert.textContent())?.trim(),
      'Tollgate could not be reached. Check your connection and try again.',
    );
    // Back online, the same form works: nothing was left half done or disabled.
    await context.setOffline(false);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByTestId('new-key').waitFor();
    await context.close();
  });
  test('the demo app, revoked in the dashboard, goes back to "Sign in with Tollgate" at the next message, not a chat that can only fail', async () => {
    const user = await env.createUser();
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/demo/`);
    await signInToDemo(page, user, '');
    const [app] = (await env.dashboard(user, 'GET', '/api/user/authorized-apps')).body.apps;
    const revoked = await env.dashboard(user, 'DELETE', `/api/user/authorized-apps/${app.clientId}`);
    assert.equal(revoked.status, 200, revoked.text);

    await page.getByLabel('Message').fill('hello');
    await page.getByLabel('Message').press('Enter');
    await page.getByRole('button', { name: 'Sign in with Tollgate' }).waitFor();
    assert.equal(await page.getByRole('region', { name: 'Chat' }).isVisible(), false);
    assert.match((await page.getByRole('status').textContent())!, /sign-in has ended/);
    await context.close();
  });
});
