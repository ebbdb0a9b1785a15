import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, wallet } from './testing.ts';

const mock = await startMockUpstream();
after(() => mock.close());

const FULL = 10_000_000;
// 0.05 a session + 60 s × 0.001: the worst case of the caps below.
const SESSION_PRICE = 50_000 + 60_000;

describeEachDatabase(
  'realtime client secrets (the Realtime API as generally available)',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/live', {
        provider: 'mock',
        upstreamModel: 'realtime-1',
        pricing: { request: 0.05, second: 0.001 },
        outputModalities: ['audio'],
      });
      await putModel(env, 'acme/broken-live', {
        provider: 'mock',
        upstreamModel: 'no-value',
        pricing: { request: 0.05, second: 0.001 },
        outputModalities: ['audio'],
      });
    });

    it("the official SDK's clientSecrets.create mints a key under the deployment's caps, charged the session's worst case", async () => {
      const user = await fundedUser(env, 10);
      const openai = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const secret = await openai.realtime.clientSecrets.create({
        session: { type: 'realtime', model: 'acme/live', instructions: 'Be brief.' },
      });
      assert.equal(secret.value, 'ek_mock_secret');
      assert.equal(secret.session.type, 'realtime');
      assert.equal('model' in secret.session && secret.session.model, 'acme/live');
      // A field the provider adds reaches the client: the answer is passed through, not narrowed.
      assert.equal((secret.session as unknown as Record<string, unknown>).upstream_extra, 'kept');
      const sent = mock.requests.at(-1)!.body;
      assert.equal(mock.requests.at(-1)!.path, '/v1/realtime/client_secrets');
      assert.deepEqual(sent.expires_after, { anchor: 'created_at', seconds: 60 });
      assert.equal(sent.session.model, 'realtime-1');
      assert.equal(sent.session.max_output_tokens, 500);
      assert.equal(sent.session.instructions, 'Be brief.');
      assert.deepEqual(await wallet(env, user), {
        balance: FULL - SESSION_PRICE,
        reserved: 0,
        available: FULL - SESSION_PRICE,
      });
    });

    it('a client may ask for a shorter-lived key and fewer output tokens, and is still charged the worst case', async () => {
      const user = await fundedUser(env, 10);
      const response = await env.request('POST', '/api/v1/realtime/client_secrets', {
        token: user.key,
        body: {
          expires_after: { anchor: 'created_at', seconds: 30 },
          session: { model: 'acme/live', max_output_tokens: 100 },
        },
      });
      assert.equal(response.status, 200, response.text);
      const sent = mock.requests.at(-1)!.body;
      assert.deepEqual(sent.expires_after, { anchor: 'created_at', seconds: 30 });
      assert.equal(sent.session.max_output_tokens, 100);
      assert.equal(sent.session.type, 'realtime');
      assert.equal((await wallet(env, user)).balance, FULL - SESSION_PRICE);
    });

    it('refuses with a 400 naming the field, before anything is held or sent upstream, what would lift a cap or cannot be priced', async () => {
      const user = await fundedUser(env, 10);
      const cases: [unknown, string, RegExp][] = [
        [{ expires_after: { seconds: 61 }, session: { model: 'acme/live' } }, 'expires_after.seconds', /at most 60/],
        [{ session: { model: 'acme/live', max_output_tokens: 'inf' } }, 'session.max_output_tokens', /from 1 to 500/],
        [{ session: { model: 'acme/live', max_output_tokens: 501 } }, 'session.max_output_tokens', /from 1 to 500/],
        [{ session: { type: 'transcription', model: 'acme/live' } }, 'session.type', /"realtime" sessions only/],
        [{ session: { type: 'realtime' } }, 'session.model', /session\.model is required/],
        [{}, 'session.model', /session\.model is required/],
      ];
      const sentBefore = mock.requests.length;
      for (const [body, param, message] of cases) {
        const response = await env.request('POST', '/api/v1/realtime/client_secrets', { token: user.key, body });
        assert.equal(response.status, 400, `${JSON.stringify(body)}: ${response.text}`);
        assert.equal(response.body.error.param, param, JSON.stringify(body));
        assert.match(response.body.error.message, message);
      }
      assert.equal(mock.requests.length, sentBefore);
      assert.deepEqual(await wallet(env, user), { balance: FULL, reserved: 0, available: FULL });
    });

    it('needs the ai:audio permission (403 for a chat-only key), as realtime sessions do', async () => {
      const chatOnly = await fundedUser(env, 10, ['ai:chat']);
      const response = await env.request('POST', '/api/v1/realtime/client_secrets', {
        token: chatOnly.key,
        body: { session: { type: 'realtime', model: 'acme/live' } },
      });
      assert.equal(response.status, 403, response.text);
      assert.equal((await wallet(env, chatOnly)).balance, FULL);
    });

    it('a provider answer without the key is a 502 and charges nothing (the hold is released)', async () => {
      const user = await fundedUser(env, 10);
      const response = await env.request('POST', '/api/v1/realtime/client_secrets', {
        token: user.key,
        body: { session: { type: 'realtime', model: 'acme/broken-live' } },
      });
      assert.equal(response.status, 502, response.text);
      assert.deepEqual(await wallet(env, user), { balance: FULL, reserved: 0, available: FULL });
    });
  },
  {
    config: {
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }],
      REALTIME_ENABLED: true,
      REALTIME_MAX_SESSION_SECONDS: 60,
      REALTIME_MAX_RESPONSE_OUTPUT_TOKENS: 500,
    },
  },
);

describeEachDatabase(
  'realtime client secrets, when not enabled',
  (env) => {
    it('answer 404 naming REALTIME_ENABLED, and nothing is minted upstream', async () => {
      await putModel(env, 'acme/live', {
        provider: 'mock',
        upstreamModel: 'realtime-1',
        pricing: { request: 0.05 },
        outputModalities: ['audio'],
      });
      const user = await fundedUser(env, 10);
      const sentBefore = mock.requests.length;
      const response = await env.request('POST', '/api/v1/realtime/client_secrets', {
        token: user.key,
        body: { session: { type: 'realtime', model: 'acme/live' } },
      });
      assert.equal(response.status, 404, response.text);
      assert.match(response.body.error.message, /REALTIME_ENABLED/);
      assert.equal(mock.requests.length, sentBefore);
    });
  },
  { config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
