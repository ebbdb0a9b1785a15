import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv, type TestResponse } from '../../testing/harness.ts';
import { happyPathProblems, type DocumentedCall } from '../../testing/openapi-answers.ts';
import { fundedUser, putModel, type FundedUser } from '../../gateway/testing.ts';
import {
  ALL_TEST_SCOPES,
  authorizationRequest,
  newTestClientKey,
  registerTestApp,
  runAuthorization,
  TestBrowser,
} from '../../oauth/testing.ts';
import { startMockUpstream } from '../../providers/testing/mock-upstream.ts';
import Stripe from 'stripe';
import { FakeReplicate } from '../../predictions/testing/replicate-server.ts';
import { addReplicateModels, IMAGE_MODEL } from '../../predictions/testing/scenario.ts';
import { FakeStripe } from '../../topups/testing/stripe-server.ts';

/**
 * The 2XX answers of the routes that were checked only on their errors, taken for real and validated against the
 * served document: what a client generated from it (openapi-typescript) is told it gets must be what it gets.
 */

const mock = await startMockUpstream();
const replicate = await new FakeReplicate().start();
const stripe = await new FakeStripe().start();
after(() => Promise.all([mock.close(), replicate.stop(), stripe.stop()]));

/** Posts `delivery`, the exact bytes and headers a provider's webhook carries, to `url` of the service. */
const deliver = (env: TestEnv, url: string, delivery: { body: string; headers: Record<string, string> }) => {
  const { pathname, search } = new URL(url, env.baseUrl);
  return env.request('POST', `${pathname}${search}`, { raw: delivery.body, headers: delivery.headers });
};

/** A form-encoded POST, as OAuth clients send to the token, introspection and revocation endpoints. */
const form = (fields: Record<string, string>) => ({
  raw: new URLSearchParams(fields).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
});

