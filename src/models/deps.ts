import type { AppContext } from '../platform/context.ts';
import type { ProviderRegistry } from '../providers/registry.ts';
import type { ModelCache } from './cache.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { ProvidersConfig } from '../providers/config.ts';
import type { ModelsConfig } from './config.ts';

/** What the models feature is built from: the platform, and the providers (their names, their model lists). */
export interface ModelsDeps extends AppContext {
  config: PlatformConfig & ModelsConfig & ProvidersConfig;
  providers: ProviderRegistry;
}

/** What the catalogue's routes and sync use: the feature's deps and its own cache. */
export interface CatalogueDeps extends ModelsDeps {
  models: ModelCache;
}
