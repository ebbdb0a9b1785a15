import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { ApiError } from '../platform/errors.ts';
import fc from 'fast-check';
import { dayStart, periodAt, weekDays, weekStart } from './periods.ts';
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

  it('a week runs from Monday 00:00:00.000 UTC up to the next Monday, exclusive, across month and year ends', () => {
    const week = (text: string) => [
      iso(periodAt('weekly', at(text)).start),
      iso(periodAt('weekly', at(text)).resetsAt),
    ];
    // Sunday's last millisecond is in the week; Monday's first starts the next.
    assert.deepEqual(week('2026-03-15T23:59:59.999Z'), ['2026-03-09T00:00:00.000Z', '2026-03-16T00:00:00.000Z']);
    assert.deepEqual(week('2026-03-16T00:00:00.000Z'), ['2026-03-16T00:00:00.000Z', '2026-03-23T00:00:00.000Z']);
    // A week spanning a month end (Monday 30 March to Sunday 5 April 2026), seen from both months.
    assert.deepEqual(week('2026-03-31T12:00:00Z'), ['2026-03-30T00:00:00.000Z', '2026-04-06T00:00:00.000Z']);
    assert.deepEqual(week('2026-04-05T23:59:59.999Z'), ['2026-03-30T00:00:00.000Z', '2026-04-06T00:00:00.000Z']);
    // A week spanning a year end (Monday 28 December 2026 to Sunday 3 January 2027).
    assert.deepEqual(week('2026-12-31T23:59:59.999Z'), ['2026-12-28T00:00:00.000Z', '2027-01-04T00:00:00.000Z']);
    assert.deepEqual(week('2027-01-01T00:00:00.000Z'), ['2026-12-28T00:00:00.000Z', '2027-01-04T00:00:00.000Z']);
    // A leap day inside a week (Monday 28 February 2028 to Sunday 5 March 2028).
    assert.deepEqual(week('2028-02-29T08:00:00Z'), ['2028-02-28T00:00:00.000Z', '2028-03-06T00:00:00.000Z']);
    // The week's days are Monday through the day of the instant, whatever the months.
    assert.deepEqual(
      [iso(weekDays(at('2027-01-02T05:00:00Z')).from), iso(weekDays(at('2027-01-02T05:00:00Z')).through)],
      ['2026-12-28T00:00:00.000Z', '2027-01-02T00:00:00.000Z'],
    );
  });

  it('every instant of a century is in exactly one week: from its Monday 00:00 UTC, seven days long, and the day it is in', () => {
    const DAY = 86_400_000;
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) }), (instant) => {
        const { start, resetsAt } = periodAt('weekly', instant);
        const monday = new Date(start);
        assert.equal(monday.getUTCDay(), 1, 'the week starts on a Monday');
        assert.equal(start, dayStart(start), 'at 00:00:00.000 UTC');
        assert.ok(start <= instant && instant < resetsAt!, 'the instant is in its week');
        assert.equal(resetsAt! - start, 7 * DAY, 'a week is seven days of 24 hours in UTC');
        assert.equal(weekStart(instant), start);
        // The next week starts where this one resets, and this one's last millisecond is still this week.
        assert.equal(periodAt('weekly', resetsAt!).start, resetsAt);
        assert.equal(periodAt('weekly', resetsAt! - 1).start, start);
        // Its days are the week's: Monday through the instant's day, at most seven.
        const days = weekDays(instant);
        assert.equal(days.from, start);
        assert.equal(days.through, dayStart(instant));
        assert.ok((days.through - days.from) / DAY <= 6);
        // PostgreSQL's placement computes the Monday from the day's start in integer arithmetic
        // (pg-functions.ts WEEK_START): the same instant.
        const day = dayStart(instant);
        assert.equal(day - ((Math.floor(day / DAY) + 3) % 7) * DAY, start);
      }),
      { numRuns: 20_000 },
    );
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

    async function setup(limits: { daily?: number; weekly?: number; monthly?: number }) {
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

    it("a week across a month end sums both months' days while the monthly counter starts anew, until Monday 00:00:00.000", async () => {
      env.manualClock.set('2026-03-30T10:00:00.000Z');
      const { hold, userId, appId } = await setup({ weekly: 5 * CREDIT, monthly: 4 * CREDIT });
      await hold(2 * CREDIT);
      env.manualClock.set('2026-03-31T23:59:59.999Z');
      await hold(2 * CREDIT);
      // March is full (4 of 4); the week is not (4 of 5): the monthly limit refuses.
      assert.equal((await refusedWith(hold(1))).limitType, 'monthly');

      env.manualClock.set('2026-04-01T00:00:00.000Z');
      await hold(CREDIT);
      assert.deepEqual(await refusedWith(hold(1)), {
        code: 'SPENDING_LIMIT_EXCEEDED',
        message:
          'Weekly spending limit exceeded for this app: 5 of 5 credits used, this request needs up to 0.000001 credits. The limit resets at 2026-04-06T00:00:00.000Z.',
        type: 'spending_limit_error',
        limitType: 'weekly',
        limit: 5,
        current: 5,
        requested: 0.000001,
        resetsAt: '2026-04-06T00:00:00.000Z',
      });
      const [app] = await listAuthorizedApps(ctx(), userId, appId);
      assert.deepEqual(app.limits.weekly, { limit: 5, spent: 0, reserved: 5, resetsAt: '2026-04-06T00:00:00.000Z' });
      assert.deepEqual(app.limits.monthly, { limit: 4, spent: 0, reserved: 1, resetsAt: '2026-05-01T00:00:00.000Z' });

      env.manualClock.set('2026-04-05T23:59:59.999Z');
      assert.equal((await refusedWith(hold(1))).resetsAt, '2026-04-06T00:00:00.000Z');
      env.manualClock.set('2026-04-06T00:00:00.000Z');
      await hold(3 * CREDIT);
      const next = await refusedWith(hold(2 * CREDIT + 1));
      assert.deepEqual([next.limitType, next.current, next.resetsAt], ['weekly', 3, '2026-04-13T00:00:00.000Z']);
    });

    it('a week across a year end counts the old year’s days, and the new week starts at Monday 4 January 2027 00:00 UTC', async () => {
      env.manualClock.set('2026-12-28T00:00:00.000Z');
      const { hold, userId, appId } = await setup({ weekly: 3 * CREDIT });
      const monday = await hold(CREDIT);
      env.manualClock.set('2026-12-31T23:59:59.999Z');
      await hold(CREDIT);
      env.manualClock.set('2027-01-03T23:59:59.999Z');
      // Settled on Sunday, Monday's hold still counts in the day it was placed: captured 0.5, the rest released.
      await billing().settleHold(monday.holdId, CREDIT / 2);
      await hold(1_500_000);
      const sunday = await refusedWith(hold(1));
      assert.deepEqual([sunday.limitType, sunday.current, sunday.resetsAt], ['weekly', 3, '2027-01-04T00:00:00.000Z']);
      const [app] = await listAuthorizedApps(ctx(), userId, appId);
      assert.deepEqual(app.limits.weekly, {
        limit: 3,
        spent: 0.5,
        reserved: 2.5,
        resetsAt: '2027-01-04T00:00:00.000Z',
      });

      env.manualClock.set('2027-01-04T00:00:00.000Z');
      await hold(3 * CREDIT);
      const [fresh] = await listAuthorizedApps(ctx(), userId, appId);
      assert.deepEqual(fresh.limits.weekly, { limit: 3, spent: 0, reserved: 3, resetsAt: '2027-01-11T00:00:00.000Z' });
    });
  },
  { manualClock: '2026-03-10T00:00:00.000Z' },
);
