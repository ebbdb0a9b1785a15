import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { ApiError } from '../platform/errors.ts';
import { authorizeApp, insertApiKey, insertUser } from './testing/fixtures.ts';
import type { PlaceHoldInput } from './holds.ts';

const CREDIT = 1_000_000;

/** Places the hold and returns the refusal (status and body as the HTTP layer sends them); fails when it succeeds. */
async function refusal(place: Promise<unknown>): Promise<{ status: number; body: { error: Record<string, unknown> } }> {
  try {
    await place;
  } catch (error) {
    assert.ok(error instanceof ApiError, `not an ApiError: ${error}`);
    return { status: error.status, body: JSON.parse(JSON.stringify(error.toEnvelope())) };
  }
  assert.fail('the hold was placed');
}

describeEachDatabase(
  'restriction errors (contract §2.2, §7.2)',
  (env) => {
    const ctx = () => env.service.ctx;
    const billing = () => ctx().billing;
    const hold = (input: Partial<PlaceHoldInput> & { userId: string }) =>
      billing().placeHold({ appId: null, keyId: null, amount: CREDIT, ...input });

    it('402 INSUFFICIENT_CREDITS carries exactly code, message, type, available and required in credits', async () => {
      const userId = await insertUser(ctx());
      await billing().grant(userId, 2_500_000, 'welcome');
      await hold({ userId, amount: 2 * CREDIT });
      const { status, body } = await refusal(hold({ userId, amount: 1_000_001 }));
      assert.equal(status, 402);
      assert.deepEqual(Object.keys(body), ['error']);
      assert.deepEqual(Object.keys(body.error).sort(), ['available', 'code', 'message', 'required', 'type']);
      assert.equal(body.error.code, 'INSUFFICIENT_CREDITS');
      assert.equal(body.error.type, 'insufficient_credits_error');
      assert.equal(body.error.available, 0.5);
      assert.equal(body.error.required, 1.000001);
      assert.equal(
        body.error.message,
        'Insufficient credits: this request needs up to 1.000001 credits and 0.5 are available.',
      );
    });

    it("429 for an app's daily limit: limitType daily, limit, current (spent + held), requested, resetsAt at the next midnight", async () => {
      const userId = await insertUser(ctx());
      await billing().grant(userId, 100 * CREDIT, 'welcome');
      const appId = await authorizeApp(ctx(), userId, { daily: 5 * CREDIT });
      const spent = await hold({ userId, appId, amount: 3 * CREDIT });
      await billing().settleHold(spent.holdId, 3 * CREDIT);
      await hold({ userId, appId, amount: 1_500_000 });
      const { status, body } = await refusal(hold({ userId, appId, amount: CREDIT }));
      assert.equal(status, 429);
      assert.deepEqual(Object.keys(body), ['error']);
      assert.deepEqual(body.error, {
        code: 'SPENDING_LIMIT_EXCEEDED',
        message:
          'Daily spending limit exceeded for this app: 4.5 of 5 credits used, this request needs up to 1 credits. The limit resets at 2026-03-11T00:00:00.000Z.',
        type: 'spending_limit_error',
        limitType: 'daily',
        limit: 5,
        current: 4.5,
        requested: 1,
        resetsAt: '2026-03-11T00:00:00.000Z',
      });
      // Exactly up to the limit is allowed.
      await hold({ userId, appId, amount: 500_000 });
    });

    it('429 for a monthly limit resets on the 1st; a total limit has no resetsAt', async () => {
      const userId = await insertUser(ctx());
      await billing().grant(userId, 100 * CREDIT, 'welcome');
      const monthly = await authorizeApp(ctx(), userId, { monthly: 2 * CREDIT });
      const total = await authorizeApp(ctx(), userId, { total: 2 * CREDIT });
      await hold({ userId, appId: monthly, amount: 2 * CREDIT });
      await hold({ userId, appId: total, amount: 2 * CREDIT });

      const month = await refusal(hold({ userId, appId: monthly, amount: 1 }));
      assert.equal(month.status, 429);
      assert.deepEqual(month.body.error, {
        code: 'SPENDING_LIMIT_EXCEEDED',
        message:
          'Monthly spending limit exceeded for this app: 2 of 2 credits used, this request needs up to 0.000001 credits. The limit resets at 2026-04-01T00:00:00.000Z.',
        type: 'spending_limit_error',
        limitType: 'monthly',
        limit: 2,
        current: 2,
        requested: 0.000001,
        resetsAt: '2026-04-01T00:00:00.000Z',
      });
      const ever = await refusal(hold({ userId, appId: total, amount: CREDIT }));
      assert.equal(ever.status, 429);
      assert.deepEqual(ever.body.error, {
        code: 'SPENDING_LIMIT_EXCEEDED',
        message: 'Total spending limit exceeded for this app: 2 of 2 credits used, this request needs up to 1 credits.',
        type: 'spending_limit_error',
        limitType: 'total',
        limit: 2,
        current: 2,
        requested: 1,
      });
    });

    it("limits come before the wallet, the app's before the key's, daily before monthly before total", async () => {
      const userId = await insertUser(ctx());
      const appId = await authorizeApp(ctx(), userId, { daily: 3 * CREDIT, monthly: 2 * CREDIT, total: CREDIT });
      const keyId = await insertApiKey(ctx(), userId, { appId, limit: 0, period: 'daily' });
      // No credits at all, yet the answer is the first limit in order that the request breaks.
      assert.equal((await refusal(hold({ userId, appId, keyId, amount: 4 * CREDIT }))).body.error.limitType, 'daily');
      assert.equal((await refusal(hold({ userId, appId, keyId, amount: 2_500_000 }))).body.error.limitType, 'monthly');
      assert.equal((await refusal(hold({ userId, appId, keyId, amount: 1_500_000 }))).body.error.limitType, 'total');
      const key = await refusal(hold({ userId, appId, keyId, amount: CREDIT }));
      assert.equal(key.status, 429);
      assert.equal(
        key.body.error.message,
        'Daily spending limit exceeded for this API key: 0 of 0 credits used, this request needs up to 1 credits. The limit resets at 2026-03-11T00:00:00.000Z.',
      );
      const wallet = await refusal(hold({ userId, appId, amount: CREDIT }));
      assert.equal(wallet.status, 402);
      assert.equal(wallet.body.error.code, 'INSUFFICIENT_CREDITS');
    });

    it("a key's monthly limit counts every hold placed with that key, whichever app", async () => {
      const userId = await insertUser(ctx());
      await billing().grant(userId, 10 * CREDIT, 'welcome');
      const keyId = await insertApiKey(ctx(), userId, { limit: 3 * CREDIT, period: 'monthly' });
      await hold({ userId, keyId, amount: 2 * CREDIT });
      const { body } = await refusal(hold({ userId, keyId, amount: 1_000_001 }));
      assert.deepEqual(body.error, {
        code: 'SPENDING_LIMIT_EXCEEDED',
        message:
          'Monthly spending limit exceeded for this API key: 2 of 3 credits used, this request needs up to 1.000001 credits. The limit resets at 2026-04-01T00:00:00.000Z.',
        type: 'spending_limit_error',
        limitType: 'monthly',
        limit: 3,
        current: 2,
        requested: 1.000001,
        resetsAt: '2026-04-01T00:00:00.000Z',
      });
    });

    it('a refused hold moves nothing', async () => {
      const userId = await insertUser(ctx());
      await billing().grant(userId, CREDIT, 'welcome');
      await refusal(hold({ userId, amount: 2 * CREDIT }));
      assert.deepEqual(await billing().getBalance(userId), { balance: CREDIT, reserved: 0, available: CREDIT });
      const { transactions } = await billing().listTransactions(userId);
      assert.deepEqual(
        transactions.map((t) => t.type),
        ['grant'],
      );
    });
  },
  { manualClock: '2026-03-10T08:30:00.000Z' },
);
