import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { insertUser } from './testing/fixtures.ts';

const CREDIT = 1_000_000;

describeEachDatabase(
  'billing holds',
  (env) => {
    const billing = () => env.service.ctx.billing;

    it('a settled hold captures the actual cost and gives the rest back', async () => {
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, 10 * CREDIT, 'welcome');
      const { holdId } = await billing().placeHold({ userId, appId: null, keyId: null, amount: 3 * CREDIT });
      assert.match(holdId, /^hold_/);
      assert.deepEqual(await billing().getBalance(userId), {
        balance: 10 * CREDIT,
        reserved: 3 * CREDIT,
        available: 7 * CREDIT,
      });
      assert.deepEqual(await billing().settleHold(holdId, 1_250_000), { settled: true, captured: 1_250_000 });
      assert.deepEqual(await billing().getBalance(userId), { balance: 8_750_000, reserved: 0, available: 8_750_000 });
    });

    it('a hold settles exactly once, and never for more than it held', async () => {
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, 5 * CREDIT, 'welcome');
      const { holdId } = await billing().placeHold({ userId, appId: null, keyId: null, amount: 2 * CREDIT });
      const [first, second, release] = await Promise.all([
        billing().settleHold(holdId, 9 * CREDIT),
        billing().settleHold(holdId, 9 * CREDIT),
        billing().releaseHold(holdId),
      ]);
      // Exactly one of the three closes the hold; a settlement never captures more than was held.
      const closes = [first, second].filter((r) => r.settled).length + Number(release.released);
      assert.equal(closes, 1);
      for (const result of [first, second])
        assert.deepEqual(
          result,
          result.settled ? { settled: true, captured: 2 * CREDIT } : { settled: false, captured: 0 },
        );
      const balance = release.released ? 5 * CREDIT : 3 * CREDIT;
      assert.deepEqual(await billing().getBalance(userId), { balance, reserved: 0, available: balance });
      assert.deepEqual(await billing().settleHold('hold_unknown', 1), { settled: false, captured: 0 });
    });

    it('a released hold costs nothing and cannot be settled afterwards', async () => {
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, CREDIT, 'welcome');
      const { holdId } = await billing().placeHold({ userId, appId: null, keyId: null, amount: CREDIT });
      assert.deepEqual(await billing().releaseHold(holdId), { released: true });
      assert.deepEqual(await billing().settleHold(holdId, CREDIT), { settled: false, captured: 0 });
      assert.deepEqual(await billing().getBalance(userId), { balance: CREDIT, reserved: 0, available: CREDIT });
    });

    it('the cron route expires holds past their expiry and gives their credits back', async () => {
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, CREDIT, 'welcome');
      const { holdId, expiresAt } = await billing().placeHold({
        userId,
        appId: null,
        keyId: null,
        amount: 400_000,
        ttlMs: 60_000,
      });
      const early = await env.admin('POST', '/api/admin/cron/release-expired-holds');
      assert.equal(early.status, 200);
      assert.equal((await billing().getBalance(userId)).reserved, 400_000);
      env.manualClock.set(expiresAt);
      const swept = await env.admin('POST', '/api/admin/cron/release-expired-holds');
      assert.equal(swept.status, 200);
      assert.ok(swept.body.result.expired >= 1);
      assert.deepEqual(await billing().getBalance(userId), { balance: CREDIT, reserved: 0, available: CREDIT });
      assert.deepEqual(await billing().settleHold(holdId, 1), { settled: false, captured: 0 });
      const verify = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(verify.body.ok, true, JSON.stringify(verify.body));
    });

    it("placing a hold first expires the user's own stale holds, so they never block available credits", async () => {
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, CREDIT, 'welcome');
      await billing().placeHold({ userId, appId: null, keyId: null, amount: CREDIT, ttlMs: 1000 });
      env.manualClock.advance(1000);
      await billing().placeHold({ userId, appId: null, keyId: null, amount: CREDIT });
      assert.deepEqual(await billing().getBalance(userId), { balance: CREDIT, reserved: CREDIT, available: 0 });
    });

    it('a refund gives back part of a capture, never more than was captured', async () => {
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, 2 * CREDIT, 'welcome');
      const { holdId } = await billing().placeHold({ userId, appId: null, keyId: null, amount: CREDIT });
      await billing().settleHold(holdId, 600_000);
      assert.deepEqual(await billing().refund(holdId, 500_000, 'provider failed'), {
        refunded: 500_000,
        balance: 1_900_000,
      });
      await assert.rejects(billing().refund(holdId, 100_001), (error: any) => error.code === 'INVALID_REQUEST');
      assert.deepEqual(await billing().refund(holdId, 100_000), { refunded: 100_000, balance: 2 * CREDIT });
      assert.equal((await billing().verify({ userId })).ok, true);
    });

    it('a hold for a negative or fractional amount is a programming error, not a movement', async () => {
      const userId = await insertUser(env.service.ctx);
      await assert.rejects(billing().placeHold({ userId, appId: null, keyId: null, amount: -1 }), RangeError);
      await assert.rejects(billing().placeHold({ userId, appId: null, keyId: null, amount: 0.5 }), RangeError);
      await assert.rejects(billing().settleHold('hold_x', -1), RangeError);
    });

    it('the ledger verifies: every movement balanced, wallets equal to their entries', async () => {
      const response = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(response.status, 200);
      assert.deepEqual(response.body.differences, []);
      assert.deepEqual(response.body.negativeAvailable, []);
      assert.equal(response.body.ok, true);
      assert.ok(response.body.wallets > 0 && response.body.entries > 0);
    });
  },
  { manualClock: '2026-03-10T12:00:00.000Z' },
);
