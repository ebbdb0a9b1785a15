import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { chromiumForSuite } from './browser.ts';

/** Records every CSP violation the page reports, from before its first script runs. */
async function watchedPage(browser: Browser): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { cspViolations: string[] }).cspViolations = seen;
    document.addEventListener('securitypolicyviolation', (event) =>
      seen.push(`${event.effectiveDirective} ${event.blockedURI}`),
    );
  });
  return page;
}

const violations = (page: Page) =>
  page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations);

/** Adds an inline script to the page and says whether it ran. */
const inlineScriptRuns = (page: Page) =>
  page.evaluate(async () => {
    const script = document.createElement('script');
    script.textContent = 'window.injectedRan = true';
    document.body.append(script);
    await new Promise((resolve) => setTimeout(resolve, 50));
    return (window as unknown as { injectedRan?: boolean }).injectedRan === true;
  });

describeEachDatabase('security headers and the content security policy', (env) => {
  const browser = chromiumForSuite();

  test('every answer carries nosniff, a referrer policy and refuses framing; the dashboard and demo pages a strict CSP without inline scripts', async () => {
    for (const path of ['/api/user/me', '/healthz', '/nope', '/api/openapi.json']) {
      const response = await env.request('GET', path);
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff', path);
      assert.ok(response.headers.get('referrer-policy'), path);
      assert.match(response.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, path);
    }
    for (const path of ['/', '/demo/']) {
      const page = await env.request('GET', path);
      const csp = page.headers.get('content-security-policy') ?? '';
      assert.match(csp, /script-src 'self'(;|$)/, `${path}: scripts from this origin only, none inline`);
      assert.match(csp, /default-src 'self'/);
      assert.match(csp, /object-src 'none'/);
      assert.match(csp, /base-uri 'none'/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.doesNotMatch(page.text, /<script(?![^>]*\ssrc=)[^>]*>/, `${path} has no inline script`);
    }
    const signin = await env.request('GET', '/signin');
    assert.match(signin.headers.get('content-security-policy') ?? '', /default-src 'none'.*form-action 'self'/);
  });

  test('in Chromium the dashboard and the demo run under their CSP with no violation, and an injected inline script does not run', async () => {
    const dashboard = await watchedPage(browser);
    await dashboard.goto(`${env.baseUrl}/`);
    await dashboard.getByRole('button', { name: 'Create an account' }).click();
    await dashboard.getByLabel('Name').fill('Csp Tester');
    await dashboard.getByLabel('Email').fill(`csp-${Date.now()}@example.com`);
    await dashboard.getByLabel('Password').fill('correct horse battery');
    await dashboard.getByRole('button', { name: 'Create account' }).click();
    await dashboard.getByRole('heading', { name: 'Wallet' }).waitFor();
    await dashboard.goto(`${env.baseUrl}/#/keys`);
    await dashboard.getByRole('button', { name: 'Create key' }).waitFor();
    assert.deepEqual(await violations(dashboard), []);
    assert.equal(await inlineScriptRuns(dashboard), false);
    assert.ok(
      (await violations(dashboard)).some((v) => v.startsWith('script-src')),
      'the browser reports the blocked script',
    );

    const demo = await watchedPage(browser);
    await demo.goto(`${env.baseUrl}/demo/`);
    await demo.getByRole('button', { name: 'Sign in with Tollgate' }).click();
    const dialog = demo.getByRole('dialog', { name: 'Sign in with Tollgate' });
    await dialog.waitFor();
    // The SDK's dialog is styled (its constructed style sheet applies under the policy).
    const display = await dialog
      .getByRole('button', { name: 'Continue with Tollgate' })
      .evaluate((button) => getComputedStyle(button).cursor);
    assert.equal(display, 'pointer');
    assert.deepEqual(await violations(demo), []);
    assert.equal(await inlineScriptRuns(demo), false);
  });

  test('the API reference (/docs, Swagger UI on the dashboard origin) runs under a CSP of its own with no violation, and an injected inline script does not run', async () => {
    const answer = await env.request('GET', '/docs');
    const csp = answer.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'(;|$)/, 'scripts from this origin only, none inline');
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /object-src 'none'/);
    assert.match(csp, /base-uri 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /connect-src 'self' http:\/\/127\.0\.0\.1:\d+;/, 'Try it out calls this deployment only');
    assert.doesNotMatch(csp, /unsafe-eval|https:|validator/);
    for (const asset of ['/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js']) {
      const served = await env.request('GET', asset);
      assert.equal(served.status, 200, asset);
      assert.match(served.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, asset);
    }

    const page = await watchedPage(browser);
    await page.goto(`${env.baseUrl}/docs`);
    await page.getByText('/api/v1/chat/completions', { exact: true }).first().waitFor();
    assert.deepEqual(await violations(page), []);
    assert.equal(await inlineScriptRuns(page), false);
  });

  test('in Chromium the sign-in page works under its policy, and its form posts pass the origin check', async () => {
    const user = await env.createUser();
    const page = await watchedPage(browser);
    await page.goto(`${env.baseUrl}/signin?return_to=/%23/keys`);
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${env.baseUrl}/#/keys`);
    await page.getByRole('button', { name: 'Create key' }).waitFor();
    const me = await page.evaluate(async () => (await fetch('/api/auth/session')).status);
    assert.equal(me, 200, 'signed in');
  });
});
