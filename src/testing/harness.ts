import { after, before, describe } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import type { Kysely } from 'kysely';
import { loadConfig, type Config } from '../config.ts';
import { ManualClock, systemClock, type Clock } from '../platform/clock.ts';
import { createService, type Service } from '../service.ts';
import { createLogger } from '../platform/logger.ts';
import { randomText } from '../platform/ids.ts';
import { allTables, type AllTables } from './all-tables.ts';

/** The engines the suites run on; `TEST_DATABASES=sqlite` (or `postgres`) narrows a local run. */
export type TestDatabase = 'sqlite' | 'postgres';

/** The PostgreSQL the tests use; each suite gets a schema of its own in it. */
export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export function selectedDatabases(): TestDatabase[] {
  const wanted = (process.env.TEST_DATABASES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
  return (['sqlite', 'postgres'] as const).filter((d) => wanted.includes(d));
}

/** Options of a test environment. */
export interface TestEnvOptions {
  /** Config values for this suite (provider URLs, secrets…). */
  config?: Partial<Config>;
  /** Use a settable clock (default: the wall clock). */
  manualClock?: boolean | string;
  /** Start the background timers (default false: tests run jobs through the cron route). */
  timers?: boolean;
  /** Where the service's JSON log lines go (tests of logging read them). */
  logDestination?: NodeJS.WritableStream;
}

/** A fresh database and configuration for one suite: a temp SQLite folder or a new PostgreSQL schema. */
export class TestDatabaseSpace {
  readonly kind: TestDatabase;
  readonly schema = `t_${process.pid}_${randomText(8).toLowerCase()}`;
  readonly dataDir = mkdtempSync(join(tmpdir(), 'tollgate-test-'));

  constructor(kind: TestDatabase) {
    this.kind = kind;
  }

  /** Creates the schema (PostgreSQL). */
  async create(): Promise<void> {
    if (this.kind !== 'postgres') return;
    const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await client.connect();
    await client.query(`CREATE SCHEMA "${this.schema}"`);
    await client.end();
  }

  /** Environment variables that point a process at this space. */
  env(): Record<string, string> {
    return this.kind === 'postgres'
      ? { DATABASE_URL: TEST_POSTGRES_URL, DATABASE_SCHEMA: this.schema, DATABASE_POOL_SIZE: '10' }
      : { DATA_DIR: this.dataDir };
  }

  async drop(): Promise<void> {
    rmSync(this.dataDir, { recursive: true, force: true });
    if (this.kind !== 'postgres') return;
    const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${this.schema}" CASCADE`);
    await client.end();
  }
}

/**
 * Rate limits high enough that suites creating many users and calls are not throttled; the rate-limit
 * suites set their own. Sign-in failures from 127.0.0.1 are not throttled per address either (suites that
 * test wrong passwords would otherwise add up); per account they are, as in production.
 */
export const RELAXED_RATE_LIMITS = {
  RATE_LIMIT_SIGNUP_PER_MINUTE: '100000',
  SIGNIN_FREE_FAILURES_PER_ADDRESS: '100000',
  RATE_LIMIT_KEY_RPM: '1000000',
  RATE_LIMIT_APP_RPM: '1000000',
};

/** A response read whole: status, headers and the parsed JSON body (or the text when it is not JSON). */
export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** Request options of {@link TestEnv.request}. */
export interface RequestOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Send the body as-is (a string), not JSON-encoded. */
  raw?: string;
}

/** Sends a request to `baseUrl` and reads the whole answer. */
export async function request(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<TestResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(baseUrl + path, { method, headers, body, redirect: 'manual' });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {}
  return { status: response.status, headers: response.headers, body: parsed, text };
}

/** A signed-in dashboard user: its cookie and CSRF token. */
export interface DashboardSession {
  userId: string;
  email: string;
  password: string;
  cookie: string;
  csrfToken: string;
}

/**
 * One running Tollgate on a fresh database, listening on a random loopback port, with helpers that go
 * through the real HTTP API.
 */
export class TestEnv {
  readonly space: TestDatabaseSpace;
  readonly options: TestEnvOptions;
  service!: Service;
  baseUrl!: string;
  adminToken = `tga_test_${randomText(32)}`;
  clock: Clock & Partial<ManualClock> = new ManualClock();

  constructor(kind: TestDatabase, options: TestEnvOptions = {}) {
    this.space = new TestDatabaseSpace(kind);
    this.options = options;
  }

  get kind(): TestDatabase {
    return this.space.kind;
  }

  /** The whole database, to check what the features wrote (a test sees every feature's tables). */
  get db(): Kysely<AllTables> {
    return allTables(this.service.ctx.db);
  }

  /** The settable clock (only when the suite asked for `manualClock`). */
  get manualClock(): ManualClock {
    if (!(this.clock instanceof ManualClock) || !this.options.manualClock)
      throw new Error('this suite runs on the wall clock');
    return this.clock;
  }

