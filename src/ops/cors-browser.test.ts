import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { fundedUser } from '../gateway/testing.ts';
import { launchChromium, startOtherOriginPage } from '../web/browser.ts';

/** A registered app's own page, on another origin than Tollgate's. */
let appPage: Awaited<ReturnType<typeof startOtherOriginPage>>;
let appOrigin = '';
before(async () => {
  appPage = await startOtherOriginPage('app');
  appOrigin = appPage.origin;
});
after(() => appPage?.close());

describeEachDatabase('CORS in a real browser', (env) => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  /** Registers an app whose redirect URI is on the app's origin, and opens a page of that origin. */
  async function pageOfRegisteredApp(name: string, redirectPath: string) {
    const app = await env.admin('POST', '/api/admin/apps', {
      name,
      redirectUris: [`${appOrigin}${redirectPath}`],
      scopes: ['read'],
      type: 'public',
    });
    assert.equal(app.status, 201, app.text);
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${appOrigin}/`);
    return page;
  }

  it("a registered app's page calls Messages and chat with the headers the official SDKs send in a browser; another origin is blocked", async () => {
    const page = await pageOfRegisteredApp('Browser app', '/callback');
    const user = await fundedUser(env, 1);
    const hello = { model: 'tollgate/echo', max_tokens: 8, messages: [{ role: 'user', content: 'hello' }] };
    // Each SDK's own headers besides the JSON body's content type: each is one the preflight must allow.
    const call = (path: string, sdkHeaders: Record<string, string>) =>
      page.evaluate(
        async ({ url, headers, body }) => {
          try {
            const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
            return { status: response.status, body: await response.json() };
          } catch (error) {
            return { status: 0, body: String(error) };
          }
        },
        { url: `${env.baseUrl}${path}`, headers: { 'content-type': 'application/json', ...sdkHeaders }, body: hello },
      );
    const messages = await call('/api/v1/messages', {
      'x-api-key': user.key,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'fine-grained-tool-streaming-2025-05-14',
      'anthropic-dangerous-direct-browser-access': 'true',
      'x-stainless-lang': 'js',
    });
    assert.equal(messages.status, 200, JSON.stringify(messages.body));
    assert.equal(messages.body.type, 'message');
    const chat = await call('/api/v1/chat/completions', {
      authorization: `Bearer ${user.key}`,
      'x-stainless-lang': 'js',
      'x-stainless-os': 'Linux',
      'x-stainless-retry-count': '0',
      'x-stainless-timeout': '600',
    });
    assert.equal(chat.status, 200, JSON.stringify(chat.body));
    assert.equal(chat.body.object, 'chat.completion');

    // The same call from an origin no app registered: the browser refuses to hand over the answer.
    const stranger = await (await browser.newContext()).newPage();
    await stranger.goto(`${env.baseUrl.replace('127.0.0.1', 'localhost')}/healthz`);
    const blocked = await stranger.evaluate(
      async ({ url, key }) => {
        try {
          await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
            body: '{}',
          });
          return 'answered';
        } catch {
          return 'blocked';
        }
      },
      { url: `${env.baseUrl}/api/v1/chat/completions`, key: user.key },
    );
    assert.equal(blocked, 'blocked');
  });

  it('a page of a registered app reads that a refusal cannot be retried (x-should-retry), as the official SDKs do', async () => {
    const page = await pageOfRegisteredApp('Browser app, refused', '/refused');
    const poor = await fundedUser(env, 0);
    const refused = await page.evaluate(
      async ({ url, key }) => {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: 'tollgate/echo', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
        });
        return {
          status: response.status,
          retry: response.headers.get('x-should-retry'),
          requestId: response.headers.get('x-request-id'),
        };
      },
      { url: `${env.baseUrl}/api/v1/chat/completions`, key: poor.key },
    );
    assert.equal(refused.status, 402);
    assert.equal(refused.retry, 'false');
    assert.ok(refused.requestId);
  });
});
