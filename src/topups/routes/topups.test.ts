import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, TestEnv } from '../../testing/harness.ts';
import { authorizeForTest } from '../../oauth/testing.ts';
import { FakeStripe } from '../testing/stripe-server.ts';
import { startTopup } from '../testing/scenario.ts';

const fake = await new FakeStripe().start();
after(() => fake.stop());

describeEachDatabase(
  'top-up routes: the dashboard session starts a Checkout and reads its history',
  (env) => {
    before(() => {
      fake.webhookUrl = `${env.baseUrl}/api/webhooks/stripe`;
    });

    it('POST /api/wallet/topups creates a Checkout Session for the signed-in user, priced from the configuration, with an idempotency key per top-up', async () => {
      const user = await env.createUser();
      const response = await env.dashboard(user, 'POST', '/api/wallet/topups', { amount: 25 });
      assert.equal(response.status, 201, response.text);
      assert.equal(response.body.topup.status, 'pending');
      assert.equal(response.body.topup.credits, 2500);
      assert.equal(response.body.topup.amount, 25);
      assert.ok(response.body.url.startsWith(`${fake.baseUrl}/pay/cs_test_`));
      const sent = fake.requests.filter((r) => r.path === '/v1/checkout/sessions').at(-1)!;
      assert.equal(sent.idempotencyKey, `tollgate-topup-${response.body.topup.id}`);
      assert.equal(sent.params.mode, 'payment');
      assert.equal(sent.params.line_items['0'].price_data.unit_amount, '2500');
      assert.equal(sent.params.line_items['0'].price_data.currency, 'usd');
      assert.equal(sent.params.client_reference_id, user.userId);
      assert.equal(sent.params.metadata.tollgateTopupId, response.body.topup.id);
      assert.ok(sent.params.success_url.endsWith(`/#/wallet?topup=${response.body.topup.id}`));
      // The user's Stripe customer is made once and reused.
      await env.dashboard(user, 'POST', '/api/wallet/topups', { amount: 5 });
      const sessions = fake.requests.filter((r) => r.path === '/v1/checkout/sessions').slice(-2);
      assert.equal(sessions[0].params.customer, sessions[1].params.customer);

      const history = await env.dashboard(user, 'GET', '/api/wallet/topups');
      assert.equal(history.status, 200);
      assert.equal(history.body.enabled, true);
      assert.deepEqual(history.body.amounts, [5, 10, 25, 50]);
      assert.deepEqual(
        history.body.topups.map((t: any) => [t.amount, t.status]),
        [
          [5, 'pending'],
          [25, 'pending'],
        ],
      );
    });

    it('amounts outside the offer and the custom bounds, or with more than 2 decimals, are a 400 naming the bounds', async () => {
      const user = await env.createUser();
      assert.equal(
        (await env.dashboard(user, 'POST', '/api/wallet/topups', { amount: 12.5 })).status,
        201,
        'a custom amount within bounds',
      );
      for (const amount of [4, 501, 10.001, -5]) {
        const response = await env.dashboard(user, 'POST', '/api/wallet/topups', { amount });
        assert.equal(response.status, 400, `${amount}: ${response.text}`);
        assert.equal(response.body.error.code, 'INVALID_REQUEST');
      }
      const refused = await env.dashboard(user, 'POST', '/api/wallet/topups', { amount: 1000 });
      assert.match(refused.body.error.message, /one of 5, 10, 25, 50 or between 5 and 500 USD/);
      assert.equal(refused.body.error.maxAmount, 500);
    });

    it("an app's OAuth token or an API key gets 403 on every top-up route, and a session write without the CSRF header too", async () => {
      const authorization = await authorizeForTest(env);
      const user = await env.createUser();
      const key = (
        await env.dashboard(user, 'POST', '/api/user/api-keys', { name: 'k', permissions: ['ai:chat', 'billing:read'] })
      ).body.apiKey.key;
      const routes: Array<[string, string, unknown]> = [
        ['POST', '/api/wallet/topups', { amount: 10 }],
        ['GET', '/api/wallet/topups', undefined],
        ['GET', '/api/wallet/auto-topup', undefined],
        ['PUT', '/api/wallet/auto-topup', { enabled: false, threshold: 1, amount: 10 }],
        ['POST', '/api/wallet/auto-topup/setup', { threshold: 1, amount: 10 }],
      ];
      const before = fake.requests.length;
      for (const [method, path, body] of routes) {
        for (const token of [authorization.accessToken, key]) {
          const response = await env.request(method, path, { token, body });
          assert.equal(response.status, 403, `${method} ${path}: ${response.text}`);
          assert.equal(response.body.error.code, 'PERMISSION_DENIED');
        }
      }
      const noCsrf = await env.request('POST', '/api/wallet/topups', {
        body: { amount: 10 },
        headers: { cookie: user.cookie },
      });
      assert.equal(noCsrf.status, 403);
      assert.equal((await env.request('POST', '/api/wallet/topups', { body: { amount: 10 } })).status, 401);
      assert.equal(fake.requests.length, before, 'Stripe was never called');
    });

    it('GET /api/wallet/topups pages every top-up, newest first, with a cursor (50 by default, limit 1 to 100)', async () => {
      const user = await env.createUser();
      const started: string[] = [];
      for (let i = 0; i < 53; i++) started.push((await startTopup(env, user, 5)).topupId);
      const newestFirst = [...started].reverse();
      const first = await env.dashboard(user, 'GET', '/api/wallet/topups');
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.topups.length, 50);
      assert.equal(typeof first.body.nextCursor, 'string');
      const rest = await env.dashboard(
        user,
        'GET',
        `/api/wallet/topups?cursor=${encodeURIComponent(first.body.nextCursor)}`,
      );
      assert.equal(rest.status, 200, rest.text);
      assert.equal(rest.body.nextCursor, null);
      const listed = [...first.body.topups, ...rest.body.topups];
      assert.deepEqual(listed.map((t: { id: string }) => t.id).sort(), [...newestFirst].sort());
      // Newest first (top-ups started in the same millisecond follow their ids).
      for (let i = 1; i < listed.length; i++) assert.ok(listed[i - 1].createdAt >= listed[i].createdAt);
      // Smaller pages reach the same top-ups; the offer comes with each page.
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: any = await env.dashboard(
          user,
          'GET',
          `/api/wallet/topups?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        assert.equal(page.status, 200, page.text);
        assert.ok(page.body.amounts.length > 0);
        seen.push(...page.body.topups.map((t: { id: string }) => t.id));
        cursor = page.body.nextCursor;
      } while (cursor);
      assert.deepEqual(
        seen,
        listed.map((t: { id: string }) => t.id),
      );
      // A cursor reads only the user's own top-ups.
      const other = await env.createUser();
      const theirs = await env.dashboard(
        other,
        'GET',
        `/api/wallet/topups?cursor=${encodeURIComponent(first.body.nextCursor)}`,
      );
      assert.deepEqual(theirs.body.topups, []);
      for (const query of ['cursor=bm9wZQ', 'limit=0', 'limit=101', 'limit=ten']) {
        const bad = await env.dashboard(user, 'GET', `/api/wallet/topups?${query}`);
        assert.equal(bad.status, 400, `${query}: ${bad.text}`);
        assert.equal(bad.body.error.code, 'INVALID_REQUEST', query);
      }
    });

    it("another user's top-ups are not listed", async () => {
      const one = await env.createUser();
      const other = await env.createUser();
      await env.dashboard(one, 'POST', '/api/wallet/topups', { amount: 10 });
      assert.deepEqual((await env.dashboard(other, 'GET', '/api/wallet/topups')).body.topups, []);
    });
  },
  { config: fake.config() },
);

describe('top-ups without Stripe configured [sqlite]', () => {
  const env = new TestEnv('sqlite');
  before(() => env.start());
  after(() => env.stop());

  it('the page says top-ups are off and how the operator enables them; the routes answer 403 TOPUPS_DISABLED (no 5xx: nothing is broken), the webhook 503 (Stripe retries)', async () => {
    const user = await env.createUser();
    const page = await env.dashboard(user, 'GET', '/api/wallet/topups');
    assert.equal(page.status, 200);
    assert.equal(page.body.enabled, false);
    assert.match(page.body.message, /STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET/);
    const writes = [
      ['POST', '/api/wallet/topups', { amount: 10 }],
      ['POST', '/api/wallet/auto-topup/setup', { threshold: 1, amount: 10 }],
      ['PUT', '/api/wallet/auto-topup', { enabled: false, threshold: 1, amount: 10 }],
    ] as const;
    for (const [method, path, body] of writes) {
      const response = await env.dashboard(user, method, path, body);
      assert.equal(response.status, 403, response.text);
      assert.equal(response.body.error.code, 'TOPUPS_DISABLED');
    }
    const webhook = await env.request('POST', '/api/webhooks/stripe', {
      raw: '{}',
      headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
    });
    assert.equal(webhook.status, 503);
    assert.equal(webhook.body.error.code, 'SERVICE_UNAVAILABLE');
    assert.equal(await env.db.selectFrom('topups').select('id').executeTakeFirst(), undefined);
    assert.equal(await env.db.selectFrom('topup_accounts').select('user_id').executeTakeFirst(), undefined);
    assert.equal(await env.db.selectFrom('stripe_events').select('event_id').executeTakeFirst(), undefined);
  });
});
