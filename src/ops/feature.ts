import type { Feature } from '../platform/feature.ts';
import { connectRedis } from '../platform/redis.ts';
import { memoryBackoff, memoryRateLimiter, redisBackoff, redisRateLimiter } from '../platform/ratelimit.ts';
import { registerHealthRoutes } from './health.ts';
import { registerMetricsRoute } from './metrics-route.ts';
import { registerRateLimits } from './rate-limits.ts';
import { registerCors } from './cors.ts';

/**
 * Operations: health and readiness, Prometheus metrics, request-rate limits (Redis when configured) and
 * CORS. Registered first, so its hooks run before every other feature's.
 */
export const opsFeature: Feature = {
  name: 'ops',
  async register(app, ctx) {
    const redis = ctx.config.REDIS_URL ? await connectRedis(ctx.config.REDIS_URL) : null;
    if (redis) ctx.onClose.push(() => void redis.disconnect());
    registerCors(app, ctx);
    registerRateLimits(
      app,
      ctx,
      redis ? redisRateLimiter(redis) : memoryRateLimiter(),
      redis ? redisBackoff(redis) : memoryBackoff(),
    );
    registerHealthRoutes(app, ctx, redis);
    registerMetricsRoute(app, ctx);
  },
};
