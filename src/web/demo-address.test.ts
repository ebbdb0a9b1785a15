import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { signInToDemo, chromiumForSuite } from './browser.ts';

describeEachDatabase('the demo app opened at another name of the gateway, in Chromium', (env) => {
  const browser = chromiumForSuite();

  test('opened at localhost where PUBLIC_BASE_URL says 127.0.0.1, the demo moves to its own address and signing in works', async () => {
    // The demo's sign-in comes back to PUBLIC_BASE_URL's /demo/ (its registered redirect URI), whose page has
    // not the sign-in state a page at localhost kept: that ended in 'state_mismatch'.
    const user = await env.createUser();
    const other = new URL('/demo/', env.baseUrl);
    other.hostname = 'localhost';
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(other.href);
    await signInToDemo(page, user, '').catch(async (error: Error) => {
      throw new Error(`${error.message}\nthe page says: ${await page.locator('#status').textContent()}`);
    });
    await page.locator('#who', { hasText: user.email }).waitFor();
    assert.equal(new URL(page.url()).origin, env.baseUrl);
    await context.close();
  });
});
