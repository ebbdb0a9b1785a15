import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { CompiledQuery, SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver, type SqliteDatabase, type SqliteStatement } from 'kysely';

/**
 * Kysely over Node's built-in `node:sqlite`, so the embedded default needs no native addon.
 * Node's statements take their parameters spread out and no booleans; this adapts them to the
 * better-sqlite3 shape Kysely's SQLite driver expects.
 */
function adapt(database: DatabaseSync): SqliteDatabase {
  const bind = (parameters: ReadonlyArray<unknown>): SQLInputValue[] =>
    parameters.map((value) => (typeof value === 'boolean' ? (value ? 1 : 0) : (value as SQLInputValue)));
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
        run: (parameters) => {
          const result = statement.run(...bind(parameters));
          return { changes: result.changes, lastInsertRowid: result.lastInsertRowid };
        },
        iterate: (parameters) => statement.iterate(...bind(parameters)) as IterableIterator<unknown>,
      };
      statements.set(sql, adapted);
      return adapted;
    },
  };
}

/**
 * Transactions start with BEGIN IMMEDIATE: the write lock is taken at the start, so two writers never
 * both read and then fail to upgrade (SQLITE_BUSY mid-transaction); the busy timeout makes the second wait.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/** Opens `filename` in WAL mode with foreign keys on and returns a Kysely dialect over it. */
export function nodeSqliteDialect(filename: string): SqliteDialect {
  const database = new DatabaseSync(filename);
  database.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;');
  const config = { database: adapt(database) };
  return new (class extends SqliteDialect {
    override createDriver(): Driver {
      return new ImmediateSqliteDriver(config);
    }
  })(config);
}
