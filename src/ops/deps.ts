import type { Migration } from 'kysely';
import type { AppContext } from '../platform/context.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { OpsConfig } from './config.ts';

/** What operations are built from: the platform, and every migration (readiness reports the pending ones). */
export interface OpsDeps extends AppContext {
  config: PlatformConfig & OpsConfig;
  migrations: Record<string, Migration>;
}
