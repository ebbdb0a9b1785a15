import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { ApiError } from '../platform/errors.ts';
import { authorizeApp, insertUser } from './testing/fixtures.ts';

const CLOCK = '2026-03-10T15:00:00.000Z';
const AMOUNT = 100_000; // 0.1 credit per hold
const CONCURRENT = 200;
const FITS = 50;

/** The exact bodies the 150 refused holds must carry. */
const INSUFFICIENT = {
  status: 402,
  error: {
    code: 'INSUFFICIENT_CREDITS',
    message: 'Insufficient credits: this request needs up to 0.1 credits and 0 are available.',
    type: 'insufficient_credits_error',
    available: 0,
    required: 0.1,
  },
};
const DAILY_LIMIT = {
  status: 429,
  error: {
    code: 'SPENDING_LIMIT_EXCEEDED',
    message:
      'Daily spending limit exceeded for this app: 5 of 5 credits used, this request needs up to 0.1 credits. The limit resets at 2026-03-11T00:00:00.000Z.',
    type: 'spending_limit_error',
    limitType: 'daily',
    limit: 5,
    current: 5,
    requested: 0.1,
    resetsAt: '2026-03-11T00:00:00.000Z',
  },
};

/** The 429 of an app's weekly limit of 6 credits, 1 of them spent on Monday and 5 held since (Tuesday). */
const WEEKLY_LIMIT = {
  status: 429,
  error: {
    code: 'SPENDING_LIMIT_EXCEEDED',
    message:
      'Weekly spending limit exceeded for this app: 6 of 6 credits used, this request needs up to 0.1 credits. The limit resets at 2026-03-16T00:00:00.000Z.',
    type: 'spending_limit_error',
    limitType: 'weekly',
    limit: 6,
    current: 6,
    requested: 0.1,
    resetsAt: '2026-03-16T00:00:00.000Z',
  },
};
const MONDAY = '2026-03-09T15:00:00.000Z';
const SPENT_ON_MONDAY = 10;

/** Places `count` holds at once in this process; returns how many were placed and each refusal body with its count. */
async function placeConcurrently(env: TestEnv, userId: string, appId: string | null, count: number) {
  const refusals: Record<string, number> = {};
  let placed = 0;
  await Promise.all(
    Array.from({ length: count }, async () => {
      try {
        await env.service.ctx.billing.placeHold({ userId, appId, keyId: null, amount: AMOUNT });
        placed += 1;
      } catch (error) {
        const body =
          error instanceof ApiError
            ? JSON.stringify({ status: error.status, ...error.toEnvelope() })
            : `unexpected: ${error}`;
        refusals[body] = (refusals[body] ?? 0) + 1;
      }
    }),
  );
  return { placed, refusals };
}

/** Runs a hold worker process on the test's database; resolves once it is ready, with a function that fires it. */
async function startWorker(env: TestEnv, job: { userId: string; appId: string | null; count: number }) {
  const child = spawn(
    process.execPath,
    ['src/billing/testing/hold-worker.ts', JSON.stringify({ ...job, amount: AMOUNT, at: CLOCK })],
    {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { ...process.env, ...env.space.env(), TOLLGATE_ADMIN_TOKEN: env.adminToken },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async () => {
    const line = await lines.next();
    if (line.done) throw new Error(`hold worker ended early:\n${stderr}`);
    return JSON.parse(line.value);
  };
  assert.deepEqual(await next(), { ready: true });
  return {
    async fire(): Promise<{ placed: number; refusals: Record<string, number> }> {
      child.stdin!.write('go\n');
      const result = await next();
      await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)));
      return result;
    },
  };
}

function assertExactly(result: { placed: number; refusals: Record<string, number> }, refusal: object) {
  assert.equal(result.placed, FITS, JSON.stringify(result.refusals));
  assert.deepEqual(result.refusals, { [JSON.stringify(refusal)]: CONCURRENT - FITS });
}

