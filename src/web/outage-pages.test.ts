import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type { Browser, Page } from 'playwright-core';
import { describeEachDatabase, selectedDatabases, TEST_POSTGRES_URL, TestEnv } from '../testing/harness.ts';
import { startTcpRelay, type Relay } from '../testing/redis-relay.ts';
import { fillDisk, freeDisk } from '../testing/disk-full.ts';
import { authorizationRequest, follow, registerTestApp, TestBrowser } from '../oauth/testing.ts';
import { FORM_PAGE_CSP } from '../accounts/form-pages.ts';
import { STRICT_PAGE_CSP } from '../platform/http/page.ts';
import { ensureWebBuilt, launchChromium, chromiumForSuite, freshPage } from './browser.ts';

/** What a person reads on the page: its one heading and its alert. */
async function shown(page: Page): Promise<{ heading: string; alert: string; text: string }> {
  return {
    heading: (await page.getByRole('heading', { level: 1 }).textContent())!.trim(),
    alert: (await page.getByRole('alert').textContent())!.trim(),
    text: await page.locator('main').innerText(),
  };
}

// The service's JSON log lines, to check what the operator reads during the outage.
const logLines: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk) => logLines.push(...String(chunk).split('\n').filter(Boolean)));

describeEachDatabase(
  'the pages a person opens in a browser, when Tollgate cannot serve them',
  (env) => {
    const browser = chromiumForSuite();

    const newPage = () => freshPage(browser);

    test('with the database’s disk full, signing in on /signin shows a page saying so and when to try again, 503 with Retry-After, not JSON; it signs in once space is freed', async () => {
      const user = await env.createUser();
      const page = await newPage();
      await fillDisk(env);
      try {
        const opened = await page.goto(`${env.baseUrl}/signin`);
        assert.equal(opened!.status(), 200, 'the sign-in page itself needs no write');
        await page.getByLabel('Email').fill(user.email);
        await page.getByLabel('Password').fill(user.password);
        const [answer] = await Promise.all([
          page.waitForResponse((r) => new URL(r.url()).pathname === '/signin' && r.request().method() === 'POST'),
          page.getByRole('button', { name: 'Sign in' }).click(),
        ]);
        await page.waitForLoadState();
        assert.equal(answer.status(), 503);
        assert.equal(answer.headers()['retry-after'], '30');
        assert.match(answer.headers()['content-type']!, /^text\/html/);
        assert.equal(answer.headers()['content-security-policy'], FORM_PAGE_CSP);
        const { heading, alert, text } = await shown(page);
        assert.equal(heading, 'Tollgate is unavailable for a moment');
        assert.match(alert, /disk is full/);
        assert.match(text, /Try again in 30 seconds\./);
        assert.doesNotMatch(text, /"error"|SERVICE_UNAVAILABLE/);
        assert.equal(await page.locator('script').count(), 0);
      } finally {
        await freeDisk(env);
      }
      await page.goto(`${env.baseUrl}/signin`);
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${env.baseUrl}/`);
      await page.context().close();
    });

    test('with the database’s disk full, the JSON twin /api/auth/signin still answers the JSON 503 SERVICE_UNAVAILABLE, whatever Accept says', async () => {
      const user = await env.createUser();
      await fillDisk(env);
      try {
        for (const accept of ['application/json', 'text/html,application/xhtml+xml,*/*;q=0.8']) {
          const refused = await env.request('POST', '/api/auth/signin', {
            body: { email: user.email, password: user.password },
            headers: { accept },
          });
          assert.equal(refused.status, 503, refused.text);
          assert.match(refused.headers.get('content-type')!, /^application\/json/);
          assert.equal(refused.headers.get('retry-after'), '30');
          assert.equal(refused.body.error.code, 'SERVICE_UNAVAILABLE');
          assert.match(refused.body.error.message, /disk is full/);
        }
      } finally {
        await freeDisk(env);
      }
    });

    test('an authorization request that meets the full disk shows the 503 page with Retry-After, never oidc-provider’s "oops" page nor a redirect to the app; its Try again link finishes it once space is freed', async () => {
      const app = await registerTestApp(env, { scopes: ['read'] });
      const { url } = await authorizationRequest(env, app, ['read']);
      const page = await newPage();
      const toApp: string[] = [];
      page.on('request', (request) => {
        if (request.url().startsWith(app.redirectUri)) toApp.push(request.url());
      });
      await fillDisk(env);
      const logged = logLines.length;
      try {
        const answer = (await page.goto(url.toString()))!;
        assert.equal(answer.status(), 503);
        assert.equal(answer.headers()['retry-after'], '30');
        assert.equal(answer.headers()['content-security-policy'], STRICT_PAGE_CSP);
        const { heading, alert, text } = await shown(page);
        assert.equal(heading, 'Tollgate is unavailable for a moment');
        assert.match(alert, /disk is full/);
        assert.match(text, /Try again in 30 seconds\./);
        assert.doesNotMatch(text, /oops/);
        assert.equal(new URL(page.url()).origin, new URL(env.baseUrl).origin);
        // Besides the database's own line when it fills up, the operator reads one warning naming the route, as
        // for every other route on a full disk: no "oauth server error" with a stack, which reads as a bug.
        const entries = logLines.slice(logged).map((line) => JSON.parse(line));
        assert.deepEqual(
          entries
            .filter((entry) => entry.level >= 40 && !entry.msg.startsWith('the database disk is full:'))
            .map((entry) => [entry.level, entry.msg, entry.route]),
          [[40, 'request refused (503): the database disk is full', '/api/oauth/authorize']],
        );
        assert.ok(!logLines.slice(logged).some((line) => line.includes('"stack"')), 'no stack in the log');
      } finally {
        await freeDisk(env);
      }
      await page.getByRole('link', { name: 'Try again' }).click();
      await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
      assert.match(await page.locator('main').innerText(), /to continue to Test App/);
      assert.deepEqual(toApp, [], 'nothing was sent to the app');
      await page.context().close();
    });

    test('signing in on an authorization’s own sign-in page while the disk is full is the 503 page, not JSON', async () => {
      const user = await env.createUser();
      const app = await registerTestApp(env, { scopes: ['read'] });
      const request = await authorizationRequest(env, app, ['read']);
      const visitor = new TestBrowser();
      const login = await follow(env, visitor, await visitor.fetch(request.url), request.url);
      assert.equal(login.kind, 'page');
      const action = /<form method="post" action="([^"]+)"/.exec(login.kind === 'page' ? login.html : '')![1]!;
      await fillDisk(env);
      try {
        const answer = await visitor.submit(new URL(action, env.baseUrl), {
          email: user.email,
          password: user.password,
        });
        assert.equal(answer.status, 503);
        assert.equal(answer.headers.get('retry-after'), '30');
        assert.match(answer.headers.get('content-type')!, /^text\/html/);
        const html = await answer.text();
        assert.match(html, /<h1>Tollgate is unavailable for a moment<\/h1>/);
        assert.match(html, /disk is full/);
        assert.match(html, /Try again in 30 seconds\./);
      } finally {
        await freeDisk(env);
      }
    });

    test('the other errors of the page routes are pages too (a path beside them, a malformed uid), and the API keeps its JSON whatever Accept says', async () => {
      const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
      for (const [path, status, heading] of [
        ['/signin/', 404, 'Page not found'],
        ['/api/oauth/interaction/abc/nothing-here', 404, 'Page not found'],
        ['/api/oauth/interaction/not%20a%20uid', 400, 'This request could not be completed'],
      ] as const) {
        const answer = await env.request('GET', path, { headers: html });
        assert.equal(answer.status, status, `${path}: ${answer.text}`);
        assert.match(answer.headers.get('content-type')!, /^text\/html/, path);
        assert.equal(answer.headers.get('content-security-policy'), STRICT_PAGE_CSP, path);
        assert.match(answer.text, new RegExp(`<h1>${heading}</h1>`), path);
      }
      for (const path of ['/api/v1/nothing-here', '/api/user/me', '/api/auth/session', '/api/oauth/nothing-here']) {
        const answer = await env.request('GET', path, { headers: html });
        assert.ok(answer.status >= 400, path);
        assert.match(answer.headers.get('content-type')!, /^application\/json/, path);
      }
    });
  },
  { logDestination: logStream },
);

// PostgreSQL gone altogether (the server's connections go through a relay the test cuts, as
// ops/database-outage.test.ts does): not even the app's registration can be read, so its redirect_uri cannot
// be checked, and the page is the only safe answer.
if (selectedDatabases().includes('postgres')) {
  const relay: Relay = await startTcpRelay(Number(new URL(TEST_POSTGRES_URL).port || 5432));
  const relayed = new URL(TEST_POSTGRES_URL);
  relayed.port = String(relay.port);

  describe('the pages while PostgreSQL is unreachable [postgres]', () => {
    const env = new TestEnv('postgres', { config: { DATABASE_URL: relayed.toString() } });
    let browser: Browser;
    before(async () => {
      ensureWebBuilt();
      await env.start();
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await env.stop();
    });

    test('signing in on /signin and opening an authorization request show the 503 page saying the database is not reachable, with Retry-After; the JSON sign-in keeps its JSON', async () => {
      const user = await env.createUser();
      const app = await registerTestApp(env, { scopes: ['read'] });
      const { url } = await authorizationRequest(env, app, ['read']);
      const page = await (await browser.newContext()).newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${env.baseUrl}/signin`);
      relay.cut();
      try {
        await page.getByLabel('Email').fill(user.email);
        await page.getByLabel('Password').fill(user.password);
        const [signIn] = await Promise.all([
          page.waitForResponse((r) => new URL(r.url()).pathname === '/signin' && r.request().method() === 'POST'),
          page.getByRole('button', { name: 'Sign in' }).click(),
        ]);
        await page.waitForLoadState();
        assert.equal(signIn.status(), 503);
        assert.ok(signIn.headers()['retry-after']);
        let seen = await shown(page);
        assert.equal(seen.heading, 'Tollgate is unavailable for a moment');
        assert.match(seen.alert, /database is not reachable/);
        assert.match(seen.text, /Try again in \d+ seconds?\./);

        const authorize = (await page.goto(url.toString()))!;
        assert.equal(authorize.status(), 503);
        assert.ok(authorize.headers()['retry-after']);
        seen = await shown(page);
        assert.equal(seen.heading, 'Tollgate is unavailable for a moment');
        assert.match(seen.alert, /database is not reachable/);
        assert.equal(new URL(page.url()).origin, new URL(env.baseUrl).origin);

        const json = await env.request('POST', '/api/auth/signin', {
          body: { email: user.email, password: user.password },
        });
        assert.equal(json.status, 503, json.text);
        assert.equal(json.body.error.code, 'SERVICE_UNAVAILABLE');
      } finally {
        relay.restore();
      }
      await page.context().close();
    });
  });
}
