import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { SqliteDialect, type DialectAdapter, type Driver, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { GroupCommitSqliteAdapter, GroupCommitSqliteDriver } from './sqlite-group-commit.ts';
import type { DiskFullWatch } from './unavailable.ts';

/**
 * Kysely over Node's built-in `node:sqlite`, so the embedded default needs no native addon.
 * Node's statements take their parameters spread out and no booleans; this adapts them to the
 * better-sqlite3 shape Kysely's SQLite driver expects.
 */
function adapt(database: DatabaseSync): SqliteDatabase {
  // Copied only when a boolean needs converting: the gateway's queries bind none, and run ~20 times a call.
  const bind = (parameters: ReadonlyArray<unknown>): SQLInputValue[] =>
    parameters.some((value) => typeof value === 'boolean')
      ? parameters.map((value) => (typeof value === 'boolean' ? (value ? 1 : 0) : (value as SQLInputValue)))
      : (parameters as SQLInputValue[]);
  // Kysely prepares every query anew; compiling SQL was 13% of the CPU under load (see BENCHMARKS.md), so
  // statements are kept by their text. Kysely's queries are a small fixed set; the bound only guards raw SQL.
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => database.close(),
    prepare(sql: string): SqliteStatement {
      const cached = statements.get(sql);
      if (cached) return cached;
      if (statements.size >= 1000) statements.clear();
      const statement = database.prepare(sql);
      const adapted: SqliteStatement = {
        reader: statement.columns().length > 0,
        all: (parameters) => statement.all(...bind(parameters)),
        run: (parameters) => statement.run(...bind(parameters)),
        iterate: (parameters) => statement.iterate(...bind(parameters)) as IterableIterator<unknown>,
      };
      statements.set(sql, adapted);
      return adapted;
    },
  };
}

/**
 * The page size of a database file this dialect creates, in bytes. An existing file keeps the size it was
 * made with (SQLite changes it only by a VACUUM outside WAL mode).
 *
 * Why not SQLite's 4,096: a commit writes every page it changed to the WAL whole, and a call's billing
 * changes ~30 pages (a row or two in each B-tree of the wallet, hold, ledger, counters and usage record,
 * most of each page untouched). With 1 KiB pages a place and settle wrote 45–46 KB of WAL instead of
 * 131–135 KB (`node bench/holds.ts sqlite`; 33–34 KB since migration 1720), so each commit and each
 * checkpoint (which syncs and copies that WAL, on the event loop) has a third of the bytes to move; billing
 * alone, one call at a time, took ~30% less time (docs/scaling.md, tenth pass). Index keys longer than ~230
 * bytes spill to overflow pages at this size: slower, still correct; of Tollgate's indexed columns only an
 * unusually long email address gets there.
 */
export const NEW_DATABASE_PAGE_SIZE = 1024;

/** The page size of the database `database` has open, in bytes. */
export function pageSizeOf(database: DatabaseSync): number {
  return (database.prepare('PRAGMA page_size').get() as { page_size: number }).page_size;
}

/** The SQLite dialect, with the counters of its group-commit driver. */
export interface NodeSqliteDialect extends SqliteDialect {
  readonly stats: GroupCommitSqliteDriver['stats'];
  /** The database's page size: {@link NEW_DATABASE_PAGE_SIZE} unless the file was made before it. */
  readonly pageSize: number;
}

/**
 * Opens `filename` in WAL mode with foreign keys on and returns a Kysely dialect over it whose driver
 * commits concurrent transactions in groups (see {@link GroupCommitSqliteDriver}).
 */
export function nodeSqliteDialect(
  filename: string,
  options: { checkpointIntervalMs?: number; diskFull?: DiskFullWatch } = {},
): NodeSqliteDialect {
  const database = new DatabaseSync(filename);
  // busy_timeout first: turning WAL on needs the file to itself, and a second process opening a new database
  // at the same moment (`tollgate migrate` while `serve` starts) failed at once with "database is locked".
  // page_size before any table: it takes effect only on a database that has none yet (see NEW_DATABASE_PAGE_SIZE).
  // temp_store = MEMORY: a savepoint (each logical transaction of a group commit is one) copies every page
  // it first touches to a statement journal; in a temporary file that was a pwrite per page, a quarter of
  // the cost of placing and settling a hold (bench/holds.ts: 717 → 555 µs one at a time).
  database.exec(
    `PRAGMA busy_timeout = 10000; PRAGMA page_size = ${NEW_DATABASE_PAGE_SIZE}; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;`,
  );
  const pageSize = pageSizeOf(database);
  const statements = adapt(database);
  const driver = new GroupCommitSqliteDriver(database, statements, {
    checkpointIntervalMs: options.checkpointIntervalMs,
    diskFull: options.diskFull,
  });
  return new (class extends SqliteDialect {
    readonly stats = driver.stats;
    readonly pageSize = pageSize;
    override createDriver(): Driver {
      return driver;
    }
    override createAdapter(): DialectAdapter {
      return new GroupCommitSqliteAdapter(driver);
    }
  })({ database: statements });
}
