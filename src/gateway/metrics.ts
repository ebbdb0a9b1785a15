import { Counter, Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS } from '../platform/metrics.ts';

/** The shared latency buckets (so the histograms compare), plus the long waits an upstream may take. */
export const UPSTREAM_WAIT_BUCKETS = [...LATENCY_BUCKETS, 120, 300, 600, 1800];

/** The gateway's metrics: how long the upstream providers take to answer, and whether long prompt texts were counted or remembered. */
export function createGatewayMetrics(registry: Registry) {
  return {
    upstreamDuration: new Histogram({
      name: 'tollgate_upstream_duration_seconds',
      help: 'Time spent waiting on the upstream provider.',
      labelNames: ['provider', 'kind'] as const,
      // A reasoning model's non-streaming answer may take up to `UPSTREAM_TIMEOUT_MS` (10 minutes by default):
      // past the shared buckets' 60 s, every such wait fell in `+Inf`.
      buckets: UPSTREAM_WAIT_BUCKETS,
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
