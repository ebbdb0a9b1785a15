import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Type, { type Static } from 'typebox';
import Value from 'typebox/value';

/**
 * Every setting Tollgate reads, in one schema: the environment and the optional JSON file named by
 * `TOLLGATE_CONFIG` are parsed against it once, at start-up. A bad value stops the start with a message
 * that names the variable and what it expects. The README's configuration table is checked against it.
 */
export const ConfigSchema = Type.Object({
  HOST: Type.String({ default: '127.0.0.1', description: 'Interface the HTTP server binds to.' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'TCP port of the HTTP server.' }),
  PUBLIC_BASE_URL: Type.Optional(
    Type.String({
      pattern: '^https?://[^/]+(/.*[^/])?$',
      description:
        'Public address of this deployment without a trailing slash; the OAuth issuer and the base of webhook URLs. Default `http://HOST:PORT`.',
    }),
  ),
  DATABASE_URL: Type.Optional(
    Type.String({
      pattern: '^postgres(ql)?://',
      description: 'PostgreSQL connection URL. Unset: embedded SQLite under `DATA_DIR`.',
    }),
  ),
  DATABASE_SCHEMA: Type.String({
    default: 'public',
    pattern: '^[a-z_][a-z0-9_]*$',
    description: 'PostgreSQL schema that holds the tables.',
  }),
  DATABASE_POOL_SIZE: Type.Integer({
    minimum: 1,
    maximum: 500,
    default: 10,
    description: 'PostgreSQL connections per process.',
  }),
  DATA_DIR: Type.String({
    default: 'data',
    description:
      'Folder of the SQLite database. Unset: `data/` in the project folder, wherever the command is run from (a relative value is relative to the working folder).',
  }),
  TOLLGATE_ADMIN_TOKEN: Type.Optional(
    Type.String({
      minLength: 24,
      description:
        'Operator bearer token(s) for `/api/admin/*`, space-separated. Unset: read from the key file (`SECRETS_FILE`; print it with `tollgate admin-token`).',
    }),
  ),
  COOKIE_SECRET: Type.Optional(
    Type.String({
      minLength: 32,
      description: 'Signs session cookies. Unset: read from the key file (`SECRETS_FILE`).',
    }),
  ),
  ENCRYPTION_KEY: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/_-]{43}=?$',
      description:
        'AES-256-GCM key (32 bytes, base64) for secrets kept at rest (API keys). Unset: read from the key file (`SECRETS_FILE`).',
    }),
  ),
  SECRETS_FILE: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'JSON key file holding any of `ENCRYPTION_KEY`, `COOKIE_SECRET`, `TOLLGATE_ADMIN_TOKEN` not set in the environment. Default on SQLite: `DATA_DIR/secrets.json`, generated (mode 0600) on first start. On PostgreSQL it has no default and must exist; without it unset secrets are generated into the database, with a warning.',
    }),
  ),
  CREDITS_PER_USD: Type.Number({
    exclusiveMinimum: 0,
    default: 100,
    description: 'Credits per US dollar when provider prices are imported.',
  }),
  STRIPE_SECRET_KEY: Type.Optional(
    Type.String({
      pattern: '^(sk|rk)_[A-Za-z0-9_]+$',
      description:
        'Stripe secret (or restricted) key `sk_…`; with `STRIPE_WEBHOOK_SECRET` it turns self-serve top-ups on. Unset: top-ups are off (the routes answer 403 `TOPUPS_DISABLED`).',
    }),
  ),
  STRIPE_WEBHOOK_SECRET: Type.Optional(
    Type.String({
      pattern: '^whsec_[A-Za-z0-9+/=_]+$',
      description:
        'Signing secret `whsec_…` of the Stripe webhook endpoint `/api/webhooks/stripe` (or of `stripe listen`).',
    }),
  ),
  STRIPE_API_BASE: Type.Optional(
    Type.String({
      pattern: '^https?://[^/:]+(:[0-9]+)?$',
      description:
        'Stripe API address override (`http://127.0.0.1:12111`), for tests and stripe-mock. Unset: `https://api.stripe.com`.',
    }),
  ),
  TOPUP_CURRENCY: Type.String({
    pattern: '^[a-z]{3}$',
    default: 'usd',
    description: 'ISO currency of top-ups (a currency with cents: amounts are sent to Stripe in hundredths).',
  }),
  TOPUP_CREDITS_PER_UNIT: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 100,
    description:
      'Credits sold per unit of `TOPUP_CURRENCY` (the selling price; distinct from `CREDITS_PER_USD`, the cost rate of imported prices).',
  }),
  TOPUP_AMOUNTS: Type.String({
    pattern: '^[0-9]+( [0-9]+)*$',
    default: '5 10 25 50',
    description: 'Top-up amounts the wallet page offers, in whole units of `TOPUP_CURRENCY`, space-separated.',
  }),
  TOPUP_MIN_AMOUNT: Type.Integer({
    minimum: 1,
    default: 5,
    description: 'Smallest custom top-up (and auto top-up), in whole units of `TOPUP_CURRENCY`.',
  }),
  TOPUP_MAX_AMOUNT: Type.Integer({
    minimum: 1,
    default: 500,
    description: 'Largest custom top-up (and auto top-up), in whole units of `TOPUP_CURRENCY`.',
  }),
  LOW_BALANCE_CREDITS: Type.Number({
    minimum: 0,
    default: 5,
    description:
      'The dashboard warns when the available credits fall below this (or below the auto top-up threshold when that is higher).',
  }),
  OPENAI_API_KEY: Type.Optional(Type.String({ description: 'OpenAI API key.' })),
  OPENAI_BASE_URL: Type.String({ default: 'https://api.openai.com/v1', description: 'OpenAI-compatible base URL.' }),
  OPENROUTER_API_KEY: Type.Optional(Type.String({ description: 'OpenRouter API key.' })),
  OPENROUTER_BASE_URL: Type.String({ default: 'https://openrouter.ai/api/v1', description: 'OpenRouter base URL.' }),
  ANTHROPIC_API_KEY: Type.Optional(Type.String({ description: 'Anthropic API key.' })),
  ANTHROPIC_BASE_URL: Type.String({
    default: 'https://api.anthropic.com',
    description: 'Anthropic base URL (without `/v1`).',
  }),
  REPLICATE_API_TOKEN: Type.Optional(Type.String({ description: 'Replicate API token.' })),
  REPLICATE_BASE_URL: Type.String({ default: 'https://api.replicate.com/v1', description: 'Replicate base URL.' }),
  REPLICATE_WEBHOOK_SECRET: Type.Optional(
    Type.String({
      pattern: '^whsec_[A-Za-z0-9+/=]+( whsec_[A-Za-z0-9+/=]+)*$',
      description:
        'Replicate webhook signing secret(s) `whsec_…`, space-separated during a rotation. Unset: the webhook refuses every delivery.',
    }),
  ),
  REDIS_URL: Type.Optional(
    Type.String({
      pattern: '^rediss?://',
      description: 'Redis URL for rate limits and cross-instance invalidation. Unset: in process.',
    }),
  ),
  LOG_LEVEL: Type.Union(
    [
      Type.Literal('fatal'),
      Type.Literal('error'),
      Type.Literal('warn'),
      Type.Literal('info'),
      Type.Literal('debug'),
      Type.Literal('trace'),
      Type.Literal('silent'),
    ],
    { default: 'info', description: 'Log level.' },
  ),
  HOLD_TTL_SECONDS: Type.Integer({
    minimum: 10,
    default: 600,
    description:
      "Lifetime of a hold for a synchronous call without a heartbeat (a running call's meter extends it every third of it); the sweep releases it after.",
  }),
  PREDICTION_HOLD_TTL_SECONDS: Type.Integer({
    minimum: 60,
    maximum: 86400,
    default: 86400,
    description: 'Lifetime of a prediction hold.',
  }),
  SWEEP_INTERVAL_SECONDS: Type.Integer({
    minimum: 0,
    default: 60,
    description:
      'How often each process runs the background jobs (expired holds, reconciliation); 0 turns the timers off.',
  }),
  UPSTREAM_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    default: 120000,
    description: 'Time allowed for an upstream response to begin.',
  }),
  SHUTDOWN_GRACE_MS: Type.Integer({
    minimum: 0,
    default: 10000,
    description:
      'On SIGTERM, how long in-flight calls and streams may run before they are cut (and settled for what they produced).',
  }),
  RATE_LIMIT_KEY_RPM: Type.Integer({
    minimum: 0,
    default: 600,
    description: 'Requests per minute per API key on `/api/v1/*`; 0 turns it off.',
  }),
  RATE_LIMIT_APP_RPM: Type.Integer({
    minimum: 0,
    default: 1200,
    description: 'Requests per minute per OAuth app and user on `/api/v1/*`; 0 turns it off.',
  }),
  RATE_LIMIT_KEY_TPM: Type.Integer({
    minimum: 0,
    default: 0,
    description: 'Tokens per minute per API key (and per app and user); 0 turns it off.',
  }),
  RATE_LIMIT_SIGNUP_PER_MINUTE: Type.Integer({
    minimum: 0,
    default: 10,
    description: 'Sign-ups per minute per client address (each costs a password hash); 0 turns it off.',
  }),
  SIGNIN_FREE_FAILURES_PER_ACCOUNT: Type.Integer({
    minimum: 1,
    default: 5,
    description:
      'Sign-in attempts an account may fail before each further one must wait a growing delay (1 s, 2 s, 4 s… up to `SIGNIN_MAX_DELAY_SECONDS`); a success clears them.',
  }),
  SIGNIN_FREE_FAILURES_PER_ADDRESS: Type.Integer({
    minimum: 1,
    default: 20,
    description:
      'Failed sign-ins one client address may make (into any accounts) before each further attempt must wait a growing delay.',
  }),
  SIGNIN_MAX_DELAY_SECONDS: Type.Integer({
    minimum: 0,
    default: 900,
    description:
      'Longest wait the sign-in throttle imposes; 0 turns the throttle off. Failures are forgotten after a day without any.',
  }),
  RATE_LIMIT_OAUTH_CLIENT_PER_MINUTE: Type.Integer({
    minimum: 0,
    default: 6000,
    description: 'Successful token, revocation and introspection answers per minute per OAuth app; 0 turns it off.',
  }),
  OAUTH_CLIENT_FAILURES_PER_MINUTE: Type.Integer({
    minimum: 0,
    default: 30,
    description:
      'Failed token, revocation and introspection requests (bad client authentication, invalid grant…) per minute per OAuth app and client address, past which that address is refused for the app until the minute ends; 0 turns it off.',
  }),
  TRUST_PROXY: Type.String({
    default: 'false',
    pattern: '^(false|[0-9]{1,2}|((loopback|linklocal|uniquelocal|[0-9A-Fa-f:.]+(/[0-9]{1,3})?)( *, *|$))+)$',
    description:
      'Which `X-Forwarded-For` addresses are believed as the client address: `false` (none: the peer address is the client), a hop count (the number of proxies in front of Tollgate), or a comma list of proxy addresses/CIDRs (`loopback`, `linklocal`, `uniquelocal` allowed).',
  }),
  HTTP_REQUEST_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    default: 60,
    description:
      'Time a client has to send a whole request (headers and body), uploads apart; a slower one is cut with 408. Answers, streams included, are not limited by it.',
  }),
  HTTP_UPLOAD_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    default: 600,
    description: 'Time a client has to send a whole upload (a multipart body, such as audio to transcribe).',
  }),
  HTTP_HEADERS_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    default: 10,
    description: 'Time a client has to send the request headers (at most `HTTP_REQUEST_TIMEOUT_SECONDS`).',
  }),
  HTTP_KEEPALIVE_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    default: 72,
    description:
      "How long an idle keep-alive connection stays open between requests (above a load balancer's idle timeout, usually 60 s).",
  }),
  BODY_LIMIT_API_BYTES: Type.Integer({
    minimum: 1024,
    default: 4 * 1024 * 1024,
    description: 'Largest JSON body of an AI call (`/api/v1/*`); larger ones get 413 PAYLOAD_TOO_LARGE.',
  }),
  BODY_LIMIT_UPLOAD_BYTES: Type.Integer({
    minimum: 1024,
    default: 25 * 1024 * 1024,
    description: 'Largest uploaded file (multipart audio on `/api/v1/audio/transcriptions`).',
  }),
  BODY_LIMIT_DEFAULT_BYTES: Type.Integer({
    minimum: 1024,
    default: 1024 * 1024,
    description: 'Largest body of every other route (dashboard, sign-in, OAuth, operator API).',
  }),
  MAX_IMAGES_PER_REQUEST: Type.Integer({
    minimum: 1,
    maximum: 500,
    default: 20,
    description:
      "Most image parts one chat request may carry (each is held at its model's image-token budget); more is a 400 `TOO_MANY_IMAGES`.",
  }),
  RESPONSES_RETENTION_DAYS: Type.Integer({
    minimum: 1,
    maximum: 3650,
    default: 30,
    description:
      'Days a Responses API answer made with `store: true` is kept (job `expire-responses` deletes it after).',
  }),
  RESPONSES_STORE_MAX_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 104857600,
    default: 1048576,
    description:
      'Largest conversation (input items, JSON bytes) a `store: true` response keeps; more is a 413 `PAYLOAD_TOO_LARGE`.',
  }),
  MIN_AFFORDABLE_OUTPUT_TOKENS: Type.Integer({
    minimum: 1,
    default: 256,
    description:
      "A chat without `max_tokens` that cannot afford its model's full output cap is sent with the cap it can afford, if at least this many tokens; below it the call is refused (402/429).",
  }),
  MAX_TRANSCRIPTION_SECONDS: Type.Integer({
    minimum: 1,
    maximum: 86400,
    default: 3600,
    description:
      "Longest audio a transcription accepts (a model's `maxPredictSeconds` lowers it); longer is a 400 `AUDIO_TOO_LONG`.",
  }),
  REALTIME_ENABLED: Type.Boolean({
    default: false,
    description:
      'Enables `POST /api/v1/realtime/sessions` (off: 404). Each session is charged its worst case, set by the two caps below.',
  }),
  REALTIME_MAX_SESSION_SECONDS: Type.Integer({
    minimum: 10,
    maximum: 7200,
    default: 1800,
    description:
      "Realtime: the seconds each session is held and charged for (`second` price), and the lifetime of its client secret set upstream; keep it at or above the provider's own session limit (OpenAI: 30 minutes).",
  }),
  REALTIME_MAX_RESPONSE_OUTPUT_TOKENS: Type.Integer({
    minimum: 1,
    maximum: 4096,
    default: 1024,
    description: 'Realtime: `max_response_output_tokens` set on the upstream session.',
  }),
  WEBHOOK_ALLOW_HTTP: Type.Boolean({
    default: false,
    description: 'Outbound event webhooks: accept `http://` endpoint URLs (off: `https://` only).',
  }),
  WEBHOOK_ALLOW_PRIVATE_ADDRESSES: Type.Boolean({
    default: false,
    description:
      'Outbound event webhooks: let endpoints resolve to loopback, private or link-local addresses (off: refused, at registration and at each connection).',
  }),
  WEBHOOK_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    maximum: 60,
    default: 10,
    description:
      'Outbound event webhooks: time a receiver has to answer one attempt; slower is a failed attempt, retried later.',
  }),
  WEBHOOK_DELIVERY_INTERVAL_SECONDS: Type.Integer({
    minimum: 0,
    default: 5,
    description:
      'Outbound event webhooks: how often each process sends the deliveries that came due (retries); 0 turns the timer off (new events are still sent at once, and `POST /api/admin/cron/deliver-webhooks` sends the due ones).',
  }),
  TOLLGATE_CONFIG: Type.Optional(
    Type.String({
      description:
        'Path of an optional JSON config file: any variable above, plus `providers` (extra OpenAI-compatible upstreams).',
    }),
  ),
  providers: Type.Array(
    Type.Object({
      name: Type.String({ pattern: '^[a-z0-9][a-z0-9-]*$' }),
      baseUrl: Type.String({ pattern: '^https?://' }),
      apiKey: Type.Optional(Type.String()),
    }),
    { default: [], description: 'Extra OpenAI-compatible upstreams (config file only).' },
  ),
});

