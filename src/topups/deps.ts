import type { AppContext } from '../platform/context.ts';
import type { Billing } from '../billing/service.ts';

/** What the top-ups feature is built from: the platform, and billing (every credit moves through it). */
export interface TopupsDeps extends AppContext {
  billing: Billing;
}
