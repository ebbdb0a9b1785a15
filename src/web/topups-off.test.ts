import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { addSessionCookie, chromiumForSuite } from './browser.ts';

const WIDTHS = { phone: { width: 390, height: 844 }, desktop: { width: 1280, height: 800 } } as const;

describeEachDatabase('the wallet with top-ups off (no STRIPE_* set), in Chromium', (env) => {
  const browser = chromiumForSuite();

  for (const [width, viewport] of Object.entries(WIDTHS))
    test(`${width}: opened from the restriction dialog's link, it tells the user the operator adds credits, how many they need and their account's email; the operator's steps are folded apart, with that email`, async () => {
      // A long email without a space: it wraps rather than widen a phone's page.
      const email = `${width}-a-rather-long-address-of-someone-${Date.now()}@mail.example.com`;
      const user = await env.createUser({ email });
      const topups = await env.dashboard(user, 'GET', '/api/wallet/topups');
      assert.equal(topups.body.enabled, false, 'the test server has no Stripe');
      const context = await browser.newContext({ viewport });
      await addSessionCookie(context, env.baseUrl, user);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${env.baseUrl}/#/wallet?need=76`);

      const said = page.getByTestId('topups-off');
      await said.waitFor();
      assert.match((await page.getByTestId('credits-needed').textContent())!, /needs 76\.00 more credits/);
      assert.equal(
        (await said.textContent())!.replace(/\s+/g, ' ').trim(),
        `Credits cannot be bought here: the operator of this service adds them. Ask them for at least 76.00 credits on your account, ${email}. They appear here as soon as they are added.`,
      );
      const shown = await page.locator('#content').innerText();
      assert.doesNotMatch(shown, /STRIPE_|grant-credits|you@example\.com/, 'no operator steps in the user’s view');
      assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 0);

      await page.getByText('For the operator of this service').click();
      const note = page.getByTestId('operator-note');
      assert.match((await note.textContent())!, /STRIPE_SECRET_KEY/);
      assert.equal(
        await note.locator('code.command').textContent(),
        `tollgate grant-credits --email ${email} --amount 76`,
      );
      assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 0);
      await context.close();
    });
});
