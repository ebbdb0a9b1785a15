import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Locator, Page } from 'playwright-core';
import { describeEachDatabase } from '../testing/harness.ts';
import { addSessionCookie, ensureWebBuilt, launchChromium, screenshot } from '../web/browser.ts';
import { FakeStripe } from './testing/stripe-server.ts';
import { assertLedgerVerifies, paidTopup, startTopup, walletOf } from './testing/scenario.ts';
import { formatCredits } from '../../packages/sdk/src/format.ts';

const fake = await new FakeStripe().start();
ensureWebBuilt();
let browser: Browser;
before(async () => {
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await fake.stop();
});

describeEachDatabase(
  'a whole top-up in the browser: wallet page → Checkout → webhook → balance',
  (env) => {
    before(() => {
      fake.webhookUrl = `${env.baseUrl}/api/webhooks/stripe`;
    });

    it("the restriction link's amount pre-fills the page, Checkout takes the payment, the page shows it pending and then the credited balance and receipt", async () => {
      const user = await env.createUser({ password: 'a long enough password' });
      const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
      const page: Page = await context.newPage();
      page.setDefaultTimeout(15_000);
      const violations: string[] = [];
      page.on(
        'console',
        (message) => void (/Content Security Policy/.test(message.text()) && violations.push(message.text())),
      );
      await page.goto(`${env.baseUrl}/#/wallet?need=250`);
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();

      // What the restriction dialog's link asks for: 250 credits cost 2.50 USD, raised to the 5 USD minimum.
      await page.getByTestId('credits-needed').filter({ hasText: '250.00' }).waitFor();
      assert.equal(await page.getByLabel(/Custom amount/).inputValue(), '5');
      await page.getByTestId('low-balance').filter({ hasText: '0.00 credits available' }).waitFor();
      await screenshot(page, 'wallet-top-up');

      fake.deferDeliveryMs = 1500;
      await page.getByRole('button', { name: /^10\.00 USD · 1,000\.00 credits$/ }).click();
      await page.waitForURL(`${fake.baseUrl}/pay/**`);
      await page.getByRole('heading', { name: 'Pay 10.00 USD' }).waitFor();
      await page.getByRole('button', { name: 'Pay' }).click();

      // Back on the wallet before Stripe's event arrived: pending, then credited.
      await page.waitForURL(/#\/wallet\?topup=top_/);
      await page.getByTestId('topup-return').filter({ hasText: 'Top-up pending' }).waitFor();
      await page.getByTestId('topup-return').filter({ hasText: '1,000.00 credits added' }).waitFor();
      await page.getByTestId('wallet-balance').filter({ hasText: '1,000.00' }).waitFor();
      const history = page.getByTestId('topup-history');
      await history.getByText('succeeded').waitFor();
      assert.match(
        (await history.getByRole('link', { name: 'Receipt' }).getAttribute('href'))!,
        new RegExp(`^${fake.baseUrl}/receipts/pi_`),
      );
      assert.equal(await page.getByTestId('low-balance').count(), 0);
      assert.deepEqual(violations, [], 'the wallet page runs under its CSP');
      await screenshot(page, 'wallet-topped-up');
      assert.equal((await walletOf(env, user)).balance, 1000_000_000);
      await assertLedgerVerifies(env, user.userId);
      fake.deferDeliveryMs = 0;
      await context.close();
    });

    it("at phone width every top-up's status and receipt are on screen, and the transactions, paged with Load more clicked twice at once, are the ledger's exactly", async () => {
      const user = await env.createUser();
      for (const amount of [5, 12.34, 25]) await paidTopup(env, fake, user, amount);
      for (let i = 0; i < 30; i++) {
        const grant = await env.admin('POST', `/api/admin/users/${user.userId}/credits`, {
          amount: 0.000001 * (i + 1),
          reason: `grant ${i}`,
        });
        assert.equal(grant.status, 200, grant.text);
      }
      const key = await env.dashboard(user, 'POST', '/api/user/api-keys', { name: 'k', permissions: ['ai:chat'] });
      assert.equal(key.status, 200, key.text);
      for (let i = 0; i < 4; i++) {
        const chat = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.body.apiKey.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'tollgate/echo', messages: [{ role: 'user', content: `call ${i}` }] }),
        });
        assert.equal(chat.status, 200, await chat.text());
      }
      // The ledger as the API pages it, newest first.
      const ledger: Array<{ description: string; amount: number }> = [];
      for (let cursor = ''; ;) {
        const page = await env.dashboard(user, 'GET', `/api/wallet/transactions?limit=100${cursor}`);
        ledger.push(...page.body.transactions);
        if (!page.body.nextCursor) break;
        cursor = `&cursor=${encodeURIComponent(page.body.nextCursor)}`;
      }
      assert.ok(ledger.length > 40, `${ledger.length} movements: more than two pages of 20`);

      const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
      await addSessionCookie(context, env.baseUrl, user);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${env.baseUrl}/#/wallet`);
      const history = page.getByTestId('topup-history');
      await history.getByText('succeeded').first().waitFor();
      for (const cell of [
        ...(await history.getByText('succeeded').all()),
        ...(await history.getByRole('link', { name: 'Receipt' }).all()),
      ]) {
        const box = (await cell.boundingBox())!;
        assert.ok(box.x >= 0 && box.x + box.width <= 390, `"${await cell.textContent()}" is off screen at x=${box.x}`);
      }
      const wallet = await walletOf(env, user);
      await page
        .getByTestId('wallet-balance')
        .filter({ hasText: formatCredits(wallet.balance / 1e6) })
        .waitFor();

      // A second click before the first page arrived (a slow network, an impatient thumb) loads nothing twice.
      const more = page.getByRole('button', { name: 'Load more' });
      await more.dblclick();
      while (await more.isVisible().catch(() => false)) {
        await more.click().catch(() => {});
        await page.waitForTimeout(100);
      }
      await page.waitForTimeout(300);
      const rows = await page
        .getByRole('region', { name: 'Transactions' })
        .locator('tbody tr')
        .evaluateAll((trs) =>
          trs.map((tr) => ({
            description: tr.querySelector('[data-label="What"]')!.textContent,
            credits: tr.querySelector('[data-label="Credits"]')!.textContent,
          })),
        );
      assert.deepEqual(
        rows,
        ledger.map((t) => ({
          description: t.description,
          credits: `${t.amount > 0 ? '+' : ''}${formatCredits(t.amount)}`,
        })),
      );
      await context.close();
    });

    for (const width of [390, 1280]) {
      it(`a custom amount and an auto top-up threshold the API refuses are told at their fields, focused, in the page's words (${width} px)`, async () => {
        const user = await env.createUser();
        const context = await browser.newContext({ viewport: { width, height: 900 } });
        await addSessionCookie(context, env.baseUrl, user);
        const page = await context.newPage();
        page.setDefaultTimeout(15_000);
        await page.goto(`${env.baseUrl}/#/wallet`);
        /** What the input's own limits stop in a browser, a script or an older page can still send. */
        const unbound = (name: string) =>
          page.locator(`input[name="${name}"]`).evaluate((input) => {
            input.removeAttribute('min');
            input.removeAttribute('max');
            input.setAttribute('step', 'any');
          });
        const refusedAt = async (name: string, words: RegExp, kept: string) => {
          const input = page.locator(`input[name="${name}"]`);
          await page.locator(`input[name="${name}"][aria-invalid="true"]`).waitFor();
          assert.equal(await input.evaluate((element) => element === document.activeElement), true, `${name} focused`);
          const described = await input.evaluate(
            (element) => document.getElementById(element.getAttribute('aria-describedby') ?? '')?.textContent ?? '',
          );
          assert.match(described, words);
          assert.equal(await input.inputValue(), kept, 'what was typed is kept');
        };

        await unbound('amount');
        await page.locator('input[name="amount"]').fill('10.001');
        await page.getByRole('button', { name: 'Top up' }).click();
        await refusedAt('amount', /^The amount must be a number of currency units with at most 2 decimals\./, '10.001');

        await unbound('threshold');
        await page.locator('input[name="threshold"]').fill('0.0000001');
        await page.getByRole('button', { name: 'Save a card and turn on' }).click();
        await refusedAt('threshold', /^The threshold must be a non-negative number of credits/, '0.0000001');
        assert.equal((await walletOf(env, user)).balance, 0, 'nothing was bought');
        await context.close();
      });
    }

    it('a double click on an amount, on Top up, on Save a card or on Turn off starts one request, the buttons disabled while it runs', async () => {
      const user = await env.createUser();
      // A saved card and auto top-up on: the state a completed setup leaves (auto-topup.test.ts proves how).
      const now = Date.now();
      await env.db
        .insertInto('topup_accounts')
        .values({
          user_id: user.userId,
          stripe_customer_id: null,
          payment_method_id: 'pm_saved',
          auto_enabled: 1,
          auto_threshold: 1_000_000,
          auto_amount_minor: 1000,
          auto_in_flight: null,
          auto_failure: null,
          auto_failed_at: null,
          updated_at: now,
        })
        .execute();
      const context = await browser.newContext();
      await addSessionCookie(context, env.baseUrl, user);
      // Each write is held for a moment, as a slow network does: the second click comes while the first runs.
      const writes: string[] = [];
      await context.route(
        (url) => url.pathname.startsWith('/api/wallet/'),
        async (route) => {
          if (route.request().method() === 'GET') return route.continue();
          writes.push(`${route.request().method()} ${new URL(route.request().url()).pathname}`);
          await new Promise((resolve) => setTimeout(resolve, 700));
          await route.continue();
        },
      );
      /** What a double click sent, and whether the button was disabled while the first request ran. */
      const attempt = async (press: (page: Page) => Promise<void>, button: (page: Page) => Locator) => {
        const page = await context.newPage();
        page.setDefaultTimeout(15_000);
        await page.goto(`${env.baseUrl}/#/wallet`);
        await button(page).waitFor();
        writes.length = 0;
        await press(page);
        const disabled = await button(page).isDisabled();
        await page.waitForTimeout(1200);
        const sent = [...writes];
        await page.close();
        return { sent, disabled };
      };
      const amount = (page: Page) => page.getByRole('button', { name: /^10\.00 USD/ });
      assert.deepEqual(await attempt((page) => amount(page).dblclick(), amount), {
        sent: ['POST /api/wallet/topups'],
        disabled: true,
      });
      const topUp = (page: Page) => page.getByRole('button', { name: 'Top up', exact: true });
      const custom = async (page: Page) => {
        await page.getByLabel(/Custom amount/).fill('7');
        await topUp(page).dblclick();
      };
      assert.deepEqual(await attempt(custom, topUp), { sent: ['POST /api/wallet/topups'], disabled: true });
      const saveCard = (page: Page) => page.getByRole('button', { name: 'Save a new card' });
      assert.deepEqual(await attempt((page) => saveCard(page).dblclick(), saveCard), {
        sent: ['POST /api/wallet/auto-topup/setup'],
        disabled: true,
      });
      const turnOff = (page: Page) => page.getByRole('button', { name: 'Turn off' });
      assert.deepEqual(await attempt((page) => turnOff(page).dblclick(), turnOff), {
        sent: ['PUT /api/wallet/auto-topup'],
        disabled: true,
      });
      await context.close();
    });

    it('the top-up history reaches every top-up with Load more top-ups, past the first page of 50', async () => {
      const user = await env.createUser();
      const started: string[] = [];
      for (let i = 0; i < 53; i++) started.push((await startTopup(env, user, 5)).topupId);
      const context = await browser.newContext();
      await addSessionCookie(context, env.baseUrl, user);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${env.baseUrl}/#/wallet`);
      const rows = page.getByTestId('topup-history').locator('tbody tr');
      await rows.nth(49).waitFor();
      await page.getByRole('button', { name: 'Load more top-ups' }).click();
      await rows.nth(52).waitFor();
      assert.equal(await rows.count(), 53);
      assert.equal(await page.getByRole('button', { name: 'Load more top-ups' }).count(), 0, 'no page after the last');
      await context.close();
    });

    it('back from a cancelled Checkout the page says nothing was charged and stops asking about the top-up', async () => {
      const user = await env.createUser();
      const { topupId } = await startTopup(env, user, 5);
      const context = await browser.newContext();
      await addSessionCookie(context, env.baseUrl, user);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      let asked = 0;
      page.on('request', (request) => void (new URL(request.url()).pathname === '/api/wallet/topups' && asked++));
      await page.goto(`${env.baseUrl}/#/wallet?topup=${topupId}&cancelled=1`);
      await page.getByTestId('topup-return').filter({ hasText: 'cancelled; nothing was charged' }).waitFor();
      await page.getByTestId('topup-history').waitFor();
      const settled = asked;
      await page.waitForTimeout(3500);
      // The session stays open at Stripe until it expires (a day): asking every second meanwhile was for nothing.
      assert.equal(asked, settled, `${asked - settled} more requests for the cancelled top-up in 3.5 s`);
      await context.close();
    });

    it('a failed auto top-up is shown on the wallet page', async () => {
      const user = await env.createUser({ password: 'a long enough password' });
      const now = Date.now();
      // The state a declined off-session payment leaves (auto-topup.test.ts proves how it gets there).
      await env.db
        .insertInto('topup_accounts')
        .values({
          user_id: user.userId,
          stripe_customer_id: 'cus_x',
          payment_method_id: 'pm_x',
          auto_enabled: 0,
          auto_threshold: 1_000_000,
          auto_amount_minor: 1000,
          auto_in_flight: null,
          auto_failure: 'Your card has insufficient funds.',
          auto_failed_at: now,
          updated_at: now,
        })
        .execute();
      const context = await browser.newContext();
      await addSessionCookie(context, env.baseUrl, user);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${env.baseUrl}/#/wallet`);
      await page.getByTestId('auto-topup-failure').filter({ hasText: 'Your card has insufficient funds.' }).waitFor();
      await page.getByRole('button', { name: 'Turn on' }).waitFor();
      await context.close();
    });

    it('the wallet page follows a change of ?need= while it is open, from the page without one and from another page', async () => {
      const user = await env.createUser();
      const context = await browser.newContext();
      await addSessionCookie(context, env.baseUrl, user);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      const needed = page.getByTestId('credits-needed');
      const custom = page.getByLabel(/Custom amount/);
      const follows = async (hash: string, credits: string, amount: string) => {
        await page.evaluate((to) => (location.hash = to), hash);
        await needed.filter({ hasText: `needs ${credits} more credits` }).waitFor();
        assert.equal(await custom.inputValue(), amount, `${hash} pre-fills the price of ${credits} credits`);
      };
      // The wallet is the page at / too: a restriction link opened in this tab changes only the query.
      await page.goto(`${env.baseUrl}/`);
      await page.getByRole('button', { name: /^10\.00 USD/ }).waitFor();
      assert.equal(await needed.count(), 0);
      await follows('#/wallet?need=12.345', '12.345', '5');
      // Before, the page kept saying 12.345 and the first amount.
      await follows('#/wallet?need=900', '900.00', '9');
      await page.evaluate(() => (location.hash = '#/usage'));
      await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
      await follows('#/wallet?need=1500', '1,500.00', '15');
      await page.evaluate(() => (location.hash = '#/wallet'));
      await needed.waitFor({ state: 'detached' });
      assert.equal(await custom.inputValue(), '', 'no need, no pre-fill');
      await context.close();
    });
  },
  { config: fake.config() },
);
