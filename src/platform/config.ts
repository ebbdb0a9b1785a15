import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Type, { type Static } from 'typebox';
import Value from 'typebox/value';

/**
 * The longest wait a Node timer holds: 2^31 - 1 ms (~24.8 days). A setting that becomes a timer's delay takes at
 * most this, since Node runs a longer timer after 1 ms (with a warning): an UPSTREAM_TIMEOUT_MS above it answered
 * every call 504 at once, a SWEEP_INTERVAL_SECONDS above it ran the jobs without pause.
 */
export const TIMER_MAX_MS = 2 ** 31 - 1;

/** {@link TIMER_MAX_MS} in whole seconds, the bound of the settings counted in seconds. */
export const TIMER_MAX_SECONDS = Math.floor(TIMER_MAX_MS / 1000);

/**
 * The platform's own settings (server, database, secrets, Redis, logging, timers, HTTP limits). Each feature
 * declares its own section beside its code; src/config.ts composes them into the one schema the
 * configuration is parsed against, once, at start-up.
 */
export const PlatformConfigSection = Type.Object({
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
  DATABASE_CONNECT_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    maximum: TIMER_MAX_SECONDS,
    default: 10,
    description:
      'PostgreSQL: how long a request waits for a connection (a free one of the pool, or a new one to open); past it, 503 `SERVICE_UNAVAILABLE`.',
  }),
  DATABASE_QUERY_TIMEOUT_SECONDS: Type.Integer({
    minimum: 0,
    maximum: TIMER_MAX_SECONDS,
    default: 30,
    description:
      "PostgreSQL: how long a request's statement waits for its answer; past it, the connection is closed and the request answers 503 `SERVICE_UNAVAILABLE`. Migrations, the ledger check and background jobs are not limited. 0: no limit.",
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
  SWEEP_INTERVAL_SECONDS: Type.Integer({
    minimum: 0,
    maximum: TIMER_MAX_SECONDS,
    default: 60,
    description:
      'How often each process runs the background jobs (expired holds, reconciliation); 0 turns the timers off.',
  }),
  SHUTDOWN_GRACE_MS: Type.Integer({
    minimum: 0,
    maximum: TIMER_MAX_MS,
    default: 10000,
    description:
      'On SIGTERM, how long in-flight calls and streams may run before they are cut (and settled for what they produced).',
  }),
  TRUST_PROXY: Type.String({
    default: 'false',
    pattern: '^(false|[0-9]{1,2}|((loopback|linklocal|uniquelocal|[0-9A-Fa-f:.]+(/[0-9]{1,3})?)( *, *|$))+)$',
    description:
      'Which `X-Forwarded-For` addresses are believed as the client address: `false` (none: the peer address is the client), a hop count (the number of proxies in front of Tollgate), or a comma list of proxy addresses/CIDRs (`loopback`, `linklocal`, `uniquelocal` allowed).',
  }),
  HTTP_REQUEST_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    maximum: TIMER_MAX_SECONDS,
    default: 60,
    description:
      'Time a client has to send a whole request (headers and body), uploads apart; a slower one is cut with 408. Answers, streams included, are not limited by it.',
  }),
  HTTP_UPLOAD_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    maximum: TIMER_MAX_SECONDS,
    default: 600,
    description: 'Time a client has to send a whole upload (a multipart body, such as audio to transcribe).',
  }),
  HTTP_HEADERS_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    maximum: TIMER_MAX_SECONDS,
    default: 10,
    description: 'Time a client has to send the request headers (at most `HTTP_REQUEST_TIMEOUT_SECONDS`).',
  }),
  HTTP_KEEPALIVE_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    maximum: TIMER_MAX_SECONDS,
    default: 72,
    description:
      "How long an idle keep-alive connection stays open between requests (above a load balancer's idle timeout, usually 60 s).",
  }),
  BODY_LIMIT_API_BYTES: Type.Integer({
    minimum: 1024,
    default: 4 * 1024 * 1024,
    description: 'Largest JSON body of an AI call (`/api/v1/*`); larger ones get 413 PAYLOAD_TOO_LARGE.',
  }),
  BODY_LIMIT_DEFAULT_BYTES: Type.Integer({
    minimum: 1024,
    default: 1024 * 1024,
    description: 'Largest body of every other route (dashboard, sign-in, OAuth, operator API).',
  }),
  TOLLGATE_CONFIG: Type.Optional(
    Type.String({
      description:
        'Path of an optional JSON config file: any variable above, plus `providers` (extra OpenAI-compatible upstreams).',
    }),
  ),
});

/** The default `DATA_DIR`: `data/` in the project folder (beside package.json). */
export const PROJECT_DATA_DIR = fileURLToPath(new URL('../../data', import.meta.url));

/** The platform's settings, validated (what every feature is handed as `config`, at least). */
export type PlatformConfig = Static<typeof PlatformConfigSection> & { PUBLIC_BASE_URL: string };

/**
 * Settings that hold a secret (API keys, tokens, signing secrets), and the `apiKey` field of a setting's entries:
 * a refusal never shows their value.
 */
const SECRET_SETTING = /_(KEY|SECRET|TOKEN)$|^apiKey$/;