describeEachDatabase(
  'billing under concurrency',
  (env) => {
    const billing = () => env.service.ctx.billing;

    async function assertNoOverspend(userId: string, balanceMicros: number) {
      assert.deepEqual(await billing().getBalance(userId), {
        balance: balanceMicros,
        reserved: FITS * AMOUNT,
        available: balanceMicros - FITS * AMOUNT,
      });
      const report = await billing().verify({ userId });
      assert.equal(report.ok, true, JSON.stringify(report));
    }

    it(`${CONCURRENT} concurrent holds against a balance that covers ${FITS}: ${FITS} placed, the rest get the exact 402 body`, async () => {
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, FITS * AMOUNT, 'exactly fifty');
      assertExactly(await placeConcurrently(env, userId, null, CONCURRENT), INSUFFICIENT);
      await assertNoOverspend(userId, FITS * AMOUNT);
    });

    it(`${CONCURRENT} concurrent holds under an app's daily limit that covers ${FITS}: ${FITS} placed, the rest get the exact 429 body`, async () => {
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, 100 * FITS * AMOUNT, 'plenty');
      const appId = await authorizeApp(env.service.ctx, userId, { daily: FITS * AMOUNT });
      assertExactly(await placeConcurrently(env, userId, appId, CONCURRENT), DAILY_LIMIT);
      await assertNoOverspend(userId, 100 * FITS * AMOUNT);
    });

    /**
     * A user with plenty of credits and an app whose weekly limit covers what was spent on Monday and FITS more
     * holds; the clock back on Tuesday, CLOCK. The week's spend is the sum of the days' counters, so the holds
     * placed at once must each see Monday's spend and one another's.
     */
    async function weeklyLimitedApp() {
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, 100 * FITS * AMOUNT, 'plenty');
      const appId = await authorizeApp(env.service.ctx, userId, { weekly: (SPENT_ON_MONDAY + FITS) * AMOUNT });
      env.manualClock.set(MONDAY);
      for (let i = 0; i < SPENT_ON_MONDAY; i++) {
        const { holdId } = await billing().placeHold({ userId, appId, keyId: null, amount: AMOUNT });
        await billing().settleHold(holdId, AMOUNT);
      }
      env.manualClock.set(CLOCK);
      return { userId, appId };
    }

    it(`${CONCURRENT} concurrent holds under an app's weekly limit that covers Monday's spend and ${FITS} more: ${FITS} placed on Tuesday, the rest get the exact 429 body`, async () => {
      const { userId, appId } = await weeklyLimitedApp();
      assertExactly(await placeConcurrently(env, userId, appId, CONCURRENT), WEEKLY_LIMIT);
      await assertNoOverspend(userId, 100 * FITS * AMOUNT - SPENT_ON_MONDAY * AMOUNT);
    });

    it('concurrent settlements of the same holds capture each exactly once', async () => {
      const userId = await insertUser(env.service.ctx);
      await billing().grant(userId, 10 * AMOUNT, 'ten');
      const holds = await Promise.all(
        Array.from({ length: 10 }, () => billing().placeHold({ userId, appId: null, keyId: null, amount: AMOUNT })),
      );
      const results = await Promise.all(
        holds.flatMap(({ holdId }) => [
          billing().settleHold(holdId, 2 * AMOUNT),
          billing().settleHold(holdId, AMOUNT / 2),
          billing().releaseHold(holdId),
        ]),
      );
      const captured = results.reduce((sum, r) => sum + ('captured' in r ? r.captured : 0), 0);
      const closes = results.filter((r) => ('settled' in r ? r.settled : r.released)).length;
      assert.equal(closes, 10);
      const balance = await billing().getBalance(userId);
      assert.equal(balance.reserved, 0);
      assert.equal(balance.balance, 10 * AMOUNT - captured);
      assert.equal((await billing().verify({ userId })).ok, true);
    });

    const crossProcess = env.kind === 'postgres' ? {} : { skip: 'two processes share a database only on PostgreSQL' };

    it(
      `two processes on one PostgreSQL, ${CONCURRENT / 2} holds each, against a balance that covers ${FITS}: ${FITS} placed in all, 402 for the rest`,
      crossProcess,
      async () => {
        const userId = await insertUser(env.service.ctx);
        await billing().grant(userId, FITS * AMOUNT, 'exactly fifty');
        const workers = await Promise.all([
          startWorker(env, { userId, appId: null, count: CONCURRENT / 2 }),
          startWorker(env, { userId, appId: null, count: CONCURRENT / 2 }),
        ]);
        const [a, b] = await Promise.all(workers.map((worker) => worker.fire()));
        assertExactly(merge(a, b), INSUFFICIENT);
        await assertNoOverspend(userId, FITS * AMOUNT);
      },
    );

    it(
      `two processes on one PostgreSQL under an app's daily limit that covers ${FITS}: ${FITS} placed in all, 429 for the rest`,
      crossProcess,
      async () => {
        const userId = await insertUser(env.service.ctx);
        await billing().grant(userId, 100 * FITS * AMOUNT, 'plenty');
        const appId = await authorizeApp(env.service.ctx, userId, { daily: FITS * AMOUNT });
        const workers = await Promise.all([
          startWorker(env, { userId, appId, count: CONCURRENT / 2 }),
          startWorker(env, { userId, appId, count: CONCURRENT / 2 }),
        ]);
        const [a, b] = await Promise.all(workers.map((worker) => worker.fire()));
        assertExactly(merge(a, b), DAILY_LIMIT);
        await assertNoOverspend(userId, 100 * FITS * AMOUNT);
      },
    );

    it(
      `two processes on one PostgreSQL under an app's weekly limit that covers Monday's spend and ${FITS} more: ${FITS} placed in all, 429 for the rest`,
      crossProcess,
      async () => {
        const { userId, appId } = await weeklyLimitedApp();
        const workers = await Promise.all([
          startWorker(env, { userId, appId, count: CONCURRENT / 2 }),
          startWorker(env, { userId, appId, count: CONCURRENT / 2 }),
        ]);
        const [a, b] = await Promise.all(workers.map((worker) => worker.fire()));
        assertExactly(merge(a, b), WEEKLY_LIMIT);
        await assertNoOverspend(userId, 100 * FITS * AMOUNT - SPENT_ON_MONDAY * AMOUNT);
      },
    );
  },
  { manualClock: CLOCK },
);

function merge(...results: Array<{ placed: number; refusals: Record<string, number> }>) {
  const refusals: Record<string, number> = {};
  for (const result of results)
    for (const [body, count] of Object.entries(result.refusals)) refusals[body] = (refusals[body] ?? 0) + count;
  return { placed: results.reduce((sum, r) => sum + r.placed, 0), refusals };
}
