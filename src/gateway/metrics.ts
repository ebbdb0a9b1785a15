import { Counter, Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS } from '../platform/metrics.ts';

/** The gateway's metrics: how long the upstream providers take to answer, and whether long prompt texts were counted or remembered. */
export function createGatewayMetrics(registry: Registry) {
  return {
    upstreamDuration: new Histogram({
      name: 'tollgate_upstream_duration_seconds',
      help: 'Time spent waiting on the upstream provider.',
      labelNames: ['provider', 'kind'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    promptTexts: new Counter({
      name: 'tollgate_prompt_long_texts_total',
      help: 'Long prompt texts (1 K characters or more) whose tokens a hold needed: remembered from an earlier call with the same credential, or counted.',
      labelNames: ['source'] as const,
      registers: [registry],
    }),
  };
}

/** The gateway's metrics of a service. */
export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;
