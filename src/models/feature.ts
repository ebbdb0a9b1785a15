import type { Feature } from '../platform/feature.ts';
import { modelsMigrations } from './migrations.ts';
import { ModelCache } from './cache.ts';
import { seedEchoModel } from './echo.ts';
import { registerModelRoutes } from './routes.ts';
import { registerModelRetrieveRoutes } from './retrieve.ts';

declare module '../platform/context.ts' {
  interface Services {
    /** The model catalogue as the hot path reads it (in-process cache, invalidated on change). */
    models: ModelCache;
  }
}

/** The model catalogue: public ids, providers, prices; `GET /api/v1/models` (and one model's), and the operator's catalogue routes. */
export const modelsFeature: Feature = {
  name: 'models',
  migrations: modelsMigrations,
  async register(app, ctx) {
    ctx.services.models = new ModelCache(ctx);
    await seedEchoModel(ctx.db, ctx.clock);
    registerModelRoutes(app as any, ctx);
    registerModelRetrieveRoutes(app as any, ctx);
  },
};
