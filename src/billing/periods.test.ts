import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { ApiError } from '../platform/errors.ts';
import { periodAt } from './periods.ts';
import { listAuthorizedApps } from '../oauth/authorized-apps.ts';
import { authorizeApp, insertUser } from './testing/fixtures.ts';

const CREDIT = 1_000_000;
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const at = (text: string) => new Date(text).getTime();

describe('limit periods', () => {
  it('a day runs from 00:00:00.000 UTC up to the next midnight, exclusive', () => {
    assert.deepEqual(
      [
        iso(periodAt('daily', at('2026-03-10T23:59:59.999Z')).start),
        iso(periodAt('daily', at('2026-03-10T23:59:59.999Z')).resetsAt),
      ],
      ['2026-03-10T00:00:00.000Z', '2026-03-11T00:00:00.000Z'],
    );
    assert.deepEqual(
      [
        iso(periodAt('daily', at('2026-03-11T00:00:00.000Z')).start),
        iso(periodAt('daily', at('2026-03-11T00:00:00.000Z')).resetsAt),
      ],
      ['2026-03-11T00:00:00.000Z', '2026-03-12T00:00:00.000Z'],
    );
  });

  it('month ends, year ends and leap days roll over to the right midnight', () => {
    assert.equal(iso(periodAt('daily', at('2026-01-31T12:00:00Z')).resetsAt), '2026-02-01T00:00:00.000Z');
    assert.equal(iso(periodAt('monthly', at('2026-01-31T23:59:59.999Z')).resetsAt), '2026-02-01T00:00:00.000Z');
    assert.equal(iso(periodAt('monthly', at('2026-02-01T00:00:00.000Z')).resetsAt), '2026-03-01T00:00:00.000Z');
    assert.equal(iso(periodAt('monthly', at('2026-12-31T23:59:59.999Z')).resetsAt), '2027-01-01T00:00:00.000Z');
    assert.equal(iso(periodAt('daily', at('2028-02-28T23:59:59.999Z')).resetsAt), '2028-02-29T00:00:00.000Z');
    assert.equal(iso(periodAt('daily', at('2028-02-29T00:00:00.000Z')).resetsAt), '2028-03-01T00:00:00.000Z');
    assert.equal(iso(periodAt('monthly', at('2028-02-29T23:59:59.999Z')).start), '2028-02-01T00:00:00.000Z');
    assert.equal(iso(periodAt('daily', at('2027-02-28T12:00:00Z')).resetsAt), '2027-03-01T00:00:00.000Z');
    assert.deepEqual(periodAt('total', at('2028-02-29T00:00:00.000Z')), { start: 0, resetsAt: null });
  });
});

describeEachDatabase(
  'spending limits at period boundaries',
  (env) => {
    const ctx = () => env.service.ctx;
    const billing = () => ctx().billing;

    async function refusedWith(place: Promise<unknown>): Promise<Record<string, unknown>> {
      const error = await place.then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(error instanceof ApiError, 'the hold was placed');
      return error.toEnvelope().error;
    }

    async function setup(limits: { daily?: number; monthly?: number }) {
      const userId = await insertUser(ctx());
      await billing().grant(userId, 1000 * CREDIT, 'welcome');
      const appId = await authorizeApp(ctx(), userId, limits);
      return {
        userId,
        appId,
        hold: (amount: number) => billing().placeHold({ userId, appId, keyId: null, amount, ttlMs: 7 * 86_400_000 }),
      };
    }

    it('a hold at 23:59:59.999 counts in that day; at 00:00:00.000 the daily counter starts anew and resetsAt moves', async () => {
      env.manualClock.set('2026-03-10T23:59:59.999Z');
      const { hold, userId, appId } = await setup({ daily: 5 * CREDIT });
      const late = await hold(4 * CREDIT);
      const refused = await refusedWith(hold(2 * CREDIT));
      assert.equal(refused.current, 4);
      assert.equal(refused.resetsAt, '2026-03-11T00:00:00.000Z');

      env.manualClock.set('2026-03-11T00:00:00.000Z');
      // Settled after midnight, the late hold's capture still belongs to the day it was placed in.
      await billing().settleHold(late.holdId, 4 * CREDIT);
      await hold(5 * CREDIT);
      const next = await refusedWith(hold(1));
      assert.equal(next.current, 5);
      assert.equal(next.resetsAt, '2026-03-12T00:00:00.000Z');

      // The dashboard's view agrees: nothing captured yet today, the new hold reserved.
      const [app] = await listAuthorizedApps(ctx(), userId, appId);
      assert.deepEqual(app.limits.daily, { limit: 5, spent: 0, reserved: 5, resetsAt: '2026-03-12T00:00:00.000Z' });
    });

    it('the monthly counter starts anew on the 1st at 00:00:00.000, after the last millisecond of the month', async () => {
      env.manualClock.set('2026-01-31T23:59:59.999Z');
      const { hold } = await setup({ monthly: 3 * CREDIT });
      await billing().settleHold((await hold(3 * CREDIT)).holdId, 3 * CREDIT);
      const refused = await refusedWith(hold(1));
      assert.equal(refused.limitType, 'monthly');
      assert.equal(refused.resetsAt, '2026-02-01T00:00:00.000Z');
      env.manualClock.set('2026-02-01T00:00:00.000Z');
      await hold(3 * CREDIT);
      assert.equal((await refusedWith(hold(1))).resetsAt, '2026-03-01T00:00:00.000Z');
    });

    it('Feb 29 of 2028 is a day of its own, and February 2028 ends after it', async () => {
      env.manualClock.set('2028-02-28T23:59:59.999Z');
      const { hold } = await setup({ daily: 3 * CREDIT, monthly: 4_500_000 });
      await hold(2 * CREDIT);
      assert.equal((await refusedWith(hold(1_500_000))).resetsAt, '2028-02-29T00:00:00.000Z');
      env.manualClock.set('2028-02-29T00:00:00.000Z');
      await hold(2 * CREDIT);
      const leapDay = await refusedWith(hold(1_500_000));
      assert.equal(leapDay.limitType, 'daily');
      assert.equal(leapDay.current, 2);
      assert.equal(leapDay.resetsAt, '2028-03-01T00:00:00.000Z');
      env.manualClock.set('2028-02-29T23:59:59.999Z');
      const monthEnd = await refusedWith(hold(600_000));
      assert.equal(monthEnd.limitType, 'monthly');
      assert.equal(monthEnd.current, 4);
      assert.equal(monthEnd.resetsAt, '2028-03-01T00:00:00.000Z');
      env.manualClock.set('2028-03-01T00:00:00.000Z');
      await hold(3 * CREDIT);
    });
  },
  { manualClock: '2026-03-10T00:00:00.000Z' },
);
