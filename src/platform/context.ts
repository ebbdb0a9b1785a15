import type { Config } from './config.ts';
import type { Clock } from './clock.ts';
import type { Db, DialectName } from './db/connect.ts';
import type { Logger } from './logger.ts';
import type { InstanceSecrets } from './secrets.ts';
import type { AuthRegistry } from './http/principal.ts';
import type { InvalidationBus } from './bus.ts';
import type { Job } from './jobs.ts';
import type { Metrics } from './metrics.ts';

/**
 * What a feature is handed when it registers: the parsed config, the database, the clock, the logger,
 * the kept secrets, the credential resolvers, the invalidation bus and the job list. Built once at start.
 */
export interface AppContext {
  config: Config;
  db: Db;
  dialect: DialectName;
  clock: Clock;
  log: Logger;
  secrets: InstanceSecrets;
  auth: AuthRegistry;
  bus: InvalidationBus;
  jobs: Map<string, Job>;
  metrics: Metrics;
  /** Work under way (AI calls, streams) that a graceful shutdown waits for before closing the database. */
  inflight: Set<Promise<unknown>>;
  /** Work to finish before the process exits (in-flight streams, timers). */
  onClose: Array<() => Promise<void> | void>;
  /** Feature services other features call, by name; each feature documents what it puts here. */
  services: Services;
}

/**
 * Services features expose to one another. A feature adds its entry by module augmentation beside its own
 * code (`declare module '../platform/context.ts' { interface Services { billing: Billing } }`) and sets it
 * when it registers, so every entry is typed and owned by exactly one feature.
 */
export interface Services {}
