import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from './platform/config.ts';
import { openDatabase } from './platform/db/connect.ts';
import { migrateToLatest } from './platform/db/migrate.ts';
import { loadInstanceSecrets } from './platform/secrets.ts';
import { createLogger, type Logger } from './platform/logger.ts';
import { localBus, redisBus } from './platform/bus.ts';
import { createMetrics } from './platform/metrics.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { createServer } from './platform/http/server.ts';
import type { AppContext } from './platform/context.ts';
import { allFeatures, allMigrations } from './features.ts';

/** A running (or ready to listen) Tollgate: the HTTP server and the context behind it. */
export interface Service {
  app: FastifyInstance;
  ctx: AppContext;
  /** Listens on HOST:PORT (or the given port); returns the base URL. */
  listen(port?: number): Promise<string>;
  /** Stops accepting, runs every feature's close hook, closes the database. */
  close(): Promise<void>;
}

export interface ServiceOptions {
  config?: Config;
  clock?: Clock;
  log?: Logger;
  /** Apply migrations at start (default true). */
  migrate?: boolean;
  /** Start the background timers (default: when SWEEP_INTERVAL_SECONDS > 0). */
  timers?: boolean;
}

/**
 * Connections the kernel keeps waiting to be accepted. Node's default, 511, overflowed when thousands of
 * streaming clients arrived within a second while the event loop was busy (bench/streams.ts: 200 of 2,000
 * streams reset); a queued connection waits for its turn instead. The kernel caps it at net.core.somaxconn.
 */
const LISTEN_BACKLOG = 4096;

/** Builds the whole service: config, database, migrations, secrets, every feature's routes and jobs. */
export async function createService(options: ServiceOptions = {}): Promise<Service> {
  const config = options.config ?? loadConfig();
  const log = options.log ?? createLogger(config.LOG_LEVEL);
  const database = openDatabase(config);
  if (options.migrate !== false) await migrateToLatest(database.db, allMigrations(), config);
  const secrets = await loadInstanceSecrets(database.db, config, log);
  const ctx: AppContext = {
    config,
    db: database.db,
    dialect: database.dialect,
    clock: options.clock ?? systemClock,
    log,
    secrets,
    auth: {},
    bus: config.REDIS_URL ? await redisBus(config.REDIS_URL) : localBus(),
    jobs: new Map(),
    metrics: createMetrics(),
    inflight: new Set(),
    onClose: [],
    services: {} as AppContext['services'],
  };
  const app = await createServer(ctx);
  for (const feature of allFeatures()) {
    for (const job of feature.jobs ?? []) ctx.jobs.set(job.name, job);
    await feature.register?.(app, ctx);
  }
  await app.ready();

  const timers: NodeJS.Timeout[] = [];
  if ((options.timers ?? true) && config.SWEEP_INTERVAL_SECONDS > 0) {
    for (const job of ctx.jobs.values()) {
      const timer = setInterval(() => {
        job.run(ctx).catch((error) => log.error({ err: error, job: job.name }, 'background job failed'));
      }, config.SWEEP_INTERVAL_SECONDS * 1000);
      timer.unref();
      timers.push(timer);
    }
  }

  let closed = false;
  return {
    app,
    ctx,
    async listen(port = config.PORT) {
      const address = await app.listen({ host: config.HOST, port, backlog: LISTEN_BACKLOG });
      const url = address.replace('[::1]', '127.0.0.1');
      // A public address on port 0 (the default when PORT=0) names no real port: adopt the bound one, so
      // that the OAuth issuer and webhook URLs of such a process are reachable.
      if (URL.parse(config.PUBLIC_BASE_URL)?.port === '0') config.PUBLIC_BASE_URL = url;
      return url;
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearInterval(timer);
      // Stop accepting and let in-flight calls and streams finish; past the grace period, cut the
      // connections: the gateway sees each cut as a client abort and settles its hold for what was produced.
      const closing = app.close();
      let graceTimer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'cut'>(
        (resolve) => (graceTimer = setTimeout(() => resolve('cut'), config.SHUTDOWN_GRACE_MS)),
      );
      if ((await Promise.race([closing.then(() => 'closed' as const), graceOver])) === 'cut') {
        log.warn({ graceMs: config.SHUTDOWN_GRACE_MS }, 'grace period over: cutting open connections');
        app.server.closeAllConnections();
        await closing;
      }
      clearTimeout(graceTimer);
      // Settlement of the calls that just ended runs after their responses; wait for it before closing the database.
      // Bounded, so a call that never closes cannot hold the process forever (the hold sweep covers it).
      const settleDeadline = Date.now() + Math.max(1000, config.SHUTDOWN_GRACE_MS);
      while (ctx.inflight.size > 0 && Date.now() < settleDeadline) {
        await Promise.race([Promise.allSettled([...ctx.inflight]), new Promise((resolve) => setTimeout(resolve, 100))]);
      }
      for (const hook of ctx.onClose.reverse()) await hook();
      await ctx.bus.close();
      await database.close();
    },
  };
}
