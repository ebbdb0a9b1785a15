import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

// The Developer apps form says how redirect URIs are matched, as this server's OAUTH_LOOPBACK_ANY_PORT has it.
for (const loopbackAnyPort of [false, true]) {
  describeEachDatabase(
    `the dashboard's Developer apps page with OAUTH_LOOPBACK_ANY_PORT=${loopbackAnyPort}, in Chromium`,
    (env) => {
      const browser = chromiumForSuite();

      test(`the Redirect URIs field says they match ${loopbackAnyPort ? 'exactly but for the port of an http loopback one' : 'exactly, port included'}`, async () => {
        const user = await env.createUser();
        const context = await browser.newContext();
        await addSessionCookie(context, env.baseUrl, user);
        const page = await context.newPage();
        page.setDefaultTimeout(15_000);
        await page.goto(`${env.baseUrl}/#/developer`);
        const field = page.getByLabel('Redirect URIs (one per line)', { exact: true });
        await page.locator('#redirect-uris-hint').waitFor();
        const hint = await field.evaluate((element) =>
          document.getElementById(element.getAttribute('aria-describedby') ?? '')?.textContent?.trim(),
        );
        if (loopbackAnyPort)
          assert.match(
            hint ?? '',
            /^Matched exactly, except an http one on 127\.0\.0\.1 or \[::1\], which matches on any port/,
          );
        else assert.equal(hint, 'Matched exactly: scheme, host, port, path and trailing slash.');
        await context.close();
      });
    },
    { config: { OAUTH_LOOPBACK_ANY_PORT: loopbackAnyPort } },
  );
}
