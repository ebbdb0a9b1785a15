import { after, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestResponse } from '../../testing/harness.ts';
import { registerTestApp, authorizeForTest } from '../../oauth/testing.ts';
import { FakeStripe } from '../../topups/testing/stripe-server.ts';

const fake = await new FakeStripe().start();
after(() => fake.stop());

/** A public JWK with its private member left in, as a developer pasting the whole key pair sends it. */
const PRIVATE_JWK = { kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'secret' };

// Every refusal of a field names it in `param`, as the schema's and the AI API's do: a client (the dashboard's forms,
// an SDK) can then point at the field without reading the sentence. Before, these handler refusals gave only a
// sentence, each in its own words.
describeEachDatabase(
  'the refusals of the dashboard API name their field in param',
  (env) => {
    it('app registration, app limits, webhooks, the low-balance alert, top-ups and auto top-up', async () => {
      const user = await env.createUser();
      const app = (body: Record<string, unknown>) =>
        env.dashboard(user, 'POST', '/api/user/apps', {
          name: 'app',
          redirectUris: ['https://app.example/cb'],
          scopes: ['ai:chat'],
          type: 'public',
          ...body,
        });
      const authorized = await registerTestApp(env, { name: 'Acme', scopes: ['read', 'ai:chat'] });
      await authorizeForTest(env, { user, app: authorized, scopes: ['read', 'ai:chat'] });
      const cases: Array<[string, string, TestResponse]> = [
        ['name', 'INVALID_REQUEST', await app({ name: '   ' })],
        [
          'redirectUris[1]',
          'INVALID_REQUEST',
          await app({ redirectUris: ['https://app.example/cb', 'http://app.example/cb'] }),
        ],
        ['scopes[1]', 'INVALID_REQUEST', await app({ scopes: ['ai:chat', 'everything'] })],
        ['jwks', 'INVALID_REQUEST', await app({ jwks: { keys: [PRIVATE_JWK] } })],
        ['jwks.keys[0]', 'INVALID_REQUEST', await app({ type: 'confidential', jwks: { keys: [PRIVATE_JWK] } })],
        ['jwks.keys', 'INVALID_REQUEST', await app({ type: 'confidential', jwks: { keys: [] } })],
        [
          'limits.monthly',
          'INVALID_REQUEST',
          await env.dashboard(user, 'PATCH', `/api/user/authorized-apps/${authorized.clientId}`, {
            limits: { monthly: 1e20 },
          }),
        ],
        [
          'limits.daily',
          'INVALID_REQUEST',
          await env.dashboard(user, 'PATCH', `/api/user/authorized-apps/${authorized.clientId}`, {
            limits: { daily: -1 },
          }),
        ],
        [
          'url',
          'WEBHOOK_URL_REFUSED',
          await env.dashboard(user, 'POST', '/api/user/webhooks', { url: 'http://example.com/hook' }),
        ],
        [
          'eventTypes[0]',
          'INVALID_REQUEST',
          await env.dashboard(user, 'POST', '/api/user/webhooks', {
            url: 'https://example.com/hook',
            eventTypes: ['wallet.everything'],
          }),
        ],
        [
          'threshold',
          'INVALID_REQUEST',
          await env.dashboard(user, 'PUT', '/api/user/low-balance-alert', { threshold: 1e20 }),
        ],
        ['amount', 'INVALID_REQUEST', await env.dashboard(user, 'POST', '/api/wallet/topups', { amount: 10.001 })],
        ['amount', 'INVALID_REQUEST', await env.dashboard(user, 'POST', '/api/wallet/topups', { amount: 1e9 })],
        [
          'threshold',
          'INVALID_REQUEST',
          await env.dashboard(user, 'POST', '/api/wallet/auto-topup/setup', { threshold: 0.0000001, amount: 10 }),
        ],
      ];
      // A value outside a list is told as the list, once, not as one "must be equal to constant" per choice.
      const scope = cases.find(([param]) => param === 'scopes[1]')![2];
      assert.match(scope.body.error.message, /^Invalid body: scopes\/1 must be one of "read", "write", /);
      assert.doesNotMatch(scope.body.error.message, /constant|anyOf/);
      const eventType = cases.find(([param]) => param === 'eventTypes[0]')![2];
      assert.match(eventType.body.error.message, /^Invalid body: eventTypes\/0 must be one of "wallet\.low_balance", /);
      // A field that also takes null says the rule broken once, not "must be null" and "must match a schema in anyOf".
      const negative = cases.find(([param]) => param === 'limits.daily')![2];
      assert.equal(negative.body.error.message, 'Invalid body: limits/daily must be >= 0, or null');
      for (const [param, code, response] of cases) {
        assert.equal(response.status, 400, `${param}: ${response.text}`);
        assert.equal(response.body.error.code, code, `${param}: ${response.text}`);
        assert.equal(response.body.error.param, param, response.text);
      }
    });
  },
  { config: { ...fake.config() } },
);
