import { EventEmitter } from 'node:events';
import { connectRedis, ensureRedisReachable, type Redis } from './redis.ts';
import type { Logger } from './logger.ts';

/**
 * Tells every process that something changed (a key or token revoked, a model edited) so caches drop it.
 * In one process it is an EventEmitter; with `REDIS_URL` the same messages cross instances through Redis
 * pub/sub, and a process always hears its own messages at once, before Redis echoes them.
 */
export interface InvalidationBus {
  publish(channel: string, message: string): void;
  subscribe(channel: string, listener: (message: string) => void): void;
  close(): Promise<void>;
}

/** The in-process bus. */
export function localBus(): InvalidationBus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    publish: (channel, message) => void emitter.emit(channel, message),
    subscribe: (channel, listener) => void emitter.on(channel, listener),
    close: async () => void emitter.removeAllListeners(),
  };
}

const ORIGIN = crypto.randomUUID();

/**
 * The bus over Redis pub/sub. Messages carry the publishing process's id so it does not apply its own
 * message twice. Channels are prefixed to keep clear of other applications' channels. Pub/sub ignores the
 * database number of `REDIS_URL`, so two deployments on one Redis (each on its own database) hear each other's
 * messages: harmless, as a message only drops a cache entry early, never grants or changes anything.
 */
export async function redisBus(url: string, prefix = 'tollgate:', log?: Logger): Promise<InvalidationBus> {
  const local = localBus();
  // The subscriber's channels are subscribed again by us, not by ioredis (see `follow`).
  const [publisher, subscriber]: Redis[] = await Promise.all([
    connectRedis(url, log),
    connectRedis(url, log, { autoResubscribe: false }),
  ]);
  await ensureRedisReachable(url, [publisher, subscriber]);
  const channels = new Set<string>();
  let closing = false;
  /**
   * Subscribes to one channel; a failure is logged, never left unhandled. ioredis's own resubscription after a
   * reconnection leaves its promise unhandled, and so did ours: a SUBSCRIBE that failed (Redis away past the
   * retries, or the connection closed at shutdown) was an unhandled rejection, which ends a Node process.
   * Every reconnection subscribes to every channel again ('ready' below), so a failed one is retried then.
   */
  const follow = (channel: string) =>
    subscriber.subscribe(prefix + channel).catch((error: Error) => {
      if (!closing)
        log?.warn(
          { channel, reason: error.message },
          'Redis SUBSCRIBE failed: invalidations from other instances wait for the next reconnection',
        );
    });
  subscriber.on('ready', () => {
    for (const channel of channels) void follow(channel);
  });
  subscriber.on('message', (channel: string, raw: string) => {
    const separator = raw.indexOf('|');
    if (raw.slice(0, separator) === ORIGIN) return;
    local.publish(channel.slice(prefix.length), raw.slice(separator + 1));
  });
  return {
    publish(channel, message) {
      local.publish(channel, message);
      publisher.publish(prefix + channel, `${ORIGIN}|${message}`).catch(() => {});
    },
    subscribe(channel, listener) {
      local.subscribe(channel, listener);
      if (!channels.has(channel)) {
        channels.add(channel);
        void follow(channel);
      }
    },
    async close() {
      closing = true;
      await local.close();
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}
