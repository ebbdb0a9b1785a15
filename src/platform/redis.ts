import type { Redis, RedisOptions } from 'ioredis';
import type { Logger } from './logger.ts';
import { ConfigError } from './config.ts';

/**
 * Opens a Redis connection that fails fast instead of queueing commands forever while Redis is down.
 * ioredis is loaded here, on the first connection, so a deployment without `REDIS_URL` never loads it
 * (~10 MB of resident memory). Connection errors go to `log` (once per outage) rather than to ioredis's
 * "Unhandled error event" stack traces on stderr, which it prints on every retry without a listener.
 */
export async function connectRedis(url: string, log?: Logger, options: RedisOptions = {}): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, {
    ...options,
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    lazyConnect: false,
    connectTimeout: 2000,
    // A command on a connection that went silent (packets dropped, no reset) fails after a second rather
    // than waiting for the operating system to notice; the rate limits then count in the process.
    commandTimeout: 1000,
  });
  let reported = false;
  client.on('ready', () => void (reported = false));
  client.on('error', (error: Error) => {
    lastErrors.set(client, error);
    if (reported) return;
    reported = true;
    log?.warn({ redis: redisTarget(url), reason: error.message }, 'Redis connection error (REDIS_URL)');
  });
  return client;
}

/** The last connection error of each client: why a command failed is in it, not in "max retries". */
const lastErrors = new WeakMap<Redis, Error>();

/** Where `url` points, without its credentials: `host:port`. */
export function redisTarget(url: string): string {
  const parsed = URL.parse(url);
  return parsed ? `${parsed.hostname || '127.0.0.1'}:${parsed.port || '6379'}` : 'the address REDIS_URL gives';
}

/**
 * Checks that the clients answer; if not, disconnects them and throws a {@link ConfigError} that names
 * `REDIS_URL` and what to check, so a start with an unreachable Redis stops with a sentence, not a trace.
 */
export async function ensureRedisReachable(url: string, clients: Redis[]): Promise<void> {
  try {
    await Promise.all(clients.map((client) => client.ping()));
  } catch (error) {
    const reason = clients.map((client) => lastErrors.get(client)).find(Boolean) ?? (error as Error);
    for (const client of clients) client.disconnect();
    throw new ConfigError(
      `REDIS_URL: cannot connect to Redis at ${redisTarget(url)} (${reason.message}). ` +
        'Check that Redis runs and that the URL (host, port, password, database number) is right, or unset ' +
        'REDIS_URL to run without it (rate limits then count per instance).',
    );
  }
}

export type { Redis };
