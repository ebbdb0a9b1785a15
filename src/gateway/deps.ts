import type { MeteringDeps } from '../billing/deps.ts';
import type { ModelCache } from '../models/cache.ts';
import type { ProviderRegistry } from '../providers/registry.ts';
import type { GatewayMetrics } from './metrics.ts';

/**
 * What the gateway's pipeline (and every inbound protocol on it) is built from: metering (billing and the
 * token rate limits), the model catalogue's cache and the provider adapters.
 */
export interface GatewayDeps extends MeteringDeps {
  models: ModelCache;
  providers: ProviderRegistry;
  gatewayMetrics: GatewayMetrics;
}
