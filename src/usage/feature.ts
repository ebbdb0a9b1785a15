import type { Feature } from '../platform/feature.ts';
import type { AppContext } from '../platform/context.ts';
import { registerUsageRoutes } from './routes.ts';

/** The usage report of billable calls (the usage records themselves are billing's meter's: see billing/schema.ts). */
export function createUsageFeature(deps: AppContext): Feature {
  return { name: 'usage', register: (app) => registerUsageRoutes(app, deps) };
}