/**
 * What a refusal says of the value it refused: the value itself, to spot the mistake, but never a secret, which
 * would end up in the logs of whatever runs the server: a secret setting's length only, a URL without its
 * password (`postgres://user:***@host`), a provider without its `apiKey`.
 */
function shownValue(name: string, value: unknown): string {
  if (SECRET_SETTING.test(name))
    return typeof value === 'string' ? `a value of ${value.length} characters, not shown` : 'not shown';
  const text = JSON.stringify(value, (key, inner) => (key === 'apiKey' ? '***' : inner));
  return `got ${text?.replace(/(\/\/[^/@:\s]*:)[^@/\s]*@/g, '$1***@')}`;
}

/** What a refusal reads of a setting's schema (or of a field's, inside an array or object setting). */
interface SettingSchema {
  description?: string;
  anyOf?: unknown[];
  items?: SettingSchema;
  properties?: Record<string, SettingSchema>;
}

/** Raised when the configuration is invalid; its message names each bad variable and what it expects. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parses the configuration against `schema` (the composed one, src/config.ts) from `env` (and the JSON file
 * `env.TOLLGATE_CONFIG` names). Environment variables win over the file. `overrides` are applied last; tests
 * use them. A bad value stops the start with a message that names the variable and what it expects.
 */
export function parseConfig<S extends typeof PlatformConfigSection>(
  ConfigSchema: S,
  env: Record<string, string | undefined>,
  overrides: Partial<Static<S>>,
): Static<S> & { PUBLIC_BASE_URL: string } {
  const known = Object.keys(ConfigSchema.properties);
  let fromFile: Record<string, unknown> = {};
  const file = overrides.TOLLGATE_CONFIG ?? env.TOLLGATE_CONFIG;
  if (file) {
    try {
      fromFile = JSON.parse(readFileSync(resolve(file), 'utf8'));
    } catch (error) {
      throw new ConfigError(`TOLLGATE_CONFIG: cannot read ${file} as JSON (${(error as Error).message})`);
    }
    if (!fromFile || typeof fromFile !== 'object' || Array.isArray(fromFile))
      throw new ConfigError(`TOLLGATE_CONFIG: ${file} must hold a JSON object of settings ({ "PORT": 3000, … })`);
    // A misspelt name would leave its setting at the default without a word (no provider, another port).
    const unknown = Object.keys(fromFile).filter((name) => !known.includes(name));
    if (unknown.length > 0)
      throw new ConfigError(
        `TOLLGATE_CONFIG: ${file} has names that are no setting: ${unknown.join(', ')}. ` +
          'The settings are the variables of the README\'s Configuration table, and "providers".',
      );
  }
  const raw: Record<string, unknown> = { ...fromFile };
  for (const name of known) {
    const value = env[name];
    if (value !== undefined && value !== '') raw[name] = value;
  }
  Object.assign(raw, overrides);
  const dataDirGiven = raw.DATA_DIR !== undefined;
  const given = { ...raw };
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, raw)) as Record<string, unknown>;
  // The converter reads "1.5" as 1 and "0x10" as 16: a whole number setting takes only digits, else it is
  // refused with the text as given.
  for (const [name, schema] of Object.entries(ConfigSchema.properties as Record<string, { type?: string }>)) {
    const text = given[name];
    if (schema.type === 'integer' && typeof text === 'string' && !/^\s*[+-]?\d+\s*$/.test(text)) converted[name] = text;
  }
  if (!Value.Check(ConfigSchema, converted)) {
    const problems = [...Value.Errors(ConfigSchema, converted)].map((error) => {
      const name =
        error.instancePath.replace(/^\//, '') ||
        (error.params as { requiredProperties?: string[] }).requiredProperties?.join(', ') ||
        '(config)';
      // A field inside a setting (`providers/0/baseUrl`) is told with its own description and value.
      const [setting, ...path] = name.split('/') as [string, ...string[]];
      let schema = (ConfigSchema.properties as Record<string, SettingSchema | undefined>)[setting];
      let value = given[setting];
      for (const step of path) {
        schema = schema?.items ?? schema?.properties?.[step];
        value = (value as Record<string, unknown> | undefined)?.[step];
      }
      const got = `(${shownValue(path.at(-1) ?? setting, value)})`;
      // A choice among fixed values says them all, once, rather than the validator's one line per branch.
      const choices = schema?.anyOf?.map((branch) => (branch as { const?: unknown }).const);
      if (choices?.length && choices.every((choice) => choice !== undefined))
        return `${name}: must be one of ${choices.join(', ')} ${got}`;
      // A pattern is the validator's, not a sentence (TOPUP_CURRENCY's lists 21 currencies letter by letter):
      // with a description to say what is expected, the regex is left out.
      const message =
        schema?.description && error.message.startsWith('must match pattern') ? 'is not valid' : error.message;
      return `${name}: ${message}${schema?.description ? ` — expected: ${schema.description}` : ''} ${got}`;
    });
    throw new ConfigError(`Invalid configuration:\n  ${[...new Set(problems)].join('\n  ')}`);
  }
  const config = converted as Static<S> & { PUBLIC_BASE_URL: string };
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
