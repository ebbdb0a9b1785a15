import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { addSessionCookie, screenshot, chromiumForSuite } from '../web/browser.ts';
import { WebhookReceiver } from './testing/receiver.ts';

const receiver = new WebhookReceiver();
before(() => receiver.start());
after(() => receiver.stop());

describeEachDatabase(
  'the dashboard Webhooks page in Chromium',
  (env) => {
    const browser = chromiumForSuite();

    it('sets the low-balance threshold, registers an endpoint, shows its secret once, sends a test and shows it delivered', async () => {
      const user = await env.createUser();
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
      await page.goto(`${env.baseUrl}/#/webhooks`);
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('heading', { name: 'Webhooks' }).waitFor();

      await page.getByLabel('Alert when available credits fall below').fill('5');
      await page.getByRole('button', { name: 'Save threshold' }).click();
      await page.getByText('Saved.').waitFor();
      assert.equal((await env.dashboard(user, 'GET', '/api/user/low-balance-alert')).body.threshold, 5);

      await page.getByLabel('Endpoint URL').fill(receiver.url);
      await page.getByRole('checkbox', { name: /wallet\.topup_failed/ }).uncheck();
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      const secret = ((await page.getByTestId('webhook-secret').textContent()) ?? '').trim();
      assert.match(secret, /^whsec_/);
      receiver.secrets = [secret];
      const [endpoint] = (await env.dashboard(user, 'GET', '/api/user/webhooks')).body.webhooks;
      assert.deepEqual(endpoint.eventTypes, ['wallet.low_balance', 'limit.reached', 'wallet.topup_succeeded']);

      const section = page.locator(`[data-endpoint-id="${endpoint.id}"]`);
      await section.getByRole('button', { name: 'Deliveries' }).click();
      await section.getByRole('button', { name: 'Send test event' }).click();
      const [delivery] = await receiver.waitFor(1);
      assert.equal(delivery.verified, true);
      await section.getByRole('cell', { name: 'delivered' }).waitFor({ timeout: 10_000 });
      await screenshot(page, 'dashboard-webhooks');

      // Shown once: after a reload the page lists the endpoint without its secret.
      await page.reload();
      await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
      await page.locator(`[data-endpoint-id="${endpoint.id}"]`).waitFor();
      assert.equal(await page.getByTestId('webhook-secret').count(), 0);
      assert.equal((await page.content()).includes(secret), false);
    });

    it('at phone width the deliveries fit the screen, one block each, with no box scrolling sideways out of a keyboard’s reach', async () => {
      const user = await env.createUser();
      const created = await env.dashboard(user, 'POST', '/api/user/webhooks', {
        url: `${receiver.url}/a/rather/long/path/of/the/receiving/endpoint`,
        eventTypes: ['limit.reached'],
      });
      assert.equal(created.status, 201, created.text);
      const test = await env.dashboard(user, 'POST', `/api/user/webhooks/${created.body.webhook.id}/test`);
      assert.ok(test.status < 300, test.text);
      const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
      await addSessionCookie(context, env.baseUrl, user);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto(`${env.baseUrl}/#/webhooks`);
      await page.getByRole('button', { name: 'Deliveries' }).click();
      await page.locator('[data-deliveries-of] tbody tr').first().waitFor();
      const widths = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth - innerWidth,
        deliveries: [...document.querySelectorAll('[data-deliveries-of] .table-wrap')].map(
          (wrap) => wrap.scrollWidth - wrap.clientWidth,
        ),
      }));
      assert.deepEqual(widths, { page: 0, deliveries: [0] });
      await context.close();
    });
  },
  { config: { WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true } },
);
