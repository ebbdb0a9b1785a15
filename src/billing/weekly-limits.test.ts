import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, settled, type FundedUser } from '../gateway/testing.ts';
import { authorizeForTest } from '../oauth/testing.ts';
import { ApiError } from '../platform/errors.ts';
import { authorizeApp, insertUser } from './testing/fixtures.ts';

const mock = await startMockUpstream();
after(() => mock.close());

const CREDIT = 1_000_000;
const hi = [{ role: 'user', content: 'hi' }];

/**
 * A chat with `max_tokens` of the model `acme/weekly` (1,000 micro-credits a completion token, free prompts): it
 * holds max_tokens × 0.001 credits, and the mock's answer of 4 completion tokens costs 0.004.
 */
const chat = (env: TestEnv, token: string, maxTokens: number) =>
  env.request('POST', '/api/v1/chat/completions', {
    token,
    body: { model: 'acme/weekly', messages: hi, max_tokens: maxTokens },
  });

/** The refusal's error object, for a hold placed straight through billing. */
async function refusal(place: Promise<unknown>): Promise<Record<string, unknown>> {
  const error = await place.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApiError, 'the hold was placed');
  return error.toEnvelope().error;
}

describeEachDatabase(
  'weekly spending limits (Monday 00:00 UTC)',
  (env) => {
    const billing = () => env.service.ctx.billing;

    before(async () => {
      await putModel(env, 'acme/weekly', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { completion: 1000 },
        maxOutputTokens: 4000,
      });
    });

    it("a key's weekly limit counts every day since Monday, refuses the call that would exceed it with the exact 429, and starts from zero the next Monday", async () => {
      // Monday 9 March 2026.
      env.manualClock.set('2026-03-09T08:00:00.000Z');
      const user: FundedUser = await fundedUser(env, 10, ['ai:chat']);
      const created = await env.dashboard(user.session, 'POST', '/api/user/api-keys', {
        name: 'weekly',
        permissions: ['ai:chat'],
        limit: 1,
        limitPeriod: 'weekly',
      });
      assert.equal(created.status, 200, created.text);
      const key = created.body.apiKey.key;

      assert.equal((await chat(env, key, 400)).status, 200);
      await settled(env, user);
      // Wednesday: Monday's 0.004 is not today's, but it is this week's.
      env.manualClock.set('2026-03-11T12:00:00.000Z');
      assert.equal((await chat(env, key, 500)).status, 200);
      await settled(env, user);

      // Sunday's last millisecond: 0.008 spent this week; 0.993 more would pass the limit of 1.
      env.manualClock.set('2026-03-15T23:59:59.999Z');
      const refused = await chat(env, key, 993);
      assert.equal(refused.status, 429);
      assert.deepEqual(refused.body, {
        error: {
          code: 'SPENDING_LIMIT_EXCEEDED',
          message:
            'Weekly spending limit exceeded for this API key: 0.008 of 1 credits used, this request needs up to 0.993 credits. The limit resets at 2026-03-16T00:00:00.000Z.',
          type: 'spending_limit_error',
          limitType: 'weekly',
          limit: 1,
          current: 0.008,
          requested: 0.993,
          resetsAt: '2026-03-16T00:00:00.000Z',
        },
      });
      const listed = await env.dashboard(user.session, 'GET', '/api/user/api-keys');
      const mine = listed.body.apiKeys.find((k: { id: string }) => k.id === created.body.apiKey.id);
      assert.deepEqual(
        [mine.limit, mine.limitPeriod, mine.limitUsage],
        [1, 'weekly', { spent: 0.008, reserved: 0, remaining: 0.992, resetsAt: '2026-03-16T00:00:00.000Z' }],
      );
      const info = await env.request('GET', '/api/v1/key', { token: key });
      assert.equal(info.status, 200, info.text);
      assert.deepEqual(
        [
          info.body.data.limit,
          info.body.data.limit_reset,
          info.body.data.limit_remaining,
          info.body.data.usage_daily,
          info.body.data.usage_weekly,
        ],
        [1, 'weekly', 0.992, 0, 0.008],
      );
      // Exactly up to the limit passes.
      assert.equal((await chat(env, key, 992)).status, 200);
      await settled(env, user);

      // Monday 00:00:00.000 after the full week: the new week has spent nothing, so the whole limit is there.
      env.manualClock.set('2026-03-16T00:00:00.000Z');
      const monday = await chat(env, key, 1000);
      assert.equal(monday.status, 200, monday.text);
      await settled(env, user);
      const over = await chat(env, key, 997);
      assert.deepEqual(
        [over.status, over.body.error.limitType, over.body.error.current, over.body.error.resetsAt],
        [429, 'weekly', 0.004, '2026-03-23T00:00:00.000Z'],
      );
    });

    it("an app's weekly limit is set from the dashboard, shown with the app, and refuses the app's calls with limitType weekly", async () => {
      env.manualClock.set('2026-03-10T09:00:00.000Z');
      const session = await env.createUser();
      const { clientId, accessToken } = await authorizeForTest(env, { user: session });
      await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 10 });
      const patched = await env.dashboard(session, 'PATCH', `/api/user/authorized-apps/${clientId}`, {
        limits: { daily: null, weekly: 0.5 },
      });
      assert.equal(patched.status, 200, patched.text);
      assert.deepEqual(patched.body.limits.weekly, {
        limit: 0.5,
        spent: 0,
        reserved: 0,
        resetsAt: '2026-03-16T00:00:00.000Z',
      });
      assert.equal(patched.body.limits.daily, null);

      assert.equal((await chat(env, accessToken, 300)).status, 200);
      env.manualClock.set('2026-03-12T09:00:00.000Z');
      const refused = await chat(env, accessToken, 497);
      assert.equal(refused.status, 429);
      assert.deepEqual(refused.body.error, {
        code: 'SPENDING_LIMIT_EXCEEDED',
        message:
          'Weekly spending limit exceeded for this app: 0.004 of 0.5 credits used, this request needs up to 0.497 credits. The limit resets at 2026-03-16T00:00:00.000Z.',
        type: 'spending_limit_error',
        limitType: 'weekly',
        limit: 0.5,
        current: 0.004,
        requested: 0.497,
        resetsAt: '2026-03-16T00:00:00.000Z',
      });
      const seen = await env.request('GET', '/api/user/authorized-apps', { token: accessToken });
      assert.deepEqual(seen.body.apps[0].limits.weekly, {
        limit: 0.5,
        spent: 0.004,
        reserved: 0,
        resetsAt: '2026-03-16T00:00:00.000Z',
      });
      // Removing it lifts it.
      const removed = await env.dashboard(session, 'PATCH', `/api/user/authorized-apps/${clientId}`, {
        limits: { weekly: null },
      });
      assert.equal(removed.body.limits.weekly, null);
      assert.equal((await chat(env, accessToken, 497)).status, 200);
    });

    it('with a daily and a weekly limit, the one that runs out refuses, with its own limitType; both out: daily first', async () => {
      env.manualClock.set('2026-03-09T10:00:00.000Z');
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, 100 * CREDIT, 'plenty');
      const appId = await authorizeApp(env.service.ctx, userId, { daily: 3 * CREDIT, weekly: 5 * CREDIT });
      const WEEK = 7 * 86_400_000;
      const hold = (amount: number) => billing().placeHold({ userId, appId, keyId: null, amount, ttlMs: WEEK });

      // Monday: the daily limit is the stricter.
      await billing().settleHold((await hold(3 * CREDIT)).holdId, 3 * CREDIT);
      const daily = await refusal(hold(1));
      assert.deepEqual([daily.limitType, daily.current, daily.resetsAt], ['daily', 3, '2026-03-10T00:00:00.000Z']);

      // Tuesday: a new day, the same week; 2 of today's 3 leave the week full.
      env.manualClock.set('2026-03-10T10:00:00.000Z');
      await hold(2 * CREDIT);
      assert.deepEqual(await refusal(hold(CREDIT)), {
        code: 'SPENDING_LIMIT_EXCEEDED',
        message:
          'Weekly spending limit exceeded for this app: 5 of 5 credits used, this request needs up to 1 credits. The limit resets at 2026-03-16T00:00:00.000Z.',
        type: 'spending_limit_error',
        limitType: 'weekly',
        limit: 5,
        current: 5,
        requested: 1,
        resetsAt: '2026-03-16T00:00:00.000Z',
      });

      // Both out at once: the daily limit, checked first, is the one named.
      const both = await authorizeApp(env.service.ctx, userId, { daily: CREDIT, weekly: CREDIT });
      await billing().placeHold({ userId, appId: both, keyId: null, amount: CREDIT, ttlMs: WEEK });
      const first = await refusal(billing().placeHold({ userId, appId: both, keyId: null, amount: 1 }));
      assert.equal(first.limitType, 'daily');

      // What the app can still afford (the chat's affordable cap) is bound by the weekly limit's headroom.
      const fresh = await authorizeApp(env.service.ctx, userId, { daily: 3 * CREDIT, weekly: 2 * CREDIT });
      await billing().placeHold({ userId, appId: fresh, keyId: null, amount: 1_500_000, ttlMs: WEEK });
      env.manualClock.set('2026-03-11T10:00:00.000Z');
      assert.deepEqual(await billing().spendable({ userId, appId: fresh, keyId: null }), {
        amount: 500_000,
        boundBy: 'weekly',
      });
      const report = await billing().verify({ userId });
      assert.equal(report.ok, true, JSON.stringify(report));
    });
  },
  { manualClock: '2026-03-09T08:00:00.000Z', config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
