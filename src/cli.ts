import { existsSync, readFileSync } from 'node:fs';
import { flushCompileCache } from 'node:module';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_DIR, serverBundleState, type ServerBundleState } from './platform/server-bundle.ts';
import type { Service } from './service.ts';

/**
 * The operator CLI. Each command builds the service without listening and calls the same code the
 * operator API calls, so the CLI and the API cannot drift apart.
 *
 * The service's modules are imported inside the commands, not at the top: `serve` may re-execute the
 * process first (see {@link SERVE_RUNTIME}), and would otherwise load the whole service twice.
 */
type Command = {
  usage: string;
  options?: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;
  run(values: Record<string, any>): Promise<void>;
};

/**
 * How `serve` runs Node, for resident memory (issue 8): together they cost a few percent of throughput at
 * concurrency 64 (README "Configuration" gives the measurements). A value the operator already
 * gave (on the command line, in NODE_OPTIONS or in the environment) is kept.
 */
export const SERVE_RUNTIME = {
  env: {
    /**
     * glibc: hand freed blocks of 128 KiB and more straight back to the system. By default glibc raises that
     * threshold to the largest block freed so far, so the 19 MiB of every Argon2id password hash (made on a
     * libuv worker thread) stay cached in that thread's arena: about 120 MB after a few sign-ins, for good.
     */
    MALLOC_MMAP_THRESHOLD_: '131072',
    /**
     * glibc: one malloc arena instead of up to eight per core. V8's compiler and GC threads each took an
     * arena of their own, and what they freed stayed cached in it (5–10 MB more under load; one arena
     * rather than two, ~3 MB less again). The JavaScript thread does nearly all the allocating, so nobody
     * waits for the arena's lock.
     */
    MALLOC_ARENA_MAX: '1',
    /**
     * Node: keep the type-stripped modules on disk, so that `serve` loads them without Node's TypeScript
     * stripper, a WebAssembly build of swc that stays loaded once used (~16 MB). The cache lives beside the
     * code it was made from, owned by whoever installed it; Node checks each entry against its source.
     */
    NODE_COMPILE_CACHE: join(PROJECT_DIR, 'node_modules/.cache/tollgate-compile'),
  } as Record<string, string>,
  /**
   * V8: young-generation semi-spaces of at most 8 MB (the default lets them grow to 32 MB; 8 rather than 16
   * took ~15 MB off the peak at no throughput or latency cost we could measure apart from noise), and an old
   * generation collected once it has grown 20% past what the last full collection kept. On a large machine
   * V8 otherwise lets it grow up to four times that before collecting (~70 MB more under load).
   */
  nodeFlags: ['--max-semi-space-size=8', '--heap-growing-percent=20'],
};

/**
 * Flags that start a sampling profiler. Its interval timer survives `execve`, and the new process, which
 * has no SIGPROF handler yet, dies of the first tick (seen: `--cpu-prof` killed by SIGPROF at start-up);
 * a profiled `serve` therefore keeps the settings it was started with.
 */
const SAMPLING_PROFILERS = ['--cpu-prof', '--prof', '--heap-prof'];

/** Whether `execArgv` starts a sampling profiler ({@link SAMPLING_PROFILERS}): then `serve` never re-executes. */
function underSamplingProfiler(execArgv: readonly string[]): boolean {
  return execArgv.some((arg) => SAMPLING_PROFILERS.includes(arg.split('=')[0]!));
}

/**
 * The operator's choice of V8's old-generation growth, in percent, in place of {@link SERVE_RUNTIME}'s 20 (0
 * lets V8 choose). Why a knob: 20% keeps the peak low under ordinary load, but with thousands of long streams
 * open the live heap is large and V8 then collects it every few hundred milliseconds. At 5,000 open streams,
 * 50% spent ~10% less CPU per stream and cut the gap p99 for ~10% more memory there, and ~15 MiB more at
 * concurrency 64 (docs/scaling.md, eighth pass). A V8 flag cannot be given in NODE_OPTIONS, hence a variable.
 */
export const HEAP_GROWTH_VARIABLE = 'TOLLGATE_HEAP_GROWTH_PERCENT';

