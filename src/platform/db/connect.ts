import { AsyncLocalStorage } from 'node:async_hooks';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Kysely, sql } from 'kysely';
import pg from 'pg';
import { ConfigError, TIMER_MAX_MS, type PlatformConfig } from '../config.ts';
import { NEW_DATABASE_PAGE_SIZE, nodeSqliteDialect } from './node-sqlite-dialect.ts';
import { nameStatements, SchemaScopedPostgresDialect } from './postgres-dialect.ts';
import { DiskFullWatch, markUnavailable, watchDiskFull, type DiskFullLog } from './unavailable.ts';

// int8 columns hold micro-credits and epoch milliseconds: both fit a JS number exactly (< 2^53).
pg.types.setTypeParser(20, (value) => {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed)) throw new RangeError(`int8 value ${value} exceeds 2^53`);
  return parsed;
});

/** Which SQL engine is behind the connection; a few statements differ (row locks, upserts). */
export type DialectName = 'sqlite' | 'postgres';

/**
 * The shared connection, typed with no tables: it runs transactions and raw SQL but names no table. A
 * feature queries through its own view of it (`ownTables` in its `schema.ts`), which sees only its
 * own tables; the platform knows no feature's.
 */
export type Db = Kysely<NoTables>;

/** No table at all: the type of the shared connection, which only a feature's own view of it can query. */
export type NoTables = Record<never, never>;

/** An open database with what the features need to know about it. */
export interface Database {
  /** What an operator should hear once when a server starts on it (the service logs them at `info`). */
  notices: string[];
  db: Db;
  dialect: DialectName;
  close(): Promise<void>;
}

/**
 * How long a pooled connection may sit idle before TCP keepalive probes its peer. A connection whose peer went
 * away without a word (a partition, a host that died) then fails while idle and the pool replaces it, instead
 * of the next request's statement finding it dead only when its query timeout runs out.
 */
const KEEPALIVE_IDLE_MS = 10_000;

/** Statements run inside {@link withoutQueryTimeout}: no client-side limit (pg reads 0 as "the pool's"). */
const NO_QUERY_TIMEOUT_MS = TIMER_MAX_MS;

const queryTimeoutOverride = new AsyncLocalStorage<number | undefined>();

/**
 * Runs `work` with no client-side limit on the answer of its PostgreSQL statements
 * (`DATABASE_QUERY_TIMEOUT_SECONDS` is for statements made on a request's behalf). For work that is
 * legitimately long and that nobody is held up on: migrations (an index built over a big table), the ledger
 * check (sums over every entry), background jobs (a first prune of a large backlog). Cutting them would not
 * stop them: the server goes on with the statement (and its locks) after the client gave up; only the work's
 * own caller would fail. A silent database leaves such work waiting until it answers again, or until TCP
 * gives up on the connection.
 */
export function withoutQueryTimeout<T>(work: () => Promise<T>): Promise<T> {
  return queryTimeoutOverride.run(NO_QUERY_TIMEOUT_MS, work);
}

/**
 * Runs `work` with the limit of a request's statements even when called inside {@link withoutQueryTimeout}:
 * for a statement shared by several callers (a billing batch), which must not take a job's lack of limit to
 * the requests batched with it.
 */
export function withRequestQueryTimeout<T>(work: () => Promise<T>): Promise<T> {
  return queryTimeoutOverride.run(undefined, work);
}

/** The bounds of the waits on PostgreSQL; absent ones take the schema's defaults. */
type DatabaseTimeouts = Partial<
  Pick<PlatformConfig, 'DATABASE_CONNECT_TIMEOUT_SECONDS' | 'DATABASE_QUERY_TIMEOUT_SECONDS'>
>;

