import type { AppContext } from '../platform/context.ts';
import type { Throttles } from '../ops/rate-limits.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { AccountsConfig } from './config.ts';

/** What the accounts feature is built from: the platform, and the shared throttles (sign-in failures). */
export interface AccountsDeps extends AppContext {
  config: PlatformConfig & AccountsConfig;
  throttles: Throttles;
}
