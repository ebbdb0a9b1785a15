import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { memoryBackoff, redisBackoff, type Backoff } from './ratelimit.ts';
import { connectRedis } from './redis.ts';
import { randomText } from './ids.ts';

const FREE = 20;
const MAX_DELAY_MS = 900_000;
/** An address's rate: its free failures an hour. */
const FORGET_EVERY_MS = 3_600_000 / FREE;

/** The growing-delay throttle, run the same on this process's counters and on Redis's. */
function backoffBehaviour(name: string, make: () => Backoff) {
  describe(`${name} backoff`, () => {
    it('without a leak, the free attempts go ahead and the next one starts a wait that lasts', async () => {
      const backoff = make();
      const subject = `s-${randomText(8)}`;
      let now = 1_000_000;
      for (let i = 0; i <= FREE; i++)
        assert.equal((await backoff.attempt(subject, FREE, MAX_DELAY_MS, now)).allowed, true);
      assert.deepEqual(await backoff.attempt(subject, FREE, MAX_DELAY_MS, now), {
        allowed: false,
        retryAfterSeconds: 1,
      });
      // An hour later the count is still there: the next failure doubles the wait.
      now += 3_600_000;
      assert.equal((await backoff.attempt(subject, FREE, MAX_DELAY_MS, now)).allowed, true);
      assert.deepEqual(await backoff.attempt(subject, FREE, MAX_DELAY_MS, now), {
        allowed: false,
        retryAfterSeconds: 2,
      });
    });

    it('with a leak, failures spread below the rate never add up to a wait, over a working week', async () => {
      const backoff = make();
      const subject = `s-${randomText(8)}`;
      let now = 1_000_000;
      // 12 failures an hour (the rate is 20), eight hours a day, five days: 480 failures from one address.
      for (let failure = 0; failure < 480; failure++) {
        const decision = await backoff.attempt(subject, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS);
        assert.deepEqual(decision, { allowed: true, retryAfterSeconds: 0 }, `failure ${failure + 1}`);
        now += 5 * 60_000;
        if (failure % 96 === 95) now += 16 * 3_600_000;
      }
    });

    it('with a leak, a burst still waits, and the wait goes once the burst has leaked away', async () => {
      const backoff = make();
      const subject = `s-${randomText(8)}`;
      let now = 1_000_000;
      for (let i = 0; i <= FREE; i++)
        assert.equal((await backoff.attempt(subject, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS)).allowed, true);
      assert.deepEqual(await backoff.attempt(subject, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS), {
        allowed: false,
        retryAfterSeconds: 1,
      });
      // Two of the burst's attempts leak in twice the interval: the next one is free again, then the one after
      // it (back at the threshold plus one) starts the wait anew at 1 s, rather than doubling it.
      now += 2 * FORGET_EVERY_MS;
      assert.equal((await backoff.attempt(subject, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS)).allowed, true);
      assert.equal((await backoff.attempt(subject, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS)).allowed, true);
      assert.deepEqual(await backoff.attempt(subject, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS), {
        allowed: false,
        retryAfterSeconds: 1,
      });
      // After a whole hour every failure of the burst has gone: FREE more go ahead at once.
      now += 3_600_000;
      for (let i = 0; i < FREE; i++)
        assert.equal(
          (await backoff.attempt(subject, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS)).allowed,
          true,
          `attempt ${i + 1}`,
        );
    });

    it('a refund gives an attempt back under a leak too: successes never count', async () => {
      const backoff = make();
      const subject = `s-${randomText(8)}`;
      const now = 1_000_000;
      for (let i = 0; i < 500; i++) {
        assert.equal((await backoff.attempt(subject, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS)).allowed, true);
        await backoff.refund(subject, FREE);
      }
    });

    it("a reset answers how many attempts it forgot, and a refund of that many lifts a shared subject's wait", async () => {
      const backoff = make();
      const [account, address] = [`a-${randomText(8)}`, `s-${randomText(8)}`];
      const now = 1_000_000;
      for (let i = 0; i < 3; i++) await backoff.attempt(account, FREE, MAX_DELAY_MS, now);
      for (let i = 0; i <= FREE + 1; i++) await backoff.attempt(address, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS);
      assert.equal((await backoff.attempt(address, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS)).allowed, false);
      assert.equal(await backoff.reset(account), 3);
      assert.equal(await backoff.reset(account), 0);
      await backoff.refund(address, FREE, 3);
      assert.equal((await backoff.attempt(address, FREE, MAX_DELAY_MS, now, FORGET_EVERY_MS)).allowed, true);
    });
  });
}

backoffBehaviour('in-process', memoryBackoff);

let redis: Redis;
describe('Redis backoff', () => {
  before(async () => {
    redis = await connectRedis('redis://127.0.0.1:6379');
  });
  after(async () => {
    await redis.quit();
  });
  backoffBehaviour('Redis', () => redisBackoff(redis, `tollgate-test:bo:${randomText(8)}:`));
});
