import type { AppContext } from '../platform/context.ts';
import type { RateLimits } from '../ops/rate-limits.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { BillingConfig } from './config.ts';
import type { Billing } from './service.ts';
import type { BillingMetrics } from './metrics.ts';

/** What the billing feature is built from: the platform, and the token rate limits its meter counts in. */
export interface BillingDeps extends AppContext {
  config: PlatformConfig & BillingConfig;
  rateLimits: RateLimits;
}

/**
 * What metering a billable call needs ({@link Meter}): billing's own deps and the billing service. Every
 * feature that meters calls (gateway, protocols, predictions, webhooks) is built with at least these.
 */
export interface MeteringDeps extends BillingDeps {
  billing: Billing;
  billingMetrics: BillingMetrics;
}
