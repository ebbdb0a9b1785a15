import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { SqliteDialect, type DialectAdapter, type Driver, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { GroupCommitSqliteAdapter, GroupCommitSqliteDriver } from './sqlite-group-commit.ts';

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

/** The SQLite dialect, with the counters of its group-commit driver. */
export interface NodeSqliteDialect extends SqliteDialect {
  readonly stats: GroupCommitSqliteDriver['stats'];
}

/**
 * Opens `filename` in WAL mode with foreign keys on and returns a Kysely dialect over it whose driver
 * commits concurrent transactions in groups (see {@link GroupCommitSqliteDriver}).
 */
export function nodeSqliteDialect(
  filename: string,
  options: { checkpointIntervalMs?: number } = {},
): NodeSqliteDialect {
  const database = new DatabaseSync(filename);
  // temp_store = MEMORY: a savepoint (each logical transaction of a group commit is one) copies every page
  // it first touches to a statement journal; in a temporary file that was a pwrite per page, a quarter of
  // the cost of placing and settling a hold (bench/holds.ts: 717 → 555 µs one at a time).
  database.exec(
    'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000; PRAGMA temp_store = MEMORY;',
  );
  const statements = adapt(database);
  const driver = new GroupCommitSqliteDriver(database, statements, {
    checkpointIntervalMs: options.checkpointIntervalMs,
  });
  return new (class extends SqliteDialect {
    readonly stats = driver.stats;
    override createDriver(): Driver {
      return driver;
    }
    override createAdapter(): DialectAdapter {
      return new GroupCommitSqliteAdapter(driver);
    }
  })({ database: statements });
}
