import type { Feature } from '../platform/feature.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { ProvidersConfig } from './config.ts';
import { createProviderRegistry, type ProviderRegistry } from './registry.ts';

/** The providers as the features built after it use them. */
export interface ProvidersFeature extends Feature {
  /** The upstream adapters by provider name. */
  providers: ProviderRegistry;
}

/** The upstream providers, built from the configuration (no routes, no tables). */
export function createProvidersFeature(deps: { config: PlatformConfig & ProvidersConfig }): ProvidersFeature {
  return { name: 'providers', providers: createProviderRegistry(deps.config) };
}