/** {@link SERVE_RUNTIME}'s Node flags, with the heap growth set in {@link HEAP_GROWTH_VARIABLE}; throws on a bad value. */
export function serveNodeFlags(env: NodeJS.ProcessEnv): string[] {
  const chosen = env[HEAP_GROWTH_VARIABLE];
  if (chosen === undefined || chosen === '') return SERVE_RUNTIME.nodeFlags;
  if (!/^\d{1,4}$/.test(chosen))
    throw new Error(`${HEAP_GROWTH_VARIABLE} must be a whole number of percent (0 lets V8 choose), not "${chosen}".`);
  return SERVE_RUNTIME.nodeFlags.map((flag) =>
    flag.startsWith('--heap-growing-percent=') ? `--heap-growing-percent=${Number(chosen)}` : flag,
  );
}

/** Set by `serve` when it re-executes itself with {@link SERVE_RUNTIME}; set it yourself to run with Node's defaults. */
export const SERVE_RUNTIME_MARK = 'TOLLGATE_SERVE_RUNTIME';

/**
 * What of {@link SERVE_RUNTIME} the process was not started with: the flags ({@link serveNodeFlags}) whose name
 * is in neither `execArgv` nor NODE_OPTIONS, and the variables not set. Empty once applied, when the operator set
 * {@link SERVE_RUNTIME_MARK}, or under a sampling profiler (see {@link SAMPLING_PROFILERS}).
 */
export function missingServeRuntime(
  execArgv: readonly string[],
  env: NodeJS.ProcessEnv,
): { nodeFlags: string[]; env: Record<string, string> } {
  if (env[SERVE_RUNTIME_MARK] !== undefined || underSamplingProfiler(execArgv)) return { nodeFlags: [], env: {} };
  const given = [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].map((arg) =>
    arg.split('=')[0].replaceAll('_', '-'),
  );
  return {
    nodeFlags: serveNodeFlags(env).filter((flag) => !given.includes(flag.split('=')[0])),
    env: Object.fromEntries(Object.entries(SERVE_RUNTIME.env).filter(([name]) => env[name] === undefined)),
  };
}

/**
 * Set by `serve` for the process it re-executes: what code it runs (`bundle`, or `source` and why), for its
 * start-up line. Set it to `source` yourself to serve from `src` even when the bundle is fresh.
 */
export const SERVE_CODE_MARK = 'TOLLGATE_SERVE_CODE';

/**
 * What `serve` re-executes itself as (the arguments after the node binary, and the environment), or null to go
 * on in this process: with what of {@link SERVE_RUNTIME} is missing, and on the server bundle
 * (`src/platform/server-bundle.ts`) when it was built from the sources as they are, whichever of the two
 * applies. The code is chosen once: a process that carries {@link SERVE_CODE_MARK} (set by the
 * re-execution, or `source` by the operator) keeps what it runs. Never under a sampling profiler
 * ({@link SAMPLING_PROFILERS}).
 */
export function serveReexecution(
  execArgv: readonly string[],
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  bundleState: () => ServerBundleState,
): { args: string[]; env: Record<string, string> } | null {
  if (underSamplingProfiler(execArgv)) return null;
  const missing = missingServeRuntime(execArgv, env);
  const settingsMissing = missing.nodeFlags.length > 0 || Object.keys(missing.env).length > 0;
  const bundle = env[SERVE_CODE_MARK] === undefined ? bundleState() : null;
  if (!settingsMissing && bundle?.state !== 'fresh') return null;
  const code = bundle === null ? env[SERVE_CODE_MARK]! : bundle.state === 'fresh' ? 'bundle' : sourceCode(bundle);
  return {
    args: [...missing.nodeFlags, ...execArgv, bundle?.state === 'fresh' ? bundle.entry : argv[1]!, ...argv.slice(2)],
    env: {
      ...(env as Record<string, string>),
      ...missing.env,
      ...(settingsMissing ? { [SERVE_RUNTIME_MARK]: 'applied' } : {}),
      [SERVE_CODE_MARK]: code,
    },
  };
}

/** `source`, and why the server bundle is not served (stale, absent), as the start-up line says it. */
function sourceCode(bundle: ServerBundleState): string {
  if (bundle.state === 'fresh') return 'source';
  return `source (server bundle ${bundle.state === 'stale' ? `stale: ${bundle.reason}; npm run build rebuilds it` : 'absent: npm run build makes it'})`;
}

/**
 * What code a started `serve` runs, for its start-up line: the re-execution's {@link SERVE_CODE_MARK}, or, when
 * there was none (the runtime settings already applied, `TOLLGATE_SERVE_RUNTIME` set by the operator), the
 * sources and why the bundle was not taken.
 */
