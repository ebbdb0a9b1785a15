import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { ensureWebBuilt, launchChromium, startOtherOriginPage } from './browser.ts';

/** A third-party app's page, on another origin than Tollgate's (and not a registered redirect URI's). */
let appPage: Awaited<ReturnType<typeof startOtherOriginPage>>;
let appOrigin = '';
before(async () => {
  ensureWebBuilt();
  appPage = await startOtherOriginPage('third-party app');
  appOrigin = appPage.origin;
});
after(() => appPage?.close());

describeEachDatabase("the SDK's browser bundle on a third-party page", (env) => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(() => browser?.close());

  it('a page of another origin imports /sdk/tollgate-sdk.js as an ES module (README "Without a bundler") and opens the sign-in dialog', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${appOrigin}/`);
    // A module script is fetched in CORS mode, its chunks too: without Access-Control-Allow-Origin the browser
    // refuses the whole import, whatever the page's own policy.
    const outcome = await page.evaluate(async (url) => {
      try {
        const sdk = await import(url);
        sdk.defineTollgateElements();
        const dialog = document.createElement('tollgate-signin-dialog') as HTMLElement & { show(): void };
        dialog.setAttribute('app-name', 'Third Party');
        document.body.append(dialog);
        dialog.show();
        return { ok: true, open: dialog.shadowRoot!.querySelector('dialog')!.open };
      } catch (error) {
        return { ok: false, error: String(error) };
      }
    }, `${env.baseUrl}/sdk/tollgate-sdk.js`);
    assert.deepEqual(outcome, { ok: true, open: true });

    const response = await env.request('GET', '/sdk/tollgate-sdk.js', { headers: { origin: appOrigin } });
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.equal(response.headers.get('access-control-allow-credentials'), null, 'never with credentials');
  });

  it("the page reads the gateway's metadata, as the SDK does to check a sign-in response's iss (RFC 9207)", async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${appOrigin}/`);
    const metadata = await page.evaluate(async (url) => {
      try {
        const response = await fetch(url, { headers: { accept: 'application/json' } });
        return await response.json();
      } catch (error) {
        return { error: String(error) };
      }
    }, `${env.baseUrl}/.well-known/oauth-authorization-server`);
    assert.equal(metadata.issuer, env.baseUrl);
    assert.equal(metadata.authorization_response_iss_parameter_supported, true);
  });
});
