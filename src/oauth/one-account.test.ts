import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { ensureWebBuilt, launchChromium } from '../web/browser.ts';
import {
  authorizationRequest,
  exchangeCode,
  registerTestApp,
  type AuthorizationRequest,
  type TestApp,
} from './testing.ts';

/**
 * An app's callback, standing in for a real app: a real HTTP server on a loopback port that answers every
 * request with a small page, so Chromium ends each authorization on it and the test reads the code from
 * the page's URL.
 */
async function startAppServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>App</title><p>Back at the app</p>'),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return { server, origin: `http://127.0.0.1:${address.port}` };
}

async function dashboardSignIn(page: Page, env: TestEnv, user: { email: string; password: string }) {
  await page.goto(`${env.baseUrl}/`);
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

async function dashboardSignOut(page: Page, env: TestEnv) {
  await page.goto(`${env.baseUrl}/`);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
}

/** Waits until the browser is back at the app and returns that URL (with `code`, `state` and `iss`). */
async function callbackOf(page: Page, app: TestApp): Promise<URL> {
  await page.waitForURL((url) => url.href.startsWith(app.redirectUri));
  return new URL(page.url());
}

/** Exchanges the callback's code the way the app would and returns the user id its access token acts for. */
async function userOfCode(env: TestEnv, request: AuthorizationRequest, callback: URL): Promise<string> {
  const tokens = await exchangeCode(env, request, callback);
  const me = await env.request('GET', '/api/user/me', { token: tokens.access_token });
  assert.equal(me.status, 200, me.text);
  return me.body.id;
}

describeEachDatabase('one account per browser, in Chromium', (env) => {
  let browser: Browser;
  let appServer: { server: Server; origin: string };
  before(async () => {
    ensureWebBuilt();
    browser = await launchChromium();
    appServer = await startAppServer();
  });
  after(async () => {
    await browser?.close();
    appServer?.server.close();
  });

  async function newPage(context: BrowserContext): Promise<Page> {
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    return page;
  }

  it('after Alice signs out and Bob signs in on the same browser, an app sent to authorize gets a code for Bob, not Alice', async () => {
    const alice = await env.createUser({ name: 'Alice' });
    const bob = await env.createUser({ name: 'Bob' });
    const app = await registerTestApp(env, { scopes: ['read'], redirectUris: [`${appServer.origin}/callback/story`] });
    const context = await browser.newContext({ colorScheme: 'light' });
    const page = await newPage(context);
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy/i.test(message.text())) violations.push(message.text());
    });

    // Alice uses the app: signed in to the dashboard, she consents, and the app gets a code for her.
    await dashboardSignIn(page, env, alice);
    const first = await authorizationRequest(env, app, ['read']);
    await page.goto(first.url.href);
    await page.getByText(`Signed in as ${alice.email}`).waitFor();
    const accent = await page
      .getByRole('button', { name: 'Allow' })
      .evaluate((button) => getComputedStyle(button).backgroundColor);
    assert.equal(accent, 'rgb(79, 70, 229)', 'the page stylesheet applies under the policy');
    await page.getByRole('button', { name: 'Allow' }).click();
    assert.equal(await userOfCode(env, first, await callbackOf(page, app)), alice.userId);

    // The consent page rendered under its strict policy: styled by its own stylesheet, nothing blocked.
    assert.deepEqual(violations, [], 'no Content-Security-Policy violation');

    // Alice signs out; Bob signs in on the same browser.
    await dashboardSignOut(page, env);
    await dashboardSignIn(page, env, bob);

    // The app sends Bob to authorize. He is asked as Bob (Alice's grant is not his), and the code is his.
    const second = await authorizationRequest(env, app, ['read']);
    await page.goto(second.url.href);
    const allow = page.getByRole('button', { name: 'Allow' });
    await allow
      .or(page.getByRole('button', { name: 'Sign in' }))
      .first()
      .waitFor({ timeout: 5_000 })
      .catch(() => undefined);
    assert.ok(
      !page.url().startsWith(app.redirectUri),
      'Bob is asked before any code is issued, not sent back with a code at once',
    );
    await page.getByText(`Signed in as ${bob.email}`).waitFor();
    await allow.click();
    assert.equal(await userOfCode(env, second, await callbackOf(page, app)), bob.userId, 'the code is for Bob');
    await context.close();
  });

  it('signing out of the dashboard with no other sign-in makes the next authorization ask for a password', async () => {
    const alice = await env.createUser({ name: 'Alice' });
    const app = await registerTestApp(env, {
      scopes: ['read'],
      redirectUris: [`${appServer.origin}/callback/signout`],
    });
    const context = await browser.newContext();
    const page = await newPage(context);

    await dashboardSignIn(page, env, alice);
    const first = await authorizationRequest(env, app, ['read']);
    await page.goto(first.url.href);
    await page.getByRole('button', { name: 'Allow' }).click();
    await callbackOf(page, app);
    await dashboardSignOut(page, env);

    const second = await authorizationRequest(env, app, ['read']);
    await page.goto(second.url.href);
    await page
      .getByRole('button', { name: 'Allow' })
      .or(page.getByRole('button', { name: 'Sign in' }))
      .first()
      .waitFor({ timeout: 5_000 })
      .catch(() => undefined);
    assert.ok(!page.url().startsWith(app.redirectUri), 'no code without signing in again');
    await page.getByLabel('Password').waitFor();
    await context.close();
  });

  it('"Not you?" on the consent page signs the browser out and lets Bob sign in, and the code is for Bob', async () => {
    const alice = await env.createUser({ name: 'Alice' });
    const bob = await env.createUser({ name: 'Bob' });
    const app = await registerTestApp(env, { scopes: ['read'], redirectUris: [`${appServer.origin}/callback/switch`] });
    const context = await browser.newContext();
    const page = await newPage(context);

    await dashboardSignIn(page, env, alice);
    const request = await authorizationRequest(env, app, ['read']);
    await page.goto(request.url.href);
    await page.getByText(`Signed in as ${alice.email}`).waitFor();
    // The button keeps the page's paragraph spacing on both sides ("Your answer is sent to" sat flush under it).
    const around = await page.evaluate(() => {
      const box = (element: Element) => element.getBoundingClientRect();
      const button = box(document.querySelector('form.switch button')!);
      const paragraphs = [...document.querySelectorAll('main p')];
      const above = box(paragraphs.find((p) => p.textContent!.startsWith('Signed in as'))!);
      const below = box(paragraphs.find((p) => p.textContent!.startsWith('Your answer is sent to'))!);
      return { above: Math.round(button.top - above.bottom), below: Math.round(below.top - button.bottom) };
    });
    assert.ok(around.below > 0 && around.below === around.above, JSON.stringify(around));
    await page.getByRole('button', { name: 'Use another account' }).click();

    await page.getByLabel('Email').fill(bob.email);
    await page.getByLabel('Password').fill(bob.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText(`Signed in as ${bob.email}`).waitFor();
    await page.getByRole('button', { name: 'Allow' }).click();
    assert.equal(await userOfCode(env, request, await callbackOf(page, app)), bob.userId);

    // One account per browser: the dashboard is Bob's now too.
    const session = await context.request.get(`${env.baseUrl}/api/auth/session`);
    assert.equal((await session.json()).user.id, bob.userId);
    await context.close();
  });
});
