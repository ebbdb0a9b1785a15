import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Db } from '../platform/db/connect.ts';
import type { ApiError } from '../platform/errors.ts';
import { LATENCY_BUCKETS } from '../platform/metrics.ts';
import { countOpenHolds } from './reports.ts';

/** The refusals counted as restrictions: billing's own (the wallet, a spending limit) and the rate limits'. */
const RESTRICTION_CODES: ReadonlySet<string> = new Set([
  'SPENDING_LIMIT_EXCEEDED',
  'INSUFFICIENT_CREDITS',
  'RATE_LIMITED',
]);

/** Billing's metrics: what metered calls used and were charged, the holds open, the restriction refusals. */
export function createBillingMetrics(registry: Registry, db: Db) {
  const of = { registers: [registry] };
  const restrictions = new Counter({
    name: 'tollgate_restriction_refusals_total',
    help: 'Requests refused by a spending limit, the wallet or a rate limit, by code.',
    labelNames: ['code'] as const,
    ...of,
  });
  return {
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
    holdsOpen: new Gauge({
      name: 'tollgate_holds_open',
      help: 'Holds currently open (whole database).',
      // Read at scrape time from the database, so every instance reports the whole deployment's open holds.
      async collect() {
        this.set(await countOpenHolds(db));
      },
      ...of,
    }),
    /** Counts an answered error when it is a restriction (the server's error observer). */
    countRefusal(error: ApiError): void {
      if (RESTRICTION_CODES.has(error.code)) restrictions.inc({ code: error.code });
    },
  };
}

/** Billing's metrics of a service. */
export type BillingMetrics = ReturnType<typeof createBillingMetrics>;
