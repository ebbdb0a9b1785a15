import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * The Prometheus metrics of one process, served at `/metrics`. Features record into these; the registry is
 * per service so that tests running several services in one process do not mix their counts.
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
    upstreamDuration: new Histogram({
      name: 'tollgate_upstream_duration_seconds',
      help: 'Time spent waiting on the upstream provider.',
      labelNames: ['provider', 'kind'] as const,
      buckets: LATENCY_BUCKETS,
      ...of,
    }),
    gatewayOverhead: new Histogram({
      name: 'tollgate_gateway_overhead_seconds',
      help: "The gateway's own time per AI call: whole request minus upstream.",
      labelNames: ['kind'] as const,
      buckets: LATENCY_BUCKETS,
      ...of,
    }),
    tokens: new Counter({
      name: 'tollgate_tokens_total',
      help: 'Tokens processed, by model and direction.',
      labelNames: ['model', 'direction'] as const,
      ...of,
    }),
    /** In integer micro-credits, as the ledger counts them: a float sum of credits would drift (0.000005999…). */
    creditsChargedMicros: new Counter({
      name: 'tollgate_credits_charged_micros_total',
      help: 'Credits captured from wallets, in micro-credits (1 credit = 1000000).',
      labelNames: ['kind'] as const,
      ...of,
    }),
    holdsOpen: new Gauge({ name: 'tollgate_holds_open', help: 'Holds currently open (whole database).', ...of }),
    restrictions: new Counter({
      name: 'tollgate_restriction_refusals_total',
      help: 'Requests refused by a spending limit, the wallet or a rate limit, by code.',
      labelNames: ['code'] as const,
      ...of,
    }),
    webhookDeliveries: new Counter({
      name: 'tollgate_webhook_deliveries_total',
      help: 'Inbound webhook deliveries by outcome.',
      labelNames: ['outcome'] as const,
      ...of,
    }),
  };
}

/** The metrics of a service. */
export type Metrics = ReturnType<typeof createMetrics>;
