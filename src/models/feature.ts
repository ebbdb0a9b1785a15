import type { Feature } from '../platform/feature.ts';
import type { CatalogueDeps, ModelsDeps } from './deps.ts';
import { ModelCache } from './cache.ts';
import { seedEchoModel } from './echo.ts';
import { registerModelRoutes } from './routes.ts';
import { registerModelRetrieveRoutes } from './retrieve.ts';

/** The models feature as the features built after it use it. */
export interface ModelsFeature extends Feature {
  /** The model catalogue as the hot path reads it (in-process cache, invalidated on change). */
  models: ModelCache;
}

/** The model catalogue: public ids, providers, prices; `GET /api/v1/models` (and one model's), and the operator's catalogue routes. */
export function createModelsFeature(deps: ModelsDeps): ModelsFeature {
  const models = new ModelCache(deps);
  const catalogue: CatalogueDeps = { ...deps, models };
  return {
    name: 'models',
    models,
    async register(app) {
      await seedEchoModel(deps.db, deps.clock);
      registerModelRoutes(app as any, catalogue);
      registerModelRetrieveRoutes(app as any, catalogue);
    },
  };
}
