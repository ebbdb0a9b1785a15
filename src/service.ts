import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from './config.ts';
import { ConfigError } from './platform/config.ts';
import { errors } from './platform/errors.ts';
import { ensureDatabaseReachable, openDatabase } from './platform/db/connect.ts';
import { migrateToLatest } from './platform/db/migrate.ts';
import { jobWithoutQueryTimeout } from './platform/jobs.ts';
import { checkKeyFileBeforeMigrating, loadInstanceSecrets } from './platform/secrets.ts';
import { createLogger, type Logger } from './platform/logger.ts';
import { localBus, redisBus } from './platform/bus.ts';
import { createMetrics } from './platform/metrics.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { createServer } from './platform/http/server.ts';
import type { AppContext, ServerContext } from './platform/context.ts';
import type { Feature } from './platform/feature.ts';
import type { Throttles, RateLimits } from './ops/rate-limits.ts';
import type { BrowserSessions } from './accounts/browser-sessions.ts';
import type { Billing } from './billing/service.ts';
import type { KeyAuthenticator } from './keys/authenticate.ts';
import type { AccessTokenResolver } from './oauth/bearer.ts';
import type { ProviderRegistry } from './providers/registry.ts';
import type { ModelCache } from './models/cache.ts';
import type { Topups } from './topups/service.ts';
import type { EventsService } from './events/service.ts';
import type { BillingMetrics } from './billing/metrics.ts';
import type { GatewayMetrics } from './gateway/metrics.ts';
import { allMigrations } from './features.ts';
import { createOpsFeature } from './ops/feature.ts';
import { createAccountsFeature } from './accounts/feature.ts';
import { createOAuthFeature } from './oauth/feature.ts';
import { createKeysFeature } from './keys/feature.ts';
import { KEY_PERMISSIONS } from './keys/permissions.ts';
import { createBillingFeature } from './billing/feature.ts';
import { createProvidersFeature } from './providers/feature.ts';
import { createModelsFeature } from './models/feature.ts';
import { createUsageFeature } from './usage/feature.ts';
import { createGatewayFeature } from './gateway/feature.ts';
import { createGatewayMetrics } from './gateway/metrics.ts';
import { PromptTokenCounts } from './gateway/prompt-counts.ts';
import { createOpenAiChatFeature } from './protocols/openai-chat/feature.ts';
import { createOpenAiCompletionsFeature } from './protocols/openai-completions/feature.ts';
import { createResponsesFeature } from './protocols/openai-responses/feature.ts';
import { createAnthropicMessagesFeature } from './protocols/anthropic-messages/feature.ts';
import { createAdminFeature } from './admin/feature.ts';
import { createPredictionsFeature } from './predictions/feature.ts';
import { createWebhooksFeature } from './webhooks/feature.ts';
import { createTopupsFeature } from './topups/feature.ts';
import { createEventsFeature } from './events/feature.ts';
import { createWebFeature } from './web/feature.ts';

/** The platform's context as the root holds it: with every section of the configuration, of which it hands
 * each feature the sections it declares. */
type RootContext = AppContext & { config: Config };

/** What the features offer one another, as built by {@link createService}. */
export interface FeatureApis {
  throttles: Throttles;
  rateLimits: RateLimits;
  browserSessions: BrowserSessions;
  billing: Billing;
  keys: KeyAuthenticator;
  oauth: AccessTokenResolver;
  providers: ProviderRegistry;
  models: ModelCache;
  topups: Topups;
  events: EventsService;
  billingMetrics: BillingMetrics;
  gatewayMetrics: GatewayMetrics;
  promptCounts: PromptTokenCounts;
}

/** The composition root's view of a service: the server's context and every feature's API. */
export interface ServiceContext extends ServerContext, FeatureApis {
  /** Every section of the configuration. */
  config: Config;
}