/** The default `DATA_DIR`: `data/` in the project folder (beside package.json). */
export const PROJECT_DATA_DIR = fileURLToPath(new URL('../../data', import.meta.url));

/** The validated configuration. */
export type Config = Static<typeof ConfigSchema> & { PUBLIC_BASE_URL: string };

/** Raised when the configuration is invalid; its message names each bad variable and what it expects. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parses the configuration from `env` (and the JSON file `env.TOLLGATE_CONFIG` names). Environment variables
 * win over the file. `overrides` are applied last; tests use them.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Config> = {},
): Config {
  const known = Object.keys(ConfigSchema.properties);
  let fromFile: Record<string, unknown> = {};
  const file = overrides.TOLLGATE_CONFIG ?? env.TOLLGATE_CONFIG;
  if (file) {
    try {
      fromFile = JSON.parse(readFileSync(resolve(file), 'utf8'));
    } catch (error) {
      throw new ConfigError(`TOLLGATE_CONFIG: cannot read ${file} as JSON (${(error as Error).message})`);
    }
  }
  const raw: Record<string, unknown> = { ...fromFile };
  for (const name of known) {
    const value = env[name];
    if (value !== undefined && value !== '') raw[name] = value;
  }
  Object.assign(raw, overrides);
  const dataDirGiven = raw.DATA_DIR !== undefined;
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw));
  if (!Value.Check(ConfigSchema, converted)) {
    const problems = [...Value.Errors(ConfigSchema, converted)].map((error) => {
      const name =
        error.instancePath.replace(/^\//, '') ||
        (error.params as { requiredProperties?: string[] }).requiredProperties?.join(', ') ||
        '(config)';
      const schema = (ConfigSchema.properties as Record<string, { description?: string }>)[name.split('/')[0]];
      return `${name}: ${error.message}${schema?.description ? ` — expected: ${schema.description}` : ''} (got ${JSON.stringify(raw[name.split('/')[0]])})`;
    });
    throw new ConfigError(`Invalid configuration:\n  ${[...new Set(problems)].join('\n  ')}`);
  }
  const config = converted as Config;
  // Unset, the folder is the project's own, not the working folder's: `./bin/tollgate admin-token` run from
  // elsewhere must open the database `npm start` made, not a new one there.
  if (!dataDirGiven) {
    config.DATA_DIR = PROJECT_DATA_DIR;
    // Before, the default was `./data` of the working folder. A deployment that relied on it (a service
    // started elsewhere than the project) must not silently start on a new, empty database: it is told.
    const workingData = resolve('data', 'tollgate.db');
    if (
      !config.DATABASE_URL &&
      resolve('data') !== PROJECT_DATA_DIR &&
      existsSync(workingData) &&
      !existsSync(resolve(PROJECT_DATA_DIR, 'tollgate.db'))
    ) {
      throw new ConfigError(
        `DATA_DIR is unset, and its default is the project's ${PROJECT_DATA_DIR}, but the database is at ${workingData}: ` +
          `set DATA_DIR=${resolve('data')} to keep using it.`,
      );
    }
  }
  config.PUBLIC_BASE_URL ??= `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${config.PORT}`;
  return config;
}
