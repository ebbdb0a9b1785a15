import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { freePort, spawnNode, waitForHttp, type Child } from './processes.ts';
import type { Target } from './load.ts';

/**
 * Tollgate as the benchmark runs it: `node src/cli.ts serve` in a process of its own, configured as in
 * production (billing holds and settles, spending limits, usage records) except that the request-rate
 * limits and the background timers are off, and provisioned through its public APIs only.
 */

/** The operator token of every benchmark instance (loopback only, gone with the instance). */
/** The operator token every instance a bench starts accepts. */
export const ADMIN_TOKEN = 'tga_bench_operator_token_0123456789';
/** The PostgreSQL server the benchmark uses; each run works in a fresh schema it drops afterwards. */
export const POSTGRES_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** The public id of the benchmark's model, and the name the upstream sees. */
export const MODEL_ID = 'bench/chat';
export const UPSTREAM_MODEL = 'gpt-bench';

/**
 * `body` sent straight to the OpenAI-compatible chat endpoint at `baseUrl`, with the upstream's model name:
 * the mock itself (the direct path), or the bare proxy in front of it.
 */
export function upstreamTarget(baseUrl: string, body: Record<string, unknown>): Target {
  const headers = { authorization: 'Bearer x' };
  return { url: `${baseUrl}/v1/chat/completions`, body: { ...body, model: UPSTREAM_MODEL }, headers: () => headers };
}

/** Where an instance keeps its data; survives restarts of the instance (the data scale grows between them). */
export type Store = { dialect: 'sqlite'; dataDir: string } | { dialect: 'postgres'; schema: string };

