import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { newTestClientKey, tokenEndpointErrorWithKey } from '../oauth/testing.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

// A confidential app registered from the dashboard with a pasted JWK Set authenticates with private_key_jwt.
describeEachDatabase("the dashboard's Developer apps page registers a key-pair app, in Chromium", (env) => {
  const browser = chromiumForSuite();

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
    // Said at the field, named as the form names it (the API says jwks.keys[0]).
    await page.locator('.field-error', { hasText: 'Public keys (keys[0]) holds private key material' }).waitFor();
    const keysField = page.getByLabel('Public keys (optional, confidential apps)');
    assert.equal(await keysField.getAttribute('aria-invalid'), 'true');

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

  test('"Replace keys" on a key-pair app, by keyboard on a phone, replaces its keys: the token endpoint then accepts an assertion signed with the new key and refuses one signed with the old; a refused set is said in the form', async () => {
    const user = await env.createUser();
    const [oldKey, newKey] = [await newTestClientKey(), await newTestClientKey()];
    const registered = await env.dashboard(user, 'POST', '/api/user/apps', {
      name: 'Rotating backend',
      redirectUris: ['https://rotate.example.com/callback'],
      scopes: ['read'],
      type: 'confidential',
      jwks: { keys: [oldKey.publicJwk] },
    });
    assert.equal(registered.status, 201, registered.text);
    const { clientId } = registered.body;
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    await addSessionCookie(context, env.baseUrl, user);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${env.baseUrl}/#/developer`);
    const focused = () =>
      page.evaluate(() => `${document.activeElement?.tagName} ${document.activeElement?.textContent?.trim() ?? ''}`);

    const replace = page.getByRole('row').filter({ hasText: 'Rotating backend' }).getByRole('button', {
      name: 'Replace keys',
    });
    await replace.focus();
    await page.keyboard.press('Enter');
    assert.equal(await replace.getAttribute('aria-expanded'), 'true');
    const field = page.getByLabel('New public keys for “Rotating backend”');
    assert.equal(
      await field.evaluate((element) => element === document.activeElement),
      true,
      'the field has the focus',
    );
    // Nothing sticks out sideways on a phone with the form open, page or table (as layout.test.ts measures).
    assert.deepEqual(
      await page.evaluate(() => [
        document.documentElement.scrollWidth - window.innerWidth,
        ...[...document.querySelectorAll('.table-wrap')].map((wrap) => wrap.scrollWidth - wrap.clientWidth),
      ]),
      [0, 0],
    );

    const { d } = await crypto.subtle.exportKey('jwk', newKey.privateKey);
    await page.keyboard.insertText(JSON.stringify({ keys: [{ ...newKey.publicJwk, d }] }));
    await page.getByRole('button', { name: 'Save keys' }).click();
    await page.locator('.field-error', { hasText: 'New public keys (keys[0]) holds private key material' }).waitFor();
    assert.equal(await field.getAttribute('aria-invalid'), 'true');
    await field.fill('{ "keys": [');
    await page.getByRole('button', { name: 'Save keys' }).click();
    await page.getByRole('alert').filter({ hasText: 'not valid JSON' }).waitFor();
    assert.equal(await tokenEndpointErrorWithKey(env, clientId, oldKey), 'invalid_grant', 'the old key still works');

    await field.fill(JSON.stringify({ keys: [newKey.publicJwk] }));
    await field.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Keys of “Rotating backend” replaced.' }).waitFor();
    assert.equal(await field.count(), 0, 'the form closed');
    assert.equal(await focused(), 'BUTTON Replace keys', 'the focus is back on the button');
    assert.equal(await tokenEndpointErrorWithKey(env, clientId, newKey), 'invalid_grant', 'the new key authenticates');
    assert.equal(await tokenEndpointErrorWithKey(env, clientId, oldKey), 'invalid_client', 'the old key is refused');
    await context.close();
  });
});
