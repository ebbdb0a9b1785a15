import type { PlatformConfig } from './config.ts';
import type { Clock } from './clock.ts';
import type { Db, DialectName } from './db/connect.ts';
import type { Logger } from './logger.ts';
import type { InstanceSecrets } from './secrets.ts';
import type { CredentialResolvers } from './http/principal.ts';
import type { InvalidationBus } from './bus.ts';
import type { Job } from './jobs.ts';
import type { Metrics } from './metrics.ts';
import type { ApiError } from './errors.ts';
import type { ErrorEnvelope, ErrorRenderer } from './http/error-envelope.ts';
import type { ScopedSecurityScheme } from './feature.ts';

/**
 * What the platform gives every feature: the parsed config, the database, the clock, the logger, the kept
 * secrets, the invalidation bus and the job list. Built once at start. It holds no feature's API: a feature
 * that uses another's is constructed with it (see src/service.ts, the composition root).
 */
export interface AppContext {
  /** The platform's settings; a feature's deps widen it with the sections it reads. */
  config: PlatformConfig;
  db: Db;
  dialect: DialectName;
  clock: Clock;
  log: Logger;
  secrets: InstanceSecrets;
  bus: InvalidationBus;
  jobs: Map<string, Job>;
  metrics: Metrics;
  /** Work under way (AI calls, streams) that a graceful shutdown waits for before closing the database. */
  inflight: Set<Promise<unknown>>;
  /**
   * Aborts when a shutdown's grace period is over, with the error the calls still running end with (see
   * `errors.shuttingDown`): a stream writes it as its last frame and is settled for what it produced, a call not yet
   * answered answers it, before the remaining connections are closed.
   */
  shutdown: AbortSignal;
  /** Work to finish before the process exits (in-flight streams, timers). */
  onClose: Array<() => Promise<void> | void>;
}

/**
 * What the HTTP server is built from: the platform context, and what the features declare, handed over by
 * the composition root once they are built: the credential resolvers of the features that own each
 * credential (accounts, keys, oauth), the error envelopes of path prefixes and the observers of errors.
 */
export interface ServerContext extends AppContext {
  auth: CredentialResolvers;
  /** The envelope of what matches no route under a prefix (first match wins); elsewhere `api`. */
  errorEnvelopes: ReadonlyArray<{ prefix: string; envelope: ErrorEnvelope | ErrorRenderer }>;
  /** Called with every error the server answers with. */
  errorObservers: ReadonlyArray<(error: ApiError) => void>;
  /** The OpenAPI scheme of the routes' scopes, when a feature issues scoped tokens (see `Feature`). */
  scopedSecurityScheme?: ScopedSecurityScheme;
}