  /** The configuration this environment's processes run with. */
  config(extra: Partial<Config> = {}): Config {
    return loadConfig(
      {
        ...this.space.env(),
        LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
        TOLLGATE_ADMIN_TOKEN: this.adminToken,
        PORT: '0',
        ...RELAXED_RATE_LIMITS,
      },
      { ...this.options.config, ...extra },
    );
  }

  async start(): Promise<void> {
    await this.space.create();
    this.clock = this.options.manualClock
      ? new ManualClock(typeof this.options.manualClock === 'string' ? this.options.manualClock : Date.now())
      : systemClock;
    const config = this.config();
    this.service = await createService({
      config,
      clock: this.clock,
      timers: this.options.timers ?? false,
      log: createLogger(this.options.logDestination ? 'info' : config.LOG_LEVEL, this.options.logDestination),
    });
    this.baseUrl = await this.service.listen(0);
    config.PUBLIC_BASE_URL = this.baseUrl;
  }

  async stop(): Promise<void> {
    await this.service?.close();
    await this.space.drop();
  }

  request(method: string, path: string, options: RequestOptions = {}): Promise<TestResponse> {
    return request(this.baseUrl, method, path, options);
  }

  /** A request with the operator token. */
  admin(method: string, path: string, body?: unknown): Promise<TestResponse> {
    return this.request(method, path, { token: this.adminToken, body });
  }

  /** Creates a user through the operator API and signs it in to the dashboard. */
  async createUser(overrides: { email?: string; password?: string; name?: string } = {}): Promise<DashboardSession> {
    const email = overrides.email ?? `user-${randomText(10).toLowerCase()}@example.com`;
    const password = overrides.password ?? `pw-${randomText(16)}`;
    const created = await this.admin('POST', '/api/admin/users', {
      email,
      password,
      name: overrides.name ?? 'Test User',
    });
    if (created.status !== 201) throw new Error(`create user: ${created.status} ${created.text}`);
    return this.signIn(email, password);
  }

  /** Signs in through the JSON sign-in endpoint. */
  async signIn(email: string, password: string): Promise<DashboardSession> {
    const response = await fetch(`${this.baseUrl}/api/auth/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const body = (await response.json()) as any;
    if (response.status !== 200) throw new Error(`sign in: ${response.status} ${JSON.stringify(body)}`);
    const cookie = response.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    return { userId: body.user.id, email, password, cookie, csrfToken: body.csrfToken };
  }

  /** A request made by the dashboard session (cookie, and the CSRF header on writes). */
  dashboard(session: DashboardSession, method: string, path: string, body?: unknown): Promise<TestResponse> {
    return this.request(method, path, { body, headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken } });
  }
}

/**
 * Declares `title` once per selected database (`title [sqlite]`, `title [postgres]`), each with its own
 * running service; `body` registers the tests and reads the environment when they run.
 */
export function describeEachDatabase(title: string, body: (env: TestEnv) => void, options: TestEnvOptions = {}): void {
  for (const kind of selectedDatabases()) {
    describe(`${title} [${kind}]`, () => {
      const env = new TestEnv(kind, options);
      before(() => env.start());
      after(() => env.stop());
      body(env);
    });
  }
}

/**
 * Resolves with the base URL a started `tollgate serve` child logs once it listens, and everything it printed.
 * A serve that did not start in time is killed, not left running: a live child would keep the test
 * process (and the whole run) waiting on its pipes after the failure.
 */
export async function serveAddress(child: ChildProcess): Promise<{ baseUrl: string; output: () => string }> {
  let output = '';
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start within 60 s:\n${output}`));
    }, 60_000);
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.stderr!.on('data', (chunk) => (output += chunk));
    child.on('exit', (code) => reject(new Error(`serve exited ${code}:\n${output}`)));
  });
  return { baseUrl, output: () => output };
}

/**
 * Starts `tollgate serve` as a separate process on `env`'s database (PostgreSQL, to share it), on a free
 * port; resolves with its base URL once it answers. Used to prove guarantees across processes.
 */
export async function startServeProcess(
  env: TestEnv,
  extraEnv: Record<string, string> = {},
): Promise<{
  baseUrl: string;
  child: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}> {
  const child = spawn(process.execPath, ['src/cli.ts', 'serve'], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: {
      ...process.env,
      ...env.space.env(),
      ...RELAXED_RATE_LIMITS,
      TOLLGATE_ADMIN_TOKEN: env.adminToken,
      PORT: '0',
      LOG_LEVEL: 'info',
      SWEEP_INTERVAL_SECONDS: '0',
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { baseUrl, output } = await serveAddress(child);
  return {
    baseUrl,
    child,
    output,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      }),
  };
}
