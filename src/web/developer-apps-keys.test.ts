import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { addSessionCookie, ensureWebBuilt, launchChromium } from './browser.ts';

// A confidential app registered from the dashboard with a pasted JWK Set authenticates with private_key_jwt.
describeEachDatabase("the dashboard's Developer apps page registers a key-pair app, in Chromium", (env) => {
  let browser: Browser;
  before(async () => {
    ensureWebBuilt();
    browser = await launchChromium();
  });
  after(() => browser?.close());

  async function register(page: Page, name: string, jwks: string) {
    await page.getByLabel('App name').fill(name);
    await page.getByLabel(/Redirect URIs/).fill('https://keys.example.com/callback');
    await page.getByLabel(/^Confidential/).check();
    await page.getByLabel('Public keys (optional, confidential apps)').fill(jwks);
    await page.getByRole('button', { name: 'Register app' }).click();
  }

  test('pasting a public JWK Set registers an app with no secret, marked key pair; a private key is refused with the reason', async () => {
    const user = await env.createUser();
    const context = await browser.newContext();
    await addSessionCookie(context, env.baseUrl, user);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/#/developer`);

    const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
    const { kty, crv, x, y, d } = await crypto.subtle.exportKey('jwk', pair.privateKey);

    await register(page, 'Leaky keys', JSON.stringify({ keys: [{ kty, crv, x, y, d }] }));
    await page.getByRole('alert').filter({ hasText: 'private key material' }).waitFor();

    await page.getByLabel('Public keys (optional, confidential apps)').fill('');
    await register(page, 'Backend with keys', JSON.stringify({ keys: [{ kty, crv, x, y, kid: 'key-1' }] }));
    await page.getByTestId('new-client-id').waitFor();
    assert.equal(await page.getByTestId('new-client-secret').count(), 0, 'no secret is shown');
    const row = page.getByRole('row').filter({ hasText: 'Backend with keys' });
    await row.getByText('(key pair)').waitFor();

    const listed = (await env.dashboard(user, 'GET', '/api/user/apps')).body.apps;
    assert.deepEqual(
      listed.map((app: { name: string; tokenEndpointAuthMethod: string }) => [app.name, app.tokenEndpointAuthMethod]),
      [['Backend with keys', 'private_key_jwt']],
    );
    await context.close();
  });
});