/** Opens PostgreSQL when `DATABASE_URL` is set, else the SQLite file `DATA_DIR/tollgate.db`. */
export function openDatabase(
  config: Pick<PlatformConfig, 'DATABASE_URL' | 'DATABASE_SCHEMA' | 'DATABASE_POOL_SIZE' | 'DATA_DIR'> &
    DatabaseTimeouts,
  log?: { warn(fields: Record<string, unknown>, message: string): void } & DiskFullLog,
): Database {
  if (config.DATABASE_URL) {
    // PostgreSQL's writes are functions called by SELECT (billing) as often as INSERTs: which statement wrote
    // cannot be told from its text, so a full disk is forgotten a minute after its last refused write.
    const diskFull = new DiskFullWatch('PostgreSQL', log, { forgetAfterMs: 60_000 });
    // A PostgreSQL that stops answering without closing its connections (a partition, a paused VM, a firewall
    // dropping packets) left every request waiting for a connection or an answer, forever: the pool filled and
    // every later request hung too. Each wait is bounded now, and what runs out is a lost connection (503).
    const pool = new pg.Pool({
      connectionString: config.DATABASE_URL,
      max: config.DATABASE_POOL_SIZE,
      options: `-c search_path=${config.DATABASE_SCHEMA}`,
      // Both the wait for a free connection of a full pool and the opening of a new one.
      connectionTimeoutMillis: (config.DATABASE_CONNECT_TIMEOUT_SECONDS ?? 10) * 1000,
      // pg's query_timeout: the statement's callback hears "Query read timeout"; the connection is closed by
      // markConnectionErrors, as pg leaves it waiting for that answer.
      query_timeout: (config.DATABASE_QUERY_TIMEOUT_SECONDS ?? 30) * 1000 || undefined,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
    });
    const connect = pool.connect.bind(pool);
    // Kysely takes its connections with the promise form; a refused or failed connection is marked unavailable,
    // and a connection whose statement timed out goes back with an error, so that the pool drops it.
    pool.connect = ((callback?: Parameters<typeof connect>[0]) =>
      callback
        ? connect(callback)
        : connect().then(
            (client) => {
              const release = client.release.bind(client);
              client.release = (error?: Error | boolean) =>
                release(error || (timedOut.has(client) ? new Error('Query read timeout') : undefined));
              return client;
            },
            (error: unknown) => {
              throw markUnavailable(error, true);
            },
          )) as typeof pool.connect;
    pool.on('connect', (client) => {
      limitQueries(client);
      nameStatements(client);
      markConnectionErrors(client, diskFull);
      // A client emits 'error' when its connection ends outside a query (pg_terminate_backend, a restart, a
      // failover); the pool listens only while the client is idle. Ended while a request held it (between the
      // statements of a transaction, or just after one failed), the event had no listener and ended the
      // process. Heard here, the query on it fails (that request's error) and the pool drops it on release.
      client.on('error', () => {});
    });
    // An idle connection the server ends (a restart, a failover, an idle timeout, pg_terminate_backend) makes
    // the pool emit 'error'; unheard, that event threw and ended the process. The pool drops the client and
    // opens another on the next query; /readyz tells whether the database answers.
    pool.on('error', (error) =>
      log?.warn({ reason: error.message }, 'PostgreSQL closed an idle connection; the pool replaces it'),
    );
    const db = new Kysely<NoTables>({ dialect: new SchemaScopedPostgresDialect({ pool }) });
    watchDiskFull(db, diskFull);
    return { db, dialect: 'postgres', close: () => db.destroy(), notices: [] };
  }
  const dir = resolve(config.DATA_DIR);
  const file = join(dir, 'tollgate.db');
  prepareSqliteFile(dir, file);
  const diskFull = new DiskFullWatch(file, log);
  const dialect = nodeSqliteDialect(file, { diskFull });
  const db = new Kysely<NoTables>({ dialect });
  watchDiskFull(db, diskFull);
  const notices =
    dialect.pageSize === NEW_DATABASE_PAGE_SIZE
      ? []
      : [
          `${file} has ${dialect.pageSize}-byte pages, from before Tollgate made them ${NEW_DATABASE_PAGE_SIZE}: each call ` +
            'writes about three times the WAL bytes it would. With the server stopped, `tollgate repack-sqlite` rewrites it.',
        ];
  return { db, dialect: 'sqlite', close: () => db.destroy(), notices };
}

