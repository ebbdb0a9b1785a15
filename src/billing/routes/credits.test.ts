import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import { authorizeForTest } from '../../oauth/testing.ts';
import { startMockUpstream } from '../../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, readSseFrames, settled, type FundedUser } from '../../gateway/testing.ts';

const mock = await startMockUpstream();
after(() => mock.close());

const round = (credits: number) => Math.round(credits * 1e6) / 1e6;
const hi = [{ role: 'user', content: 'hi' }];

/** `GET /api/v1/credits` with `token`, answered 200; resolves its data. */
async function credits(env: TestEnv, token: string): Promise<{ total_credits: number; total_usage: number }> {
  const response = await env.request('GET', '/api/v1/credits', { token });
  assert.equal(response.status, 200, response.text);
  assert.deepEqual(Object.keys(response.body.data).sort(), ['total_credits', 'total_usage']);
  return response.body.data;
}

/** The wallet's balance in credits, as `GET /api/wallet/balance` shows it. */
async function balance(env: TestEnv, user: FundedUser): Promise<number> {
  return (await env.dashboard(user.session, 'GET', '/api/wallet/balance')).body.balance;
}

describeEachDatabase(
  'GET /api/v1/credits: what came into the wallet and what calls took',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/chat', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 3, completion: 5, request: 0.0001 },
        maxOutputTokens: 100,
      });
    });

    it('after a grant, an adjustment and some calls (one streamed), total_credits - total_usage is the balance', async () => {
      const user = await fundedUser(env, 10);
      assert.deepEqual(await credits(env, user.key), { total_credits: 10, total_usage: 0 });

      let charged = 0;
      for (const content of ['one', 'two three']) {
        const response = await env.request('POST', '/api/v1/chat/completions', {
          token: user.key,
          body: { model: 'acme/chat', messages: [{ role: 'user', content }] },
        });
        assert.equal(response.status, 200, response.text);
        charged += response.body.usage.cost;
      }
      const streamed = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'acme/chat',
          messages: hi,
          stream: true,
          stream_options: { include_usage: true },
        }),
      });
      const usageChunk = (await readSseFrames(streamed)).map((frame) => frame.data).find((data) => data?.usage);
      charged += usageChunk.usage.cost;
      await settled(env, user);
      const adjusted = await env.admin('POST', `/api/admin/users/${user.session.userId}/credits`, {
        amount: -0.5,
        reason: 'correction',
      });
      assert.equal(adjusted.status, 200, adjusted.text);
      await env.admin('POST', `/api/admin/users/${user.session.userId}/credits`, { amount: 2, reason: 'more' });

      const data = await credits(env, user.key);
      assert.equal(data.total_credits, 11.5, 'the grants less the adjustment');
      assert.equal(data.total_usage, round(charged), 'what the calls were charged');
      assert.equal(round(data.total_credits - data.total_usage), await balance(env, user));
      assert.equal((await env.admin('GET', '/api/admin/ledger/verify')).body.ok, true);
    });

    it("counts only the caller's own wallet; a user who never had credits has zeros", async () => {
      const user = await fundedUser(env, 3);
      const other = await fundedUser(env, 7);
      const response = await env.request('POST', '/api/v1/chat/completions', {
        token: other.key,
        body: { model: 'acme/chat', messages: hi },
      });
      assert.equal(response.status, 200);
      assert.deepEqual(await credits(env, user.key), { total_credits: 3, total_usage: 0 });
      assert.deepEqual(await credits(env, other.key), { total_credits: 7, total_usage: response.body.usage.cost });
      const broke = await fundedUser(env, 0);
      assert.deepEqual(await credits(env, broke.key), { total_credits: 0, total_usage: 0 });
    });

    it("any API key of the user, the dashboard and an app's token with billing:read read it; without billing:read an app is refused", async () => {
      const user = await fundedUser(env, 4, ['ai:models']);
      assert.deepEqual(
        await credits(env, user.key),
        { total_credits: 4, total_usage: 0 },
        'a key without billing:read',
      );
      const dashboard = await env.dashboard(user.session, 'GET', '/api/v1/credits');
      assert.equal(dashboard.status, 200);
      const reader = await authorizeForTest(env, { user: user.session, scopes: ['billing:read'] });
      assert.deepEqual(await credits(env, reader.accessToken), { total_credits: 4, total_usage: 0 });

      const chatOnly = await authorizeForTest(env, { user: user.session, scopes: ['ai:chat'] });
      const refused = await env.request('GET', '/api/v1/credits', { token: chatOnly.accessToken });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, 'PERMISSION_DENIED');
      assert.match(refused.body.error.message, /billing:read/);
      assert.equal((await env.request('GET', '/api/v1/credits')).status, 401);
      assert.equal((await env.request('GET', '/api/v1/credits', { token: 'ak_not_a_key' })).status, 401);
    });
  },
  { config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