export function servedCode(env: NodeJS.ProcessEnv, bundleState: () => ServerBundleState): string {
  return env[SERVE_CODE_MARK] ?? sourceCode(bundleState());
}

/**
 * Replaces the process with {@link serveReexecution}'s command when there is one. The process keeps its pid,
 * its stdio and its signals, so a supervisor sees nothing; the allocator settings can only be made this way,
 * since glibc reads them once, when the process starts. Does nothing where `process.execve` does not exist
 * (Windows).
 */
function applyServeRuntime(): void {
  if (typeof process.execve !== 'function') return;
  const next = serveReexecution(process.execArgv, process.argv, process.env, serverBundleState);
  if (next) process.execve(process.execPath, [process.execPath, ...next.args], next.env);
}

/** Node's name for its TypeScript stripper in `process.moduleLoadList`, the list of its own modules loaded so far. */
const TYPE_STRIPPER = 'NativeModule internal/deps/amaro/dist/index';

/**
 * After {@link applyServeRuntime}, once the service's modules are loaded: if Node had to strip their types
 * (the first start after the code changed, when the compile cache had not seen it), the stripper now stays
 * loaded for the life of the process. The stripped code is in the cache once flushed, so the same command
 * is started once more, from the cache. Only once (the mark changes): an unwritable cache cannot loop.
 */
function restartFromCompileCache(): void {
  // moduleLoadList is not in Node's typings (nor documented); without it, the process keeps the stripper.
  const loaded = (process as { moduleLoadList?: unknown }).moduleLoadList;
  if (process.env[SERVE_RUNTIME_MARK] !== 'applied' || !Array.isArray(loaded) || !loaded.includes(TYPE_STRIPPER))
    return;
  flushCompileCache();
  process.execve!(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    ...process.env,
    [SERVE_RUNTIME_MARK]: 'applied, from the compile cache',
  } as Record<string, string>);
}

/**
 * The one-shot commands work on the database a server made: on SQLite they refuse to create one, so that a
 * command run with another `DATA_DIR` (or from a folder where no server ever ran, with a relative one) says
 * which file it looked for instead of printing a token or a user the server does not know. `migrate` and
 * `serve` are the commands that create it.
 */
export function missingDatabaseMessage(
  config: { DATABASE_URL?: string; DATA_DIR: string },
  exists: (file: string) => boolean,
): string | null {
  const file = sqliteFileOfConfig(config);
  if (file === null || exists(file)) return null;
  return (
    `no Tollgate database at ${file}: no server has run with this DATA_DIR. Start the server first (npm start), ` +
    'or set DATA_DIR (or DATABASE_URL) to the one it uses; `tollgate migrate` creates an empty database there.'
  );
}

function sqliteFileOfConfig(config: { DATABASE_URL?: string; DATA_DIR: string }): string | null {
  return config.DATABASE_URL ? null : resolve(config.DATA_DIR, 'tollgate.db');
}

/**
 * {@link missingDatabaseMessage} for PostgreSQL: the one-shot commands refuse a schema where no server ever ran
 * (no migration table), naming the schema and database they looked in. Without it, a mistyped DATABASE_SCHEMA
 * made a new schema with its own tables and secrets, and `admin-token` printed a token the server does not know.
 */
export async function missingPostgresSchemaMessage(config: {
  DATABASE_URL?: string;
  DATABASE_SCHEMA: string;
  DATABASE_POOL_SIZE: number;
  DATA_DIR: string;
}): Promise<string | null> {
  if (!config.DATABASE_URL) return null;
  const [{ openDatabase, ensureDatabaseReachable }, { sql }] = await Promise.all([
    import('./platform/db/connect.ts'),
    import('kysely'),
  ]);
  const database = openDatabase({ ...config, DATABASE_POOL_SIZE: 1 });
  await ensureDatabaseReachable(database, config);
  try {
    const found =
      await sql`select 1 from information_schema.tables where table_schema = ${config.DATABASE_SCHEMA} and table_name = 'kysely_migration'`.execute(
        database.db,
      );
    if (found.rows.length > 0) return null;
  } finally {
    await database.close();
  }
  const url = URL.parse(config.DATABASE_URL);
  const where = url ? `${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname || '/'}` : 'DATABASE_URL';
  return (
    `no Tollgate database in PostgreSQL schema "${config.DATABASE_SCHEMA}" at ${where}: no server has run with this ` +
    'DATABASE_SCHEMA. Start the server first (npm start), or set DATABASE_SCHEMA (or DATABASE_URL) to the one it ' +
    'uses; `tollgate migrate` creates the tables there.'
  );
}

