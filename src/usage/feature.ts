import type { Feature } from '../platform/feature.ts';
import { registerUsageRoutes } from './routes.ts';

/** The usage report of billable calls (the usage records themselves are billing's meter's: see billing/schema.ts). */
export const usageFeature: Feature = {
  name: 'usage',
  register(app, ctx) {
    registerUsageRoutes(app, ctx);
  },
};
