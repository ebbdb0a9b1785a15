import type { Feature } from '../platform/feature.ts';
import type { OpsDeps } from './deps.ts';
import { connectRedis } from '../platform/redis.ts';
import {
  memoryBackoff,
  memoryRateLimiter,
  redisBackoff,
  redisRateLimiter,
  withLocalFallback,
} from '../platform/ratelimit.ts';
import { registerDiskFullGauge, registerHealthRoutes } from './health.ts';
import { registerMetricsRoute } from './metrics-route.ts';
import { createTokenRateLimits, registerRateLimits, type RateLimits, type Throttles } from './rate-limits.ts';
import { registerCors } from './cors.ts';

/** Operations as the features built after it use them: the shared throttles and the token rate limits. */
export interface OpsFeature extends Feature {
  throttles: Throttles;
  rateLimits: RateLimits;
}

/**
 * Operations: health and readiness, Prometheus metrics, request-rate limits (Redis when configured) and
 * CORS. Registered first, so its hooks run before every other feature's.
 */
export async function createOpsFeature(deps: OpsDeps): Promise<OpsFeature> {
  const redis = deps.config.REDIS_URL ? await connectRedis(deps.config.REDIS_URL, deps.log) : null;
  if (redis) deps.onClose.push(() => void redis.disconnect());
  const limiter = redis
    ? withLocalFallback(redisRateLimiter(redis), memoryRateLimiter(), redis, deps.log, 'rate limits')
    : memoryRateLimiter();
  const backoff = redis
    ? withLocalFallback(redisBackoff(redis), memoryBackoff(), redis, deps.log, 'sign-in throttles')
    : memoryBackoff();
  return {
    name: 'ops',
    throttles: { windows: limiter, backoff },
    rateLimits: createTokenRateLimits(deps, limiter),
    register(app) {
      registerCors(app, deps);
      registerRateLimits(app, deps, limiter);
      registerHealthRoutes(app, deps, redis, deps.migrations);
      registerDiskFullGauge(deps);
      registerMetricsRoute(app, deps);
    },
  };
}