async function withService<T>(fn: (service: Service) => Promise<T>): Promise<T> {
  const [{ createService }, { loadConfig }, { createLogger }] = await Promise.all([
    import('./service.ts'),
    import('./config.ts'),
    import('./platform/logger.ts'),
  ]);
  const config = loadConfig(process.env, { LOG_LEVEL: 'warn' });
  const missing = missingDatabaseMessage(config, existsSync) ?? (await missingPostgresSchemaMessage(config));
  if (missing) throw new Error(missing);
  // Logs of one-shot commands go to stderr, so their stdout is only the answer (`ADMIN=$(tollgate admin-token)`).
  const service = await createService({ timers: false, config, log: createLogger('warn', process.stderr) });
  try {
    return await fn(service);
  } finally {
    await service.close();
  }
}

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new Error(`--${name} is required`);
  return value;
}

/**
 * The password of `create-user`: `--password-stdin`'s first line of standard input (a password on the command
 * line is in `ps` for every local user and in the shell's history), or `--password`; one of them.
 */
function passwordOf(values: Record<string, unknown>): string {
  if (values['password-stdin'] === true) {
    if (values.password !== undefined) throw new Error('give --password-stdin or --password, not both');
    const line = readFileSync(0, 'utf8').split(/\r?\n/)[0] ?? '';
    if (line === '') throw new Error('--password-stdin: standard input holds no password (its first line is empty)');
    return line;
  }
  if (values.password === undefined)
    throw new Error('--password-stdin (or --password P) is required: the password of the new user');
  return required(values, 'password');
}

/**
 * The JWK Set in the file `--jwks` names (`-`: standard input), parsed. A file that cannot be read or is not
 * JSON is said here, naming it; what the keys may be is the server's to check (oauth/client-keys.ts), with
 * the operator API's 400 text.
 */