describeEachDatabase(
  'the happy paths against the OpenAPI document',
  (env) => {
    let document: any;
    let user: FundedUser;
    const dashboard = (method: string, path: string, body?: unknown) => env.dashboard(user.session, method, path, body);

    before(async () => {
      document = (await env.request('GET', '/api/openapi.json')).body;
      user = await fundedUser(env, 100);
      stripe.webhookUrl = `${env.baseUrl}/api/webhooks/stripe`;
      await addReplicateModels(env);
      await putModel(env, 'acme/live', {
        provider: 'mock',
        upstreamModel: 'realtime-1',
        pricing: { request: 0.05 },
        outputModalities: ['audio'],
      });
    });

    it('answers the public, health and discovery routes as documented', async () => {
      const calls: DocumentedCall[] = [];
      calls.push(['GET', '/metrics', await env.admin('GET', '/metrics')]);
      for (const path of [
        '/healthz',
        '/readyz',
        '/.well-known/oauth-authorization-server',
        '/.well-known/openid-configuration',
        '/api/oauth/jwks',
      ])
        calls.push(['GET', path, await env.request('GET', path)]);
      assert.deepEqual(happyPathProblems(document, calls), []);
    });

    it('answers the account, profile, API-key and app routes as documented', async () => {
      const email = `new-${Date.now()}@example.com`;
      const signup = await env.request('POST', '/api/auth/signup', { body: { email, password: 'long-enough-pw' } });
      const key = await dashboard('POST', '/api/user/api-keys', { name: 'spare', permissions: ['ai:chat'] });
      const [first, second] = [await newTestClientKey(), await newTestClientKey()];
      const app = await dashboard('POST', '/api/user/apps', {
        name: 'app',
        redirectUris: ['http://127.0.0.1:9/cb'],
        scopes: ['ai:chat'],
        type: 'confidential',
        jwks: { keys: [first.publicJwk] },
      });
      const calls: DocumentedCall[] = [
        ['POST', '/api/auth/signup', signup],
        [
          'POST',
          '/api/auth/signin',
          await env.request('POST', '/api/auth/signin', { body: { email, password: 'long-enough-pw' } }),
        ],
        ['GET', '/api/auth/session', await dashboard('GET', '/api/auth/session')],
        ['GET', '/api/auth/state', await dashboard('GET', '/api/auth/state')],
        ['GET', '/api/auth/state', await env.request('GET', '/api/auth/state')],
        ['GET', '/api/user/me', await dashboard('GET', '/api/user/me')],
        ['POST', '/api/user/api-keys', key],
        ['GET', '/api/user/api-keys', await dashboard('GET', '/api/user/api-keys')],
        [
          'PATCH',
          '/api/user/api-keys/{id}',
          await dashboard('PATCH', `/api/user/api-keys/${key.body.apiKey?.id}`, { limit: 1, limitPeriod: 'daily' }),
        ],
        ['DELETE', '/api/user/api-keys/{id}', await dashboard('DELETE', `/api/user/api-keys/${key.body.apiKey?.id}`)],
        ['POST', '/api/user/apps', app],
        ['GET', '/api/user/apps', await dashboard('GET', '/api/user/apps')],
        [
          'PUT',
          '/api/user/apps/{clientId}/jwks',
          await dashboard('PUT', `/api/user/apps/${app.body.clientId}/jwks`, { jwks: { keys: [second.publicJwk] } }),
        ],
        ['DELETE', '/api/user/apps/{clientId}', await dashboard('DELETE', `/api/user/apps/${app.body.clientId}`)],
      ];
      assert.deepEqual(happyPathProblems(document, calls), []);
    });

    it('answers the OAuth token, introspection, revocation, userinfo and authorized-apps routes as documented', async () => {
      // The code is exchanged by hand: the token endpoint's own answer is what is checked, ID token included.
      const scopes = [...ALL_TEST_SCOPES, 'openid', 'profile', 'email', 'offline_access'];
      const app = await registerTestApp(env, { scopes });
      const consenting = await env.createUser();
      const asked = await authorizationRequest(env, app, scopes);
      const outcome = await runAuthorization(env, new TestBrowser(), asked, { user: consenting, dailyLimit: 5 });
      assert.equal(outcome.kind, 'callback');
      const client = { client_id: app.clientId };
      const exchanged = await env.request(
        'POST',
        '/api/oauth/token',
        form({
          ...client,
          grant_type: 'authorization_code',
          code: outcome.url.searchParams.get('code')!,
          redirect_uri: app.redirectUri,
          code_verifier: asked.codeVerifier,
        }),
      );
      const refreshed = await env.request(
        'POST',
        '/api/oauth/token',
        form({ ...client, grant_type: 'refresh_token', refresh_token: exchanged.body.refresh_token }),
      );
      const token = refreshed.body.access_token as string;
      const asOwner = (method: string, path: string, body?: unknown) => env.dashboard(consenting, method, path, body);
      const authorized = `/api/user/authorized-apps/${app.clientId}`;
      const calls: DocumentedCall[] = [
        ['POST', '/api/oauth/token', exchanged],
        ['POST', '/api/oauth/token', refreshed],
        [
          'POST',
          '/api/oauth/introspect',
          await env.request('POST', '/api/oauth/introspect', form({ ...client, token })),
        ],
        ['GET', '/api/oauth/userinfo', await env.request('GET', '/api/oauth/userinfo', { token })],
        ['POST', '/api/oauth/userinfo', await env.request('POST', '/api/oauth/userinfo', { token })],
        ['GET', '/api/user/authorized-apps', await env.request('GET', '/api/user/authorized-apps', { token })],
        [
          'PATCH',
          '/api/user/authorized-apps/{clientId}',
          await asOwner('PATCH', authorized, { limits: { daily: null, monthly: 20.25, total: 30 } }),
        ],
        ['POST', '/api/oauth/revoke', await env.request('POST', '/api/oauth/revoke', form({ ...client, token }))],
        ['DELETE', '/api/user/authorized-apps/{clientId}', await asOwner('DELETE', authorized)],
      ];
      assert.deepEqual(happyPathProblems(document, calls), []);
    });

    it('answers the wallet, usage, alert and webhook routes as documented', async () => {
      await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'tollgate/echo', messages: [{ role: 'user', content: 'hi' }] },
      });
      const hook = await dashboard('POST', '/api/user/webhooks', {
        url: 'http://127.0.0.1:9/hook',
        eventTypes: ['limit.reached'],
      });
      const id = hook.body.webhook?.id;
      const calls: DocumentedCall[] = [
        ['GET', '/api/wallet/balance', await dashboard('GET', '/api/wallet/balance')],
        ['GET', '/api/wallet/transactions', await dashboard('GET', '/api/wallet/transactions')],
        ['GET', '/api/wallet/topups', await dashboard('GET', '/api/wallet/topups')],
        ['GET', '/api/wallet/auto-topup', await dashboard('GET', '/api/wallet/auto-topup')],
        ['GET', '/api/usage', await dashboard('GET', '/api/usage')],
        ['PUT', '/api/user/low-balance-alert', await dashboard('PUT', '/api/user/low-balance-alert', { threshold: 5 })],
        ['GET', '/api/user/low-balance-alert', await dashboard('GET', '/api/user/low-balance-alert')],
        ['POST', '/api/user/webhooks', hook],
        ['GET', '/api/user/webhooks', await dashboard('GET', '/api/user/webhooks')],
        ['PATCH', '/api/user/webhooks/{id}', await dashboard('PATCH', `/api/user/webhooks/${id}`, { enabled: true })],
        ['POST', '/api/user/webhooks/{id}/test', await dashboard('POST', `/api/user/webhooks/${id}/test`)],
        ['GET', '/api/user/webhooks/{id}/deliveries', await dashboard('GET', `/api/user/webhooks/${id}/deliveries`)],
        [
          'POST',
          '/api/user/webhooks/{id}/rotate-secret',
          await dashboard('POST', `/api/user/webhooks/${id}/rotate-secret`),
        ],
        ['DELETE', '/api/user/webhooks/{id}', await dashboard('DELETE', `/api/user/webhooks/${id}`)],
      ];
      assert.deepEqual(happyPathProblems(document, calls), []);
    });

    it('answers the operator routes as documented', async () => {
      const created = await env.admin('POST', '/api/admin/users', {
        email: `op-${Date.now()}@example.com`,
        name: 'Op',
        password: 'long-enough-pw',
      });
      const [first, second] = [await newTestClientKey(), await newTestClientKey()];
      const app = await env.admin('POST', '/api/admin/apps', {
        name: 'operator app',
        redirectUris: ['http://127.0.0.1:9/cb'],
        scopes: ['ai:chat'],
        type: 'confidential',
        jwks: { keys: [first.publicJwk] },
      });
      const hook = await env.admin('POST', '/api/admin/webhooks', {
        url: 'http://127.0.0.1:9/operator',
        eventTypes: ['limit.reached'],
      });
      const hookId = hook.body.webhook?.id;
      const calls: DocumentedCall[] = [
        ['POST', '/api/admin/users', created],
        [
          'POST',
          '/api/admin/users/{id}/credits',
          await env.admin('POST', `/api/admin/users/${created.body.id}/credits`, { amount: 3, reason: 'test' }),
        ],
        ['GET', '/api/admin/models', await env.admin('GET', '/api/admin/models')],
        [
          'PUT',
          '/api/admin/models/{vendor}/{model}',
          await env.admin('PUT', '/api/admin/models/acme/spare', {
            provider: 'mock',
            upstreamModel: 'spare-1',
            pricing: { prompt: 1, completion: 2 },
          }),
        ],
        ['POST', '/api/admin/models/sync', await env.admin('POST', '/api/admin/models/sync')],
        ['GET', '/api/admin/usage', await env.admin('GET', '/api/admin/usage')],
        ['GET', '/api/admin/ledger/verify', await env.admin('GET', '/api/admin/ledger/verify')],
        ['POST', '/api/admin/apps', app],
        [
          'PUT',
          '/api/admin/apps/{clientId}/jwks',
          await env.admin('PUT', `/api/admin/apps/${app.body.clientId}/jwks`, { jwks: { keys: [second.publicJwk] } }),
        ],
        ['DELETE', '/api/admin/apps/{clientId}', await env.admin('DELETE', `/api/admin/apps/${app.body.clientId}`)],
        ['POST', '/api/admin/webhooks', hook],
        ['GET', '/api/admin/webhooks', await env.admin('GET', '/api/admin/webhooks')],
        [
          'PATCH',
          '/api/admin/webhooks/{id}',
          await env.admin('PATCH', `/api/admin/webhooks/${hookId}`, { enabled: true }),
        ],
        ['POST', '/api/admin/webhooks/{id}/test', await env.admin('POST', `/api/admin/webhooks/${hookId}/test`)],
        [
          'GET',
          '/api/admin/webhooks/{id}/deliveries',
          await env.admin('GET', `/api/admin/webhooks/${hookId}/deliveries`),
        ],
        [
          'POST',
          '/api/admin/webhooks/{id}/rotate-secret',
          await env.admin('POST', `/api/admin/webhooks/${hookId}/rotate-secret`),
        ],
        ['DELETE', '/api/admin/webhooks/{id}', await env.admin('DELETE', `/api/admin/webhooks/${hookId}`)],
      ];
      assert.deepEqual(happyPathProblems(document, calls), []);
    });

    it('answers the prediction routes and the Replicate webhook as documented', async () => {
      const created = await dashboard('POST', '/api/v1/predictions', {
        model: IMAGE_MODEL.id,
        input: { prompt: 'a lighthouse', num_outputs: 1 },
      });
      const byModel = await dashboard('POST', `/api/v1/models/${IMAGE_MODEL.id}/predictions`, {
        input: { prompt: 'a harbour' },
      });
      const replicateId = created.body.replicate_id;
      replicate.update(replicateId, {
        status: 'succeeded',
        output: ['https://replicate.delivery/a.png'],
        metrics: { predict_time: 1.5 },
      });
      const webhook = await deliver(
        env,
        replicate.predictions.get(replicateId)!.webhook!,
        replicate.webhookFor(replicateId),
      );
      const calls: DocumentedCall[] = [
        ['POST', '/api/v1/predictions', created],
        ['POST', '/api/v1/models/{vendor}/{model}/predictions', byModel],
        ['POST', '/api/webhooks/replicate', webhook],
        ['GET', '/api/v1/predictions/{id}', await dashboard('GET', `/api/v1/predictions/${created.body.id}`)],
        [
          'POST',
          '/api/v1/predictions/{id}/cancel',
          await dashboard('POST', `/api/v1/predictions/${byModel.body.id}/cancel`),
        ],
      ];
      assert.deepEqual(happyPathProblems(document, calls), []);
    });

    it('answers the top-up, auto top-up and Stripe webhook routes as documented', async () => {
      const topup = await dashboard('POST', '/api/wallet/topups', { amount: 10 });
      const setup = await dashboard('POST', '/api/wallet/auto-topup/setup', { threshold: 250, amount: 10 });
      const session = stripe.pay(new URL(setup.body.url).pathname.split('/').at(-1)!);
      const payload = JSON.stringify(stripe.event('checkout.session.completed', session));
      const signature = Stripe.webhooks.generateTestHeaderString({
        payload,
        secret: stripe.config().STRIPE_WEBHOOK_SECRET,
      });
      const webhook = await deliver(env, '/api/webhooks/stripe', {
        body: payload,
        headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature },
      });
      const calls: DocumentedCall[] = [
        ['POST', '/api/wallet/topups', topup],
        ['POST', '/api/wallet/auto-topup/setup', setup],
        ['POST', '/api/webhooks/stripe', webhook],
        [
          'PUT',
          '/api/wallet/auto-topup',
          await dashboard('PUT', '/api/wallet/auto-topup', { enabled: true, threshold: 250, amount: 10 }),
        ],
        ['GET', '/api/wallet/auto-topup', await dashboard('GET', '/api/wallet/auto-topup')],
      ];
      assert.deepEqual(happyPathProblems(document, calls), []);
    });

    it('answers the AI protocol routes (chat, legacy completions, Responses, Messages, models, client secrets) as documented', async () => {
      const ai = (method: string, path: string, body?: unknown): Promise<TestResponse> =>
        env.request(method, path, { token: user.key, body });
      const messages = [{ role: 'user', content: 'hi' }];
      const response = await ai('POST', '/api/v1/responses', { model: 'tollgate/echo', input: 'hi', store: true });
      const id = response.body.id;
      const calls: DocumentedCall[] = [
        [
          'POST',
          '/api/v1/chat/completions',
          await ai('POST', '/api/v1/chat/completions', { model: 'tollgate/echo', messages }),
        ],
        [
          'POST',
          '/api/v1/completions',
          await ai('POST', '/api/v1/completions', { model: 'tollgate/echo', prompt: 'hi' }),
        ],
        ['POST', '/api/v1/responses', response],
        ['GET', '/api/v1/responses/{id}', await ai('GET', `/api/v1/responses/${id}`)],
        ['GET', '/api/v1/responses/{id}/input_items', await ai('GET', `/api/v1/responses/${id}/input_items`)],
        [
          'POST',
          '/api/v1/responses/input_tokens',
          await ai('POST', '/api/v1/responses/input_tokens', { model: 'tollgate/echo', input: 'hi' }),
        ],
        ['DELETE', '/api/v1/responses/{id}', await ai('DELETE', `/api/v1/responses/${id}`)],
        [
          'POST',
          '/api/v1/messages',
          await ai('POST', '/api/v1/messages', { model: 'tollgate/echo', max_tokens: 16, messages }),
        ],
        [
          'POST',
          '/api/v1/messages/count_tokens',
          await ai('POST', '/api/v1/messages/count_tokens', { model: 'tollgate/echo', messages }),
        ],
        ['GET', '/api/v1/models', await ai('GET', '/api/v1/models')],
        ['GET', '/api/v1/key', await ai('GET', '/api/v1/key')],
        ['GET', '/api/v1/auth/key', await ai('GET', '/api/v1/auth/key')],
        ['GET', '/api/v1/models/{vendor}/{model}', await ai('GET', '/api/v1/models/tollgate/echo')],
        ['GET', '/api/v1/models/{id}', await ai('GET', '/api/v1/models/tollgate%2Fecho')],
        [
          'POST',
          '/api/v1/realtime/client_secrets',
          await ai('POST', '/api/v1/realtime/client_secrets', { session: { type: 'realtime', model: 'acme/live' } }),
        ],
        ['POST', '/api/v1/embeddings', await ai('POST', '/api/v1/embeddings', { model: 'tollgate/echo', input: 'hi' })],
      ];
      assert.deepEqual(happyPathProblems(document, calls), []);
    });
  },
  {
    config: {
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }],
      REALTIME_ENABLED: true,
      REPLICATE_WEBHOOK_SECRET: replicate.secret,
      REPLICATE_BASE_URL: replicate.baseUrl,
      REPLICATE_API_TOKEN: replicate.token,
      ...stripe.config(),
      WEBHOOK_ALLOW_HTTP: true,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true,
    },
  },
);
