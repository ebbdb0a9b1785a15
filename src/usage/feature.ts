import type { Feature } from '../platform/feature.ts';
import type { AppContext } from '../platform/context.ts';
import { registerUsageRoutes } from './routes.ts';

/** Usage records of billable calls, and the usage queries. */
export function createUsageFeature(deps: AppContext): Feature {
  return { name: 'usage', register: (app) => registerUsageRoutes(app, deps) };
}