/** A running (or ready to listen) Tollgate: the HTTP server and the context behind it. */
export interface Service {
  app: FastifyInstance;
  /**
   * The whole composed context: the platform's, the credential resolvers and every feature's API. For the
   * CLI, tests and benchmarks (tooling); a feature is only ever handed the deps it declares.
   */
  ctx: ServiceContext;
  /** Listens on HOST:PORT (or the given port); returns the base URL. */
  listen(port?: number): Promise<string>;
  /**
   * Stops accepting, lets in-flight calls run for SHUTDOWN_GRACE_MS, runs every feature's close hook, closes
   * the database. Called again while closing, it answers the same promise; with `cutNow`, it also ends the
   * grace period at once (an operator's second Ctrl-C), the cut calls settled for what they produced.
   */
  close(options?: { cutNow?: boolean }): Promise<void>;
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

/**
 * How long the calls cut at the end of a shutdown's grace period have to write their last frame (or their 503)
 * before the connections still open are closed: a write to a reading client takes microseconds, one that is
 * not reading is not waited for longer.
 */
const CUT_WRITE_MS = 1000;

/** Builds the whole service: config, database, migrations, secrets, every feature's routes and jobs. */
export async function createService(options: ServiceOptions = {}): Promise<Service> {
  const config = options.config ?? loadConfig();
  const log = options.log ?? createLogger(config.LOG_LEVEL);
  const database = openDatabase(config, log);
  for (const notice of database.notices) log.info(notice);
  await ensureDatabaseReachable(database, config);
  checkKeyFileBeforeMigrating(config);
  if (options.migrate !== false) {
    const started = performance.now();
    const applied = (await migrateToLatest(database.db, allMigrations(), config)).results ?? [];
    // An upgrade by restart (README, "Upgrading") is otherwise silent: the log says what it changed.
    if (applied.length > 0)
      log.info(
        { migrations: applied.map((m) => m.migrationName), ms: Math.round(performance.now() - started) },
        `applied ${applied.length} database migration${applied.length > 1 ? 's' : ''}`,
      );
  }
  const secrets = await loadInstanceSecrets(database.db, config, log);
  const shutdownController = new AbortController();
  const base: RootContext = {
    config,
    db: database.db,
    dialect: database.dialect,
    clock: options.clock ?? systemClock,
    log,
    secrets,
    bus: config.REDIS_URL ? await redisBus(config.REDIS_URL, undefined, log) : localBus(),
    jobs: new Map(),
    metrics: createMetrics(),
    inflight: new Set(),
    shutdown: shutdownController.signal,
    onClose: [],
  };
  const { features, apis, auth } = await composeFeatures(base);
  const ctx: ServiceContext = {
    ...base,
    auth,
    errorEnvelopes: features.flatMap((feature) =>
      Object.entries(feature.errorEnvelopes ?? {}).map(([prefix, envelope]) => ({ prefix, envelope })),
    ),
    errorObservers: features.flatMap((feature) => (feature.observeError ? [feature.observeError] : [])),
    scopedSecurityScheme: features.find((feature) => feature.scopedSecurityScheme)?.scopedSecurityScheme,
    ...apis,
  };
  const app = await createServer(ctx);
  for (const feature of features) {
    for (const job of feature.jobs ?? []) ctx.jobs.set(job.name, jobWithoutQueryTimeout(job));
    await feature.register?.(app);
  }
  await app.ready();

  const timers: NodeJS.Timeout[] = [];
  if ((options.timers ?? true) && config.SWEEP_INTERVAL_SECONDS > 0) {
    for (const job of ctx.jobs.values()) {
      // A run still going when the timer comes round again (a big backlog, a silent database) is let be: runs
      // piling up would take the pool's connections from the calls.
      let running = false;
      const timer = setInterval(() => {
        if (running) return;
        running = true;
        job
          .run()
          .catch((error) => log.error({ err: error, job: job.name }, 'background job failed'))
          .finally(() => (running = false));
      }, config.SWEEP_INTERVAL_SECONDS * 1000);
      timer.unref();
      timers.push(timer);
    }
  }

  let closing: Promise<void> | undefined;
  let endGrace: (() => void) | undefined;
  return {
    app,
    ctx,
    async listen(port = config.PORT) {
      const address = await app.listen({ host: config.HOST, port, backlog: LISTEN_BACKLOG }).catch((error) => {
        throw listenRefusal(error, config.HOST, port);
      });
      const url = address.replace('[::1]', '127.0.0.1');
      // A public address on port 0 (the default when PORT=0) names no real port: adopt the bound one, so
      // that the OAuth issuer and webhook URLs of such a process are reachable.
      if (URL.parse(config.PUBLIC_BASE_URL)?.port === '0') config.PUBLIC_BASE_URL = url;
      return url;
    },
    close(options) {
      if (!closing) closing = closeOnce();
      if (options?.cutNow) endGrace?.();
      return closing;
    },
  };

  async function closeOnce(): Promise<void> {
    for (const timer of timers) clearInterval(timer);
    // Stop accepting and let in-flight calls and streams finish; past the grace period, cut the
    // connections: the gateway sees each cut as a client abort and settles its hold for what was produced.
    const serverClosed = app.close();
    let graceTimer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'cut'>((resolve) => {
      graceTimer = setTimeout(() => resolve('cut'), config.SHUTDOWN_GRACE_MS);
      endGrace = () => resolve('cut');
    });
    if ((await Promise.race([serverClosed.then(() => 'closed' as const), graceOver])) === 'cut') {
      log.warn({ graceMs: config.SHUTDOWN_GRACE_MS }, 'grace period over or cut short: cutting open connections');
      // The calls still running end first, each with its error (a stream's last frame, or a 503 not yet sent),
      // settled for what they produced; then whatever connection is left is closed.
      shutdownController.abort(errors.shuttingDown());
      await Promise.race([serverClosed, new Promise((resolve) => setTimeout(resolve, CUT_WRITE_MS).unref())]);
      app.server.closeAllConnections();
      await serverClosed;
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
  }
}

/**
 * The sentence for an address the server cannot listen on, naming the setting to change, rather than Node's
 * bare `listen EADDRINUSE: address already in use` (a second `npm start`, another program on port 3000).
 */
function listenRefusal(error: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (error.code === 'EADDRINUSE')
    return new ConfigError(
      `PORT: ${where} is already in use (another Tollgate, or another program, listens there). Stop it, or set PORT (and HOST) to a free address, e.g. PORT=${port + 1}.`,
    );
  if (error.code === 'EACCES')
    return new ConfigError(
      `PORT: listening on ${where} is not permitted (ports below 1024 need privileges). Set PORT to 1024 or above, and put a proxy in front for port 80 or 443.`,
    );
  if (error.code === 'EADDRNOTAVAIL')
    return new ConfigError(`HOST: ${host} is not an address of this machine. Set HOST to one (0.0.0.0 for all).`);
  if (error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN')
    return new ConfigError(
      `HOST: ${host} is not a name this machine can resolve. Set HOST to an address of this machine (127.0.0.1, or 0.0.0.0 for all).`,
    );
  return error;
}

/**
 * Builds every feature from what it uses, in dependency order: a feature is handed the APIs of those built
 * before it, so using one not built yet does not compile. Returns them in registration order (the order
 * their routes and hooks are added: ops first, so its hooks run before every other feature's), their APIs
 * and the credential resolvers the server authenticates with.
 */
async function composeFeatures(base: RootContext): Promise<{
  features: Feature[];
  apis: FeatureApis;
  auth: ServerContext['auth'];
}> {
  const migrations = allMigrations();
  const ops = await createOpsFeature({ ...base, migrations });
  const { throttles, rateLimits } = ops;
  const accounts = createAccountsFeature({ ...base, throttles });
  const { browserSessions } = accounts;
  const billingFeature = createBillingFeature({ ...base, rateLimits });
  const { billing } = billingFeature;
  const keys = createKeysFeature({ ...base, billing });
  const oauth = await createOAuthFeature({ ...base, throttles, browserSessions, billing, keys: keys.authenticator });
  const { providers } = createProvidersFeature(base);
  const modelsFeature = createModelsFeature({ ...base, providers });
  const { models } = modelsFeature;
  const metering = { ...base, rateLimits, billing, billingMetrics: billingFeature.metrics };
  const gatewayMetrics = createGatewayMetrics(base.metrics.registry);
  const promptCounts = new PromptTokenCounts(base.config.PROMPT_COUNT_MEMORY_ENTRIES, gatewayMetrics.promptTexts);
  const gateway = { ...metering, models, providers, gatewayMetrics, promptCounts };
  const topupsFeature = await createTopupsFeature({ ...base, billing });
  const { topups } = topupsFeature;
  const eventsFeature = await createEventsFeature({ ...base, billing, observeTopups: topups.observe });

  return {
    features: [
      ops,
      accounts,
      oauth,
      keys,
      billingFeature,
      modelsFeature,
      createUsageFeature(base),
      createGatewayFeature(gateway),
      createOpenAiChatFeature(gateway),
      createOpenAiCompletionsFeature(gateway),
      createResponsesFeature(gateway),
      createAnthropicMessagesFeature(gateway),
      createAdminFeature({ ...base, migrations }),
      createPredictionsFeature(metering),
      createWebhooksFeature(metering),
      topupsFeature,
      eventsFeature,
      createWebFeature(base),
    ],
    apis: {
      throttles,
      rateLimits,
      browserSessions,
      billing,
      keys: keys.authenticator,
      oauth: oauth.tokens,
      providers,
      models,
      topups,
      events: eventsFeature.events,
      billingMetrics: metering.billingMetrics,
      gatewayMetrics: gateway.gatewayMetrics,
      promptCounts,
    },
    auth: {
      session: accounts.resolveSession,
      isApiKey: keys.isApiKey,
      apiKey: keys.resolveApiKey,
      accessToken: oauth.resolveAccessToken,
      keyPermissions: KEY_PERMISSIONS,
    },
  };
}
