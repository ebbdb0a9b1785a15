import { Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS } from '../platform/metrics.ts';

/** The gateway's metrics: how long the upstream providers take to answer. */
export function createGatewayMetrics(registry: Registry) {
  return {
    upstreamDuration: new Histogram({
      name: 'tollgate_upstream_duration_seconds',
      help: 'Time spent waiting on the upstream provider.',
      labelNames: ['provider', 'kind'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
  };
}

/** The gateway's metrics of a service. */
export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;
