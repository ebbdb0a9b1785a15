import type { AppContext } from '../platform/context.ts';
import type { Topups } from './service.ts';
import type { Billing } from '../billing/service.ts';

/** What the top-ups feature is built from: the platform, and billing (every credit moves through it). */
export interface TopupsDeps extends AppContext {
  billing: Billing;
}

/** What the top-up routes use: the feature's deps and its own service. */
export interface TopupRoutesDeps extends TopupsDeps {
  topups: Topups;
}
