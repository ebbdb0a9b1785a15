import type { AppContext } from '../platform/context.ts';
import type { Billing } from '../billing/service.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { TopupsConfig } from './config.ts';

/** What the top-ups feature is built from: the platform, and billing (every credit moves through it). */
export interface TopupsDeps extends AppContext {
  config: PlatformConfig & TopupsConfig;
  billing: Billing;
}
