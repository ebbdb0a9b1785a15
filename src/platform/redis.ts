import type { Redis } from 'ioredis';

/**
 * Opens a Redis connection that fails fast instead of queueing commands forever while Redis is down.
 * ioredis is loaded here, on the first connection, so a deployment without `REDIS_URL` never loads it
 * (~10 MB of resident memory).
 */
export async function connectRedis(url: string): Promise<Redis> {
  const { Redis } = await import('ioredis');
  return new Redis(url, {
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    lazyConnect: false,
    connectTimeout: 2000,
  });
}

export type { Redis };
