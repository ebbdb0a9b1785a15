import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { recordUsage } from '../billing/usage-records.ts';

const NOW = Date.parse('2030-01-31T12:00:00.000Z');
const DAY = 86_400_000;

describeEachDatabase(
  'GET /api/usage',
  (env) => {
    test('sums the caller’s last 30 days by model, by app and by UTC day, leaving out older calls and other users', async () => {
      const me = await env.createUser();
      const other = await env.createUser();
      const app = await env.admin('POST', '/api/admin/apps', {
        name: 'Usage App',
        redirectUris: ['http://127.0.0.1:9/cb'],
        scopes: ['read'],
        type: 'public',
      });
      assert.equal(app.status, 201, app.text);
      const appId = app.body.clientId as string;
      const base = { key_id: null, kind: 'chat', latency_ms: 5, status: 'ok', hold_id: null };
      const db = env.service.ctx.db;
      await recordUsage(db, {
        ...base,
        user_id: me.userId,
        app_id: appId,
        model: 'tollgate/echo',
        prompt_tokens: 10,
        completion_tokens: 20,
        cost: 1_500_000,
        created_at: NOW - 1000,
      });
      await recordUsage(db, {
        ...base,
        user_id: me.userId,
        app_id: appId,
        model: 'tollgate/echo',
        prompt_tokens: 1,
        completion_tokens: 2,
        cost: 500_000,
        created_at: NOW - 2 * DAY,
      });
      await recordUsage(db, {
        ...base,
        user_id: me.userId,
        app_id: null,
        model: 'openai/gpt-4o',
        prompt_tokens: 100,
        completion_tokens: 0,
        cost: 250_000,
        created_at: NOW - 29 * DAY,
      });
      await recordUsage(db, {
        ...base,
        user_id: me.userId,
        app_id: null,
        model: 'openai/gpt-4o',
        prompt_tokens: 9,
        completion_tokens: 9,
        cost: 9_000_000,
        created_at: NOW - 31 * DAY,
      });
      await recordUsage(db, {
        ...base,
        user_id: other.userId,
        app_id: appId,
        model: 'tollgate/echo',
        prompt_tokens: 5,
        completion_tokens: 5,
        cost: 7_000_000,
        created_at: NOW - 1000,
      });

      const response = await env.dashboard(me, 'GET', '/api/usage');
      assert.equal(response.status, 200, response.text);
      const report = response.body;
      assert.equal(report.from, '2030-01-02T00:00:00.000Z');
      assert.deepEqual(report.totals, {
        requests: 3,
        promptTokens: 111,
        completionTokens: 22,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        cost: 2.25,
      });
      assert.deepEqual(report.byModel, [
        {
          model: 'tollgate/echo',
          requests: 2,
          promptTokens: 11,
          completionTokens: 22,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cost: 2,
        },
        {
          model: 'openai/gpt-4o',
          requests: 1,
          promptTokens: 100,
          completionTokens: 0,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cost: 0.25,
        },
      ]);
      assert.deepEqual(report.byApp, [
        {
          appId,
          name: 'Usage App',
          requests: 2,
          promptTokens: 11,
          completionTokens: 22,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cost: 2,
        },
        {
          appId: null,
          name: 'Your API keys and dashboard',
          requests: 1,
          promptTokens: 100,
          completionTokens: 0,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cost: 0.25,
        },
      ]);
      assert.deepEqual(report.byDay, [
        { date: '2030-01-02', requests: 1, cost: 0.25 },
        { date: '2030-01-29', requests: 1, cost: 0.5 },
        { date: '2030-01-31', requests: 1, cost: 1.5 },
      ]);
    });

    test('sums each API key’s calls by key, with its name, also once it is revoked; calls without a key are in no row', async () => {
      const me = await env.createUser();
      const laptop = await env.dashboard(me, 'POST', '/api/user/api-keys', {
        name: 'laptop',
        permissions: ['ai:chat'],
      });
      const server = await env.dashboard(me, 'POST', '/api/user/api-keys', {
        name: 'server',
        permissions: ['ai:chat'],
      });
      const [laptopId, serverId] = [laptop.body.apiKey.id as string, server.body.apiKey.id as string];
      const base = {
        app_id: null,
        kind: 'chat',
        latency_ms: 5,
        status: 'ok',
        hold_id: null,
        user_id: me.userId,
        model: 'tollgate/echo',
        prompt_tokens: 1,
        completion_tokens: 1,
      };
      const db = env.service.ctx.db;
      await recordUsage(db, { ...base, key_id: laptopId, cost: 1_000_001, created_at: NOW - 1000 });
      await recordUsage(db, { ...base, key_id: laptopId, cost: 2, created_at: NOW - DAY });
      await recordUsage(db, { ...base, key_id: serverId, cost: 3_000_000, created_at: NOW - 1000 });
      await recordUsage(db, { ...base, key_id: null, cost: 5_000_000, created_at: NOW - 1000 });
      assert.equal((await env.dashboard(me, 'DELETE', `/api/user/api-keys/${serverId}`)).status, 200);
      const report = (await env.dashboard(me, 'GET', '/api/usage')).body;
      assert.deepEqual(report.byKey, [
        {
          keyId: serverId,
          name: 'server',
          requests: 1,
          promptTokens: 1,
          completionTokens: 1,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cost: 3,
        },
        {
          keyId: laptopId,
          name: 'laptop',
          requests: 2,
          promptTokens: 2,
          completionTokens: 2,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          cost: 1.000003,
        },
      ]);
    });

    test('needs billing:read: a key without it is refused, one with it sees only its user', async () => {
      const me = await env.createUser();
      const withoutBilling = await env.dashboard(me, 'POST', '/api/user/api-keys', {
        name: 'chat only',
        permissions: ['ai:chat'],
      });
      const withBilling = await env.dashboard(me, 'POST', '/api/user/api-keys', {
        name: 'billing',
        permissions: ['billing:read'],
      });
      assert.equal((await env.request('GET', '/api/usage', { token: withoutBilling.body.apiKey.key })).status, 403);
      const allowed = await env.request('GET', '/api/usage', { token: withBilling.body.apiKey.key });
      assert.equal(allowed.status, 200);
      assert.equal(allowed.body.totals.requests, 0);
      assert.equal((await env.request('GET', '/api/usage')).status, 401);
      assert.equal((await env.dashboard(me, 'GET', '/api/usage?days=91')).status, 400);
    });

    test('GET /api/admin/usage sums every user for the operator, or one user with ?userId, and refuses user credentials', async () => {
      const first = await env.createUser();
      const second = await env.createUser();
      const base = {
        key_id: null,
        app_id: null,
        kind: 'chat',
        latency_ms: 5,
        status: 'ok',
        hold_id: null,
        model: 'tollgate/echo',
        prompt_tokens: 1,
        completion_tokens: 1,
      };
      await recordUsage(env.service.ctx.db, {
        ...base,
        user_id: first.userId,
        cost: 1_000_000,
        created_at: NOW - 1000,
      });
      await recordUsage(env.service.ctx.db, {
        ...base,
        user_id: second.userId,
        cost: 3_000_000,
        created_at: NOW - 1000,
      });
      const everyone = await env.admin('GET', '/api/admin/usage');
      assert.equal(everyone.status, 200, everyone.text);
      assert.ok(everyone.body.totals.cost >= 4, 'both users are counted');
      const one = await env.admin('GET', `/api/admin/usage?userId=${second.userId}`);
      assert.deepEqual(one.body.totals, {
        requests: 1,
        promptTokens: 1,
        completionTokens: 1,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        cost: 3,
      });
      assert.equal((await env.dashboard(first, 'GET', '/api/admin/usage')).status, 401);
    });
  },
  { manualClock: new Date(NOW).toISOString() },
);
