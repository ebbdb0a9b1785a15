import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { redisBus, type InvalidationBus } from './bus.ts';
import { randomText } from './ids.ts';
import { startRedisRelay } from '../testing/redis-relay.ts';
import { connectRedis, type Redis } from './redis.ts';

const REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * Publishes as another instance would (its own origin id before the message: a bus ignores its own process's
 * echoes) until `receiver`'s listener on `channel` hears it; a subscription is confirmed after it is asked for.
 */
async function heardAcross(
  sender: Redis,
  prefix: string,
  receiver: InvalidationBus,
  channel: string,
): Promise<boolean> {
  const message = `m-${randomText(6)}`;
  let heard = false;
  receiver.subscribe(channel, (got) => void (got === message && (heard = true)));
  for (let i = 0; i < 250 && !heard; i++) {
    await sender.publish(prefix + channel, `another-instance|${message}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return heard;
}

describe('the invalidation bus over Redis', () => {
  it("carries one process's message to another's subscriber", async () => {
    const prefix = `bus-test-${randomText(8)}:`;
    const sender = await connectRedis(REDIS_URL);
    const receiver = await redisBus(REDIS_URL, prefix);
    try {
      assert.equal(await heardAcross(sender, prefix, receiver, 'keys'), true);
    } finally {
      sender.disconnect();
      await receiver.close();
    }
  });

  // An unhandled rejection ends a Node process: a Redis outage must never become one.
  it('a subscription made while Redis is away rejects nothing unhandled, and every channel is followed again once Redis is back', async () => {
    const unhandled: string[] = [];
    const record = (reason: unknown) => void unhandled.push(String(reason));
    process.on('unhandledRejection', record);
    const relay = await startRedisRelay();
    const prefix = `bus-test-${randomText(8)}:`;
    const sender = await connectRedis(REDIS_URL);
    const receiver = await redisBus(relay.url, prefix);
    try {
      assert.equal(await heardAcross(sender, prefix, receiver, 'before'), true, 'followed before the outage');
      relay.cut();
      receiver.subscribe('during', () => {});
      // Past the client's command timeout and retries: the SUBSCRIBE sent during the outage has failed.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      relay.restore();
      assert.equal(await heardAcross(sender, prefix, receiver, 'before'), true, 'followed again after the outage');
      assert.equal(
        await heardAcross(sender, prefix, receiver, 'during'),
        true,
        'the channel asked for during the outage',
      );
      assert.deepEqual(unhandled, []);
    } finally {
      sender.disconnect();
      await receiver.close();
      process.off('unhandledRejection', record);
    }
  });
});
