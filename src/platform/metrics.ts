import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The latency buckets (seconds) of every duration histogram, so that they can be compared. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * The Prometheus registry of one process, served at `/metrics`, with the HTTP metrics every route records.
 * Each feature declares its own metrics in this registry (billing/metrics.ts, gateway/metrics.ts,
 * webhooks/metrics.ts). The registry is per service so that tests running several services in one process
 * do not mix their counts.
 */
export function createMetrics() {
  const registry = new Registry();
  // Node's default metrics are already named `process_…` and `nodejs_…`: the prefix is ours alone.
  collectDefaultMetrics({ register: registry, prefix: 'tollgate_' });
  // Gauges named `_total` read as counters (`promtool check metrics` refuses them); each is the sum of the
  // by-type gauge of the same name without `_total`, which stays.
  for (const kind of ['handles', 'requests', 'resources'])
    registry.removeSingleMetric(`tollgate_nodejs_active_${kind}_total`);
  const of = { registers: [registry] };
  return {
    registry,
    httpRequests: new Counter({
      name: 'tollgate_http_requests_total',
      help: 'HTTP requests by route, method and status.',
      labelNames: ['route', 'method', 'status'] as const,
      ...of,
    }),
    httpDuration: new Histogram({
      name: 'tollgate_http_request_duration_seconds',
      help: 'Whole-request latency.',
      labelNames: ['route', 'method'] as const,
      buckets: LATENCY_BUCKETS,
      ...of,
    }),
  };
}

/** The metrics of a service. */
export type Metrics = ReturnType<typeof createMetrics>;