/** Connections a statement timed out on: closed, and given back to the pool with an error. */
const timedOut = new WeakSet<pg.ClientBase>();

/**
 * Gives the statements run inside {@link withoutQueryTimeout} no client-side limit: pg takes a per-statement
 * `query_timeout` from the statement's config object (the text form becomes one; a submittable passes as is).
 */
function limitQueries(client: pg.ClientBase): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (first: unknown, ...rest: unknown[]) => {
    const override = queryTimeoutOverride.getStore();
    if (override === undefined) return query(first, ...rest);
    if (typeof first === 'string') {
      const [values, callback] = typeof rest[0] === 'function' ? [undefined, rest[0]] : rest;
      const config = { text: first, values, query_timeout: override };
      return callback === undefined ? query(config) : query(config, callback);
    }
    if (typeof first === 'object' && first !== null && typeof (first as { submit?: unknown }).submit !== 'function')
      return query({ ...first, query_timeout: override }, ...rest);
    return query(first, ...rest);
  };
}

/**
 * Marks the errors of `client`'s queries that are its connection's (lost, reset, the server shutting down, no
 * answer within `DATABASE_QUERY_TIMEOUT_SECONDS`), so that the HTTP layer answers them 503 SERVICE_UNAVAILABLE
 * (platform/db/unavailable.ts).
 *
 * Security invariant: a connection whose statement timed out is closed at once and never reused. pg only
 * stops waiting: the statement may still run, and its answer (or the transaction it was in) would arrive on
 * the next request's statement. `end()` destroys the socket when a statement is still out; the server rolls
 * back an open transaction when it sees the connection gone. A statement that committed before the answer was
 * lost is the same case as a connection lost after COMMIT (billing closes a hold once, so a retry cannot
 * charge twice).
 */
function markConnectionErrors(client: pg.ClientBase, diskFull: DiskFullWatch): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (...args: unknown[]) => {
    const result = query(...args);
    return result instanceof Promise
      ? result.catch((error: unknown) => {
          if ((error as Error | null)?.message === 'Query read timeout' && !timedOut.has(client)) {
            timedOut.add(client);
            (client as pg.Client).end().catch(() => {});
          }
          throw diskFull.noteError(markUnavailable(error));
        })
      : result;
  };
}

/**
 * Security invariant: the database (password hashes, sealed API keys, the ledger) and the key file next to
 * it are for this user only. The folder is made 0700 and the file 0600 when they are created, whatever
 * the umask (it can only take bits away, so chmod states the intent); SQLite gives the `-wal` and `-shm`
 * files it makes later the mode of the database file. Existing ones keep the mode the operator chose.
 */
function prepareSqliteFile(dir: string, file: string): void {
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
  }
  if (!existsSync(file)) {
    closeSync(openSync(file, 'a', 0o600));
    chmodSync(file, 0o600);
  }
}

/**
 * Asks PostgreSQL for `select 1` before anything else; if it cannot answer, closes the pool and throws a
 * {@link ConfigError} that names `DATABASE_URL` (host, port and database, never the password) and what to
 * check, so a start on an unreachable database stops with a sentence rather than `connect ECONNREFUSED`.
 */
export async function ensureDatabaseReachable(
  database: Database,
  config: Pick<PlatformConfig, 'DATABASE_URL'>,
): Promise<void> {
  if (database.dialect !== 'postgres' || !config.DATABASE_URL) return;
  try {
    await sql`select 1`.execute(database.db);
  } catch (error) {
    await database.close().catch(() => {});
    const url = URL.parse(config.DATABASE_URL);
    const target = url
      ? `${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname || '/'}`
      : 'the address DATABASE_URL gives';
    throw new ConfigError(
      `DATABASE_URL: cannot connect to PostgreSQL at ${target} (${(error as Error).message}). ` +
        "Check that PostgreSQL runs and accepts connections there, and that the URL's host, port, user, " +
        'password and database are right.',
    );
  }
}
