import type { AppContext } from '../platform/context.ts';
import type { Billing } from '../billing/service.ts';

/** What the keys feature is built from: the platform, and billing (a key's spending limits). */
export interface KeysDeps extends AppContext {
  billing: Billing;
}
