import type { AppContext } from '../platform/context.ts';
import type { Billing } from '../billing/service.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { OpsConfig } from '../ops/config.ts';

/** What the keys feature is built from: the platform, and billing (a key's spending limits). */
export interface KeysDeps extends AppContext {
  /** The key's request rate is reported by `GET /api/v1/key`; ops enforces it. */
  config: PlatformConfig & Pick<OpsConfig, 'RATE_LIMIT_KEY_RPM'>;
  billing: Billing;
}
