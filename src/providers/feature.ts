import type { Feature } from '../platform/feature.ts';
import { createProviderRegistry, type ProviderRegistry } from './registry.ts';

declare module '../platform/context.ts' {
  interface Services {
    /** The upstream adapters by provider name. */
    providers: ProviderRegistry;
  }
}

/** The upstream providers, built from the configuration (no routes, no tables). */
export const providersFeature: Feature = {
  name: 'providers',
  register(_app, ctx) {
    ctx.services.providers = createProviderRegistry(ctx.config);
  },
};