/** A fresh, empty store; `dispose` deletes it. */
export async function createStore(
  dialect: 'sqlite' | 'postgres',
): Promise<{ store: Store; dispose: () => Promise<void> }> {
  if (dialect === 'sqlite') {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
    return { store: { dialect, dataDir }, dispose: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const schema = `bench_${process.pid}_${Date.now().toString(36)}`;
  await withPostgres((client) => client.query(`CREATE SCHEMA ${schema}`));
  return {
    store: { dialect, schema },
    dispose: () => withPostgres((client) => client.query(`DROP SCHEMA ${schema} CASCADE`)).then(() => undefined),
  };
}

/** Runs `fn` with a connected PostgreSQL client. */
export async function withPostgres<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A running instance. */
export interface Tollgate {
  child: Child;
  baseUrl: string;
}

/**
 * Builds the checkout's server bundle unless it is fresh, so that its `serve` runs what `npm start` runs
 * (src/platform/server-bundle.ts, the checkout's own). BENCH_SERVE_CODE=source serves from `src` instead.
 */
async function ensureServerBundle(checkout: string): Promise<void> {
  // A checkout from before the bundle (bench/ab.ts against an old base) serves from `src`.
  const bundleModule = join(checkout, 'src/platform/server-bundle.ts');
  if (process.env.BENCH_SERVE_CODE === 'source' || !existsSync(bundleModule)) return;
  const { serverBundleState } = await import(pathToFileURL(bundleModule).href);
  if (serverBundleState().state === 'fresh') return;
  const build = spawnSync(process.execPath, ['scripts/build-server.ts'], { cwd: checkout, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`building the server bundle in ${checkout}: ${build.stderr}`);
}

/**
 * Node flags from BENCH_NODE_FLAGS (space-separated) for every proxy a bench starts, e.g.
 * `--cpu-prof --cpu-prof-dir=.tmp/profiles` to profile a paced run. A profiled `serve` keeps the flags it was
 * started with (it does not re-execute itself under a sampling profiler), and runs the sources.
 */
export function benchNodeFlags(): string[] {
  return process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
}

/** Starts `serve` on `store` with the OpenAI provider pointed at the mock; `nodeArgs` go before the script (e.g. `--cpu-prof`). */
export async function startTollgate(
  store: Store,
  upstreamUrl: string,
  nodeArgs: string[] = [],
  /** The checkout whose `src/cli.ts` serves (bench/ab.ts compares two); default this one. */
  checkout = process.cwd(),
): Promise<Tollgate> {
  const port = await freePort();
  await ensureServerBundle(checkout);
  const env: Record<string, string> = {
    HOST: '127.0.0.1',
    PORT: String(port),
    TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
    OPENAI_BASE_URL: `${upstreamUrl}/v1`,
    OPENAI_API_KEY: 'x',
    // The default level, as in production: one line per request (BENCH_LOG_LEVEL to change it).
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    RATE_LIMIT_KEY_RPM: '0',
    RATE_LIMIT_APP_RPM: '0',
    RATE_LIMIT_SIGNUP_PER_MINUTE: '0',
    SWEEP_INTERVAL_SECONDS: '0',
    ...(process.env.BENCH_SERVE_CODE === 'source' ? { TOLLGATE_SERVE_CODE: 'source' } : {}),
    ...(store.dialect === 'sqlite'
      ? { DATA_DIR: store.dataDir }
      : { DATABASE_URL: POSTGRES_URL, DATABASE_SCHEMA: store.schema }),
  };
  const child = spawnNode(`tollgate-${store.dialect}`, [...benchNodeFlags(), ...nodeArgs, 'src/cli.ts', 'serve'], {
    env,
    cwd: checkout,
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForHttp(`${baseUrl}/healthz`, child, 60_000);
  return { child, baseUrl };
}

async function call(
  baseUrl: string,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return { status: response.status, body: parsed, headers: response.headers };
}

const admin = (baseUrl: string, method: string, path: string, body?: unknown) =>
  call(baseUrl, method, path, body, { authorization: `Bearer ${ADMIN_TOKEN}` });

/**
 * Puts the benchmark model in the catalogue and creates `keyCount` funded users with one API key each, the
 * way an operator and users would: operator API for users and credits, dashboard session for the keys.
 * Every key has a daily spending limit, so the limit check runs on every call.
 */
export async function provision(instance: Tollgate, keyCount: number): Promise<string[]> {
  const { baseUrl } = instance;
  await admin(baseUrl, 'PUT', `/api/admin/models/${MODEL_ID}`, {
    provider: 'openai',
    upstreamModel: UPSTREAM_MODEL,
    pricing: { prompt: 1, completion: 2 },
    maxOutputTokens: 1024,
  });
  const keys: string[] = [];
  for (let i = 0; i < keyCount; i++) {
    const email = `bench-${i}-${Date.now().toString(36)}@bench.invalid`;
    const password = 'bench-password-123';
    const user = await admin(baseUrl, 'POST', '/api/admin/users', { email, password, name: `Bench ${i}` });
    await admin(baseUrl, 'POST', `/api/admin/users/${user.body.id}/credits`, {
      amount: 1_000_000,
      reason: 'benchmark',
    });
    const session = await call(baseUrl, 'POST', '/api/auth/signin', { email, password }, {});
    const cookie = session.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const created = await call(
      baseUrl,
      'POST',
      '/api/user/api-keys',
      { name: 'bench', permissions: ['ai:chat'], limit: 100_000, limitPeriod: 'daily' },
      { cookie, 'x-csrf-token': session.body.csrfToken },
    );
    keys.push(created.body.apiKey.key);
  }
  return keys;
}

/** The chat target of an instance: the keys are used in turn, one per request. */
export function tollgateTarget(instance: Tollgate, keys: string[], body: Record<string, unknown>): Target {
  let next = 0;
  const headers = keys.map((key) => ({ authorization: `Bearer ${key}` }));
  return {
    url: `${instance.baseUrl}/api/v1/chat/completions`,
    body: { ...body, model: MODEL_ID },
    headers: () => headers[next++ % headers.length],
  };
}

/**
 * The same chat request through OpenAI's Responses surface (`POST /api/v1/responses`): the user message as
 * `input`, `max_tokens` as `max_output_tokens` (the streamed cells' `stream_options` is accepted and ignored).
 */
export function responsesTarget(
  instance: Tollgate,
  keys: string[],
  body: { messages: Array<{ content: string }>; max_tokens: number },
): Target {
  const target = tollgateTarget(instance, keys, {
    input: body.messages[0].content,
    max_output_tokens: body.max_tokens,
  });
  return { ...target, url: `${instance.baseUrl}/api/v1/responses` };
}

/**
 * The same chat request through Anthropic's Messages surface (`POST /api/v1/messages`, the model's OpenAI
 * upstream reached by translation), with the headers Anthropic's clients send.
 */
export function messagesTarget(
  instance: Tollgate,
  keys: string[],
  body: { messages: unknown[]; max_tokens: number },
): Target {
  let next = 0;
  const headers = keys.map((key) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' }));
  return {
    url: `${instance.baseUrl}/api/v1/messages`,
    body: { model: MODEL_ID, max_tokens: body.max_tokens, messages: body.messages },
    headers: () => headers[next++ % headers.length],
    streamFields: { stream: true },
  };
}

/** The operator's ledger check after the load: every balance recomputed from the ledger, no expired open hold. */
export async function verifyLedger(instance: Tollgate): Promise<{ ok: boolean; detail: string }> {
  const { body } = await admin(instance.baseUrl, 'GET', '/api/admin/ledger/verify');
  return {
    ok: body.ok === true,
    detail: `${body.wallets} wallets, ${body.entries} entries, ${body.differences.length} differences`,
  };
}
