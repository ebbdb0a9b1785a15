import type { Feature } from '../platform/feature.ts';
import { usageMigrations } from './tables.ts';
import { registerUsageRoutes } from './routes.ts';

/** Usage records of billable calls, and the usage queries. */
export const usageFeature: Feature = {
  name: 'usage',
  migrations: usageMigrations,
  register(app, ctx) {
    registerUsageRoutes(app, ctx);
  },
};
