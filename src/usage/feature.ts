import type { Feature } from '../platform/feature.ts';
import type { AppContext } from '../platform/context.ts';
import { registerUsageRoutes } from './routes.ts';
import { registerGenerationRoute } from './generation.ts';

/**
 * The usage report of billable calls, and one call's stats (`GET /api/v1/generation`); the usage records themselves
 * are billing's meter's (see billing/schema.ts), read through billing's reports.
 */
export function createUsageFeature(deps: AppContext): Feature {
  return {
    name: 'usage',
    register: (app) => {
      registerUsageRoutes(app, deps);
      registerGenerationRoute(app, deps);
    },
  };
}