export function readJwksFile(path: string): unknown {
  const name = path === '-' ? 'standard input' : path;
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (error) {
    throw new Error(`--jwks: cannot read ${name} (${(error as Error).message}); give the path of a JWK Set file`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(
      `--jwks: ${name} is not JSON (${(error as Error).message}); it must hold a JWK Set: { "keys": [ <public JWK>, … ] }`,
    );
  }
}

export const commands: Record<string, Command> = {
  serve: {
    usage: 'serve                         run the HTTP service (migrations applied at start)',
    async run() {
      applyServeRuntime();
      const { createService } = await import('./service.ts');
      restartFromCompileCache();
      const service = await createService();
      const url = await service.listen();
      service.ctx.log.info({ url, code: servedCode(process.env, serverBundleState) }, `Tollgate listening on ${url}`);
      let stopping = false;
      const stop = async (signal: string) => {
        // A second signal (Ctrl-C again, or an orchestrator's impatience) ends the grace period now: the
        // calls still open are cut and settled for what they produced, rather than killed unsettled.
        if (stopping) {
          service.ctx.log.warn({ signal }, 'second signal: cutting in-flight calls now');
          return void service.close({ cutNow: true });
        }
        stopping = true;
        service.ctx.log.info({ signal, graceMs: service.ctx.config.SHUTDOWN_GRACE_MS }, 'shutting down');
        await service.close();
        process.exit(0);
      };
      process.on('SIGTERM', () => void stop('SIGTERM'));
      process.on('SIGINT', () => void stop('SIGINT'));
    },
  },
  migrate: {
    usage: 'migrate                       apply pending database migrations',
    async run() {
      const [{ loadConfig }, { openDatabase, ensureDatabaseReachable }, { migrateToLatest }, { allMigrations }] =
        await Promise.all([
          import('./config.ts'),
          import('./platform/db/connect.ts'),
          import('./platform/db/migrate.ts'),
          import('./features.ts'),
        ]);
      const config = loadConfig();
      const database = openDatabase(config);
      await ensureDatabaseReachable(database, config);
      try {
        const result = await migrateToLatest(database.db, allMigrations(), config);
        const applied = (result.results ?? []).map((r) => r.migrationName);
        console.log(applied.length ? `applied: ${applied.join(', ')}` : 'the schema is up to date');
      } finally {
        await database.close();
      }
    },
  },
  'create-user': {
    usage:
      'create-user --email E (--password-stdin | --password P) [--name N]   --password-stdin reads the password from standard input (its first line), out of `ps` and the shell history',
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      name: { type: 'string' },
    },
    async run(values) {
      const email = required(values, 'email');
      const password = passwordOf(values);
      const { createUser } = await import('./accounts/users.ts');
      const user = await withService((s) => createUser(s.ctx.db, s.ctx.clock, { email, password, name: values.name }));
      console.log(JSON.stringify(user, null, 2));
    },
  },
  'sync-models': {
    usage: "sync-models                   import the configured providers' models and USD prices into the catalogue",
    async run() {
      const { syncModels } = await import('./models/sync.ts');
      const report = await withService((s) => syncModels(s.ctx));
      console.log(JSON.stringify(report, null, 2));
      // Nothing to sync is a shell without the server's keys (the CLI reads its own environment): said, and exit 1.
      if (report.providers.length === 0) {
        console.error(
          'tollgate: sync-models: no provider is configured in this environment, so nothing was imported. The command reads its own environment, not the running server\'s: run it with the server\'s OPENAI_API_KEY, OPENROUTER_API_KEY or ANTHROPIC_API_KEY and TOLLGATE_CONFIG (its "providers").',
        );
        process.exitCode = 1;
        return;
      }
      // A provider that could not be listed is a failed sync: a cron job or release step must see it.
      const failed = report.providers.filter((entry) => entry.error !== undefined);
      if (failed.length > 0) {
        console.error(
          `tollgate: sync-models: ${failed.length} of ${report.providers.length} providers failed (${failed.map((entry) => entry.provider).join(', ')}); see "error" above`,
        );
        process.exitCode = 1;
      }
    },
  },
  'grant-credits': {
    usage:
      'grant-credits (--user ID | --email E) --amount CREDITS [--reason R] [--idempotency-key K]   give credits (--amount=-N takes them back; run again with the same key, nothing moves twice)',
    options: {
      user: { type: 'string' },
      email: { type: 'string' },
      amount: { type: 'string' },
      reason: { type: 'string' },
      'idempotency-key': { type: 'string' },
    },
    async run(values) {
      const { grantCreditsFromCli } = await import('./billing/cli.ts');
      console.log(JSON.stringify(await withService((s) => grantCreditsFromCli(s.ctx, values))));
    },
  },
  'create-app': {
    usage:
      'create-app --name N --redirect-uri URI [--redirect-uri URI…] [--scope S…] [--confidential] [--jwks FILE]   register an OAuth app (--jwks: a confidential app that signs with a key pair, private_key_jwt, and gets no secret; FILE holds its public JWK Set, - reads stdin)',
    options: {
      name: { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      scope: { type: 'string', multiple: true },
      confidential: { type: 'boolean' },
      jwks: { type: 'string' },
    },
    async run(values) {
      const { registerClient } = await import('./oauth/clients.ts');
      // At least one, as the operator API asks: an app with none can never complete an authorization.
      const redirectUris: string[] = values['redirect-uri'] ?? [];
      if (redirectUris.length === 0)
        throw new Error('--redirect-uri is required (the URI the app receives its codes at)');
      // Read before the service starts, so a wrong path is said at once. Keys make the app confidential: only a
      // server can keep the private key.
      const jwks = values.jwks === undefined ? undefined : readJwksFile(values.jwks);
      const app = await withService((s) =>
        registerClient(
          s.ctx.db,
          s.ctx.clock,
          {
            name: required(values, 'name'),
            redirectUris,
            scopes: values.scope ?? ['read', 'billing:read', 'ai:chat', 'ai:models', 'offline_access'],
            type: values.confidential || jwks !== undefined ? 'confidential' : 'public',
            ...(jwks === undefined ? {} : { jwks }),
          },
          null,
        ),
      );
      console.log(JSON.stringify(app, null, 2));
    },
  },
  'rotate-app-keys': {
    usage:
      "rotate-app-keys --client-id ID --jwks FILE   replace the public keys of a key-pair app (private_key_jwt) with FILE's JWK Set (- reads stdin); its next assertion is checked against them",
    options: { 'client-id': { type: 'string' }, jwks: { type: 'string' } },
    async run(values) {
      const { replaceClientJwks } = await import('./oauth/clients.ts');
      const clientId = required(values, 'client-id');
      const jwks = readJwksFile(required(values, 'jwks'));
      const replaced = await withService((s) => replaceClientJwks(s.ctx.db, clientId, jwks));
      if (!replaced) throw new Error(`no app with client id ${clientId}`);
      console.log(JSON.stringify({ clientId, ...replaced }, null, 2));
    },
  },
  'repack-sqlite': {
    usage:
      'repack-sqlite                 rewrite a SQLite database made before 1 KiB pages with them (stop the server first)',
    async run() {
      const [{ loadConfig }, { repackSqlite }] = await Promise.all([
        import('./config.ts'),
        import('./platform/db/sqlite-repack.ts'),
      ]);
      const config = loadConfig(process.env, { LOG_LEVEL: 'warn' });
      const file = sqliteFileOfConfig(config);
      if (file === null) throw new Error('repack-sqlite works on the SQLite database, and DATABASE_URL is set');
      const missing = missingDatabaseMessage(config, existsSync);
      if (missing) throw new Error(missing);
      console.log(JSON.stringify(repackSqlite(file), null, 2));
    },
  },
  backup: {
    usage:
      'backup --to PATH [--force]     copy the database (SQLite: online, while the server runs; PostgreSQL: pg_dump) to PATH and the key file to PATH.secrets.json, both 0600',
    options: { to: { type: 'string' }, force: { type: 'boolean' } },
    async run(values) {
      const [{ loadConfig }, { backupDatabase }] = await Promise.all([
        import('./config.ts'),
        import('./platform/db/backup.ts'),
      ]);
      const config = loadConfig(process.env, { LOG_LEVEL: 'warn' });
      const missing = missingDatabaseMessage(config, existsSync) ?? (await missingPostgresSchemaMessage(config));
      if (missing) throw new Error(missing);
      const report = await backupDatabase(config, required(values, 'to'), { force: values.force === true });
      console.log(JSON.stringify(report, null, 2));
    },
  },
  restore: {
    usage:
      'restore --from PATH [--secrets FILE]   put a SQLite backup back as the database, with its key file (PATH.secrets.json); stop the server first',
    options: { from: { type: 'string' }, secrets: { type: 'string' } },
    async run(values) {
      const [{ loadConfig }, { restoreSqlite }] = await Promise.all([
        import('./config.ts'),
        import('./platform/db/backup.ts'),
      ]);
      const config = loadConfig(process.env, { LOG_LEVEL: 'warn' });
      const report = restoreSqlite(config, required(values, 'from'), { secrets: values.secrets });
      console.log(JSON.stringify(report, null, 2));
    },
  },
  'admin-token': {
    usage: 'admin-token                   print the operator token (generated on first start when not configured)',
    async run() {
      const tokens = await withService(async (s) => s.ctx.secrets.adminTokens);
      console.log(tokens[0]);
    },
  },
};

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  const command = name !== undefined && Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) {
    // No default command: a bare `tollgate`, run to see what it offers, must not start a server on port 3000.
    const list = `Usage: tollgate <command>\n\n${Object.values(commands)
      .map((c) => `  ${c.usage}`)
      .join('\n')}`;
    if (name === 'help' || name === '--help' || name === '-h') {
      console.log(list);
      process.exit(0);
    }
    console.error(name === undefined ? list : `tollgate: unknown command "${name}"\n${list}`);
    process.exit(2);
  }
  const usage = `Usage: tollgate ${command.usage}`;
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(usage);
    return;
  }
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ args: rest, options: command.options ?? {}, strict: true }));
  } catch (error) {
    // parseArgs's own sentence ("Unknown option '--x'"), then how the command is used.
    throw new Error(`${(error as Error).message}\n${usage}`);
  }
  await command.run(values);
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch(async (error) => {
    const { ConfigError } = await import('./config.ts');
    const { isDatabaseFull, markSqliteFull } = await import('./platform/db/unavailable.ts');
    // A start (or a command) on a full disk: what to do, not SQLite's bare "database or disk is full".
    if (isDatabaseFull(markSqliteFull(error)))
      console.error(
        `tollgate: the database's disk is full (${error.message}): nothing could be written, so Tollgate stopped. ` +
          "Free space on the disk that holds DATA_DIR (or PostgreSQL's data directory, with DATABASE_URL), then run it again.",
      );
    else console.error(error instanceof ConfigError ? error.message : `tollgate: ${error.message ?? error}`);
    process.exit(1);
  });
}
