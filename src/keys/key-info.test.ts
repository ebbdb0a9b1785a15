import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type DashboardSession, type TestEnv } from '../testing/harness.ts';
import { createKey, fundedSession } from './testing.ts';
import { authorizeForTest } from '../oauth/testing.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A chat with the echo model; resolves the credits it was charged. */
async function chat(env: TestEnv, key: string, text: string): Promise<number> {
  const response = await env.request('POST', '/api/v1/chat/completions', {
    token: key,
    body: { model: 'tollgate/echo', messages: [{ role: 'user', content: text }] },
  });
  assert.equal(response.status, 200, response.text);
  return response.body.usage.cost;
}

const round = (credits: number) => Math.round(credits * 1e6) / 1e6;

describeEachDatabase(
  'GET /api/v1/key: the calling key, its limit and its spend',
  (env) => {
    it("answers OpenRouter's fields for a key under a daily limit: limit, limit_remaining, its usage and its request rate", async () => {
      const session = await fundedSession(env, 10);
      const key = await createKey(env, session, { permissions: ['ai:chat'], limit: 2, limitPeriod: 'daily' });
      const other = await createKey(env, session, { permissions: ['ai:chat'] });
      const charged = (await chat(env, key.key, 'one two three')) + (await chat(env, key.key, 'four'));
      await chat(env, other.key, 'a call of another key of the same user');

      const response = await env.request('GET', '/api/v1/key', { token: key.key });
      assert.equal(response.status, 200, response.text);
      const { data } = response.body;
      assert.equal(data.id, key.id);
      assert.equal(data.label, 'Editor');
      assert.deepEqual(data.permissions, ['ai:chat']);
      assert.equal(data.models, null);
      assert.match(data.created_at, ISO);
      assert.equal(data.expires_at, null);
      assert.equal(data.limit, 2);
      assert.equal(data.limit_reset, 'daily');
      assert.equal(data.limit_remaining, round(2 - charged));
      assert.equal(data.usage_daily, round(charged), "only this key's calls count");
      assert.equal(data.usage_weekly, round(charged));
      assert.equal(data.usage_monthly, round(charged));
      assert.equal(data.usage, round(charged));
      assert.deepEqual(data.rate_limit, { requests: 600, interval: '1m' }, "the key's RATE_LIMIT_KEY_RPM");
      assert.equal('spendable' in data, false, 'a key without billing:read does not see the wallet');
      assert.equal(data.is_free_tier, false);
      assert.equal(JSON.stringify(data).includes(key.key), false, "the key's value is never in the answer");
    });

    it('a key with billing:read also sees what it can spend now: the wallet lowered to its total limit', async () => {
      const session = await fundedSession(env, 1);
      const capped = await createKey(env, session, {
        permissions: ['ai:chat', 'billing:read'],
        limit: 0.5,
        limitPeriod: 'total',
      });
      const charged = await chat(env, capped.key, 'hello');
      const { data } = (await env.request('GET', '/api/v1/key', { token: capped.key })).body;
      assert.equal(data.limit_reset, null, 'a total limit never resets');
      assert.equal(data.limit_remaining, round(0.5 - charged));
      assert.equal(data.spendable, round(0.5 - charged), 'the limit is lower than the wallet');

      const open = await createKey(env, session, { permissions: ['billing:read'] });
      const unlimited = (await env.request('GET', '/api/v1/key', { token: open.key })).body.data;
      assert.equal(unlimited.limit, null);
      assert.equal(unlimited.limit_remaining, null);
      assert.equal(unlimited.usage_daily, 0);
      assert.equal(unlimited.spendable, round(1 - charged), 'the wallet is the bound');
    });

    it('is for API keys only: no credential is a 401, a revoked key a 401, an OAuth token or the dashboard a 400', async () => {
      const session = await fundedSession(env, 1);
      assert.equal((await env.request('GET', '/api/v1/key')).status, 401);
      const key = await createKey(env, session, { permissions: ['ai:models'] });
      assert.equal((await env.request('GET', '/api/v1/key', { token: key.key })).status, 200, 'no permission needed');
      assert.equal((await env.dashboard(session, 'DELETE', `/api/user/api-keys/${key.id}`)).status, 200);
      assert.equal((await env.request('GET', '/api/v1/key', { token: key.key })).status, 401);

      const dashboard = await env.dashboard(session, 'GET', '/api/v1/key');
      assert.equal(dashboard.status, 400);
      assert.equal(dashboard.body.error.code, 'INVALID_REQUEST');
      const app = await authorizeForTest(env, { user: session, scopes: ['ai:chat'] });
      const oauth = await env.request('GET', '/api/v1/key', { token: app.accessToken });
      assert.equal(oauth.status, 400);
      assert.match(oauth.body.error.message, /call it with an API key/);
    });

    it("the key list shows each limited key's spend in its period, what is left and when it resets", async () => {
      const session = await fundedSession(env, 10);
      const daily = await createKey(env, session, { permissions: ['ai:chat'], limit: 1, limitPeriod: 'daily' });
      const free = await createKey(env, session, { permissions: ['ai:chat'] });
      const charged = await chat(env, daily.key, 'count me');
      await chat(env, free.key, 'not limited');
      const list = (await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys as any[];
      const limited = list.find((k) => k.id === daily.id);
      const now = new Date(env.clock.now());
      const midnight = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
      assert.deepEqual(limited.limitUsage, {
        spent: round(charged),
        reserved: 0,
        remaining: round(1 - charged),
        resetsAt: midnight.toISOString(),
      });
      assert.equal(list.find((k) => k.id === free.id).limitUsage, null);
    });
  },
  { config: { RATE_LIMIT_KEY_RPM: 600 } },
);

describeEachDatabase(
  'GET /api/v1/key across days: the day, the week from Monday, the month and all time',
  (env) => {
    it('counts each call in the day, week and month it was made in, and in all time', async () => {
      const session = await fundedSession(env, 10);
      const key = await createKey(env, session, { permissions: ['ai:chat'] });
      const usage = async () => {
        const response = await env.request('GET', '/api/v1/key', { token: key.key });
        assert.equal(response.status, 200, response.text);
        const { usage, usage_daily, usage_weekly, usage_monthly } = response.body.data;
        return { usage, usage_daily, usage_weekly, usage_monthly };
      };

      const tuesday = await chat(env, key.key, 'Tuesday the 31st of March');
      await env.manualClock.advance(86_400_000);
      const wednesday = await chat(env, key.key, 'Wednesday, the 1st of April: a new month in the same week');
      assert.deepEqual(await usage(), {
        usage: round(tuesday + wednesday),
        usage_daily: round(wednesday),
        usage_weekly: round(tuesday + wednesday),
        usage_monthly: round(wednesday),
      });

      await env.manualClock.set('2026-04-06T00:00:00.000Z');
      const monday = await chat(env, key.key, 'Monday: a new week');
      assert.deepEqual(await usage(), {
        usage: round(tuesday + wednesday + monday),
        usage_daily: round(monday),
        usage_weekly: round(monday),
        usage_monthly: round(wednesday + monday),
      });
    });

    it("answers at OpenRouter's older path, GET /api/v1/auth/key, the same as at /api/v1/key", async () => {
      const session = await fundedSession(env, 1);
      const key = await createKey(env, session, { permissions: ['ai:chat'], limit: 0.5, limitPeriod: 'monthly' });
      await chat(env, key.key, 'hello');
      const current = await env.request('GET', '/api/v1/key', { token: key.key });
      const older = await env.request('GET', '/api/v1/auth/key', { token: key.key });
      assert.equal(older.status, 200, older.text);
      assert.deepEqual(older.body, current.body);
      assert.equal(current.body.data.rate_limit, null, 'RATE_LIMIT_KEY_RPM=0: the key has no request rate');
      assert.equal((await env.request('GET', '/api/v1/auth/key')).status, 401);
    });
  },
  { manualClock: '2026-03-31T12:00:00.000Z', config: { RATE_LIMIT_KEY_RPM: 0 } },
);
