import type { MeteringDeps } from '../billing/deps.ts';
import type { ModelCache } from '../models/cache.ts';
import type { ProviderRegistry } from '../providers/registry.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { BillingConfig } from '../billing/config.ts';
import type { ProvidersConfig } from '../providers/config.ts';
import type { GatewayConfig } from './config.ts';
import type { PromptTokenCounts } from './prompt-counts.ts';

/**
 * What the gateway's pipeline (and every inbound protocol on it) is built from: metering (billing and the
 * token rate limits), the model catalogue's cache and the provider adapters.
 */
export interface GatewayDeps extends MeteringDeps {
  /** The gateway's section, the providers' (timeouts, addresses), and billing's. */
  config: PlatformConfig & BillingConfig & GatewayConfig & ProvidersConfig;
  models: ModelCache;
  providers: ProviderRegistry;
  gatewayMetrics: GatewayMetrics;
  /** Token counts of long prompt texts, remembered per credential. */
  promptCounts: PromptTokenCounts;
}
