import { PostgresAdapter, type Compilable, type CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import { GroupCommitSqliteAdapter } from './sqlite-group-commit.ts';

/** Stands for a named value in a query compiled once; {@link preparedQuery} puts the value in its place. */
class Slot {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

const slots = new Proxy({}, { get: (_, name) => new Slot(String(name)) });

/** Runs a prepared query with its values; see {@link preparedQuery}. */
export type PreparedQuery<P, O> = (db: Kysely<any>, values: P) => Promise<QueryResult<O>>;

/**
 * A query built and compiled by Kysely once per dialect, then run with new values each time.
 *
 * Why: Kysely builds a frozen tree of nodes and compiles it to SQL on every call; on the gateway's path
 * (a dozen fixed queries per call) that was about a seventh of the process's CPU (see BENCHMARKS.md).
 *
 * `build` receives stand-ins for the values (`p.userId` …), to use wherever the query takes a value; the
 * SQL is compiled with them and each run puts the real values in their places.
 * Invariant: the shape of the query must not depend on the values — `build` runs once, so a clause added
 * only for some values, a list whose length varies, or a value inspected while building would be frozen
 * into every later run. Such queries are built per call, or get one prepared query per shape.
 */
export function preparedQuery<P extends Record<string, unknown>, O>(
  build: (db: Kysely<any>, p: P) => Compilable<O>,
): PreparedQuery<P, O> {
  let sqlite: CompiledQuery<O> | undefined;
  let postgres: CompiledQuery<O> | undefined;
  return async (db, values) => {
    const executor = db.getExecutor();
    const isPostgres = executor.adapter instanceof PostgresAdapter;
    const compiled = (isPostgres ? postgres : sqlite) ?? build(db, slots as P).compile();
    if (isPostgres) {
      if (!postgres) nameStatement(compiled.sql);
      postgres = compiled;
    } else sqlite = compiled;
    const parameters = compiled.parameters.map((value) => {
      if (!(value instanceof Slot)) return value;
      const given = values[value.name];
      if (given === undefined) throw new Error(`prepared query: no value for "${value.name}"`);
      return given;
    });
    const query = { ...compiled, parameters };
    if (isPostgres || executor.plugins.length > 0) return db.executeQuery(query);
    // SQLite without plugins: straight to the connection, skipping Kysely's executor layers (which, with no
    // plugin to transform the result, only pass it through). A transaction's query goes to the connection
    // it holds (see GroupCommitSqliteAdapter); any other acquires and releases the connection as Kysely
    // would, so group commit still answers only after the COMMIT. Through `executeQuery`, these queries
    // allocated ~45 KB per gateway call; ~8 KB now.
    if (db.isTransaction && executor.adapter instanceof GroupCommitSqliteAdapter)
      return executor.adapter.driver.executeInTransaction<O>(query);
    return executor.provideConnection((connection) => connection.executeQuery<O>(query));
  };
}

/**
 * A prepared INSERT of one row into `table`: each of `columns` takes the value of the same name. For rows
 * whose columns are all given on every insert (a value may be null, never left out).
 */
export function preparedInsert<R extends Record<string, unknown>>(
  table: string,
  columns: ReadonlyArray<keyof R & string>,
): PreparedQuery<R, unknown> {
  return preparedQuery((db, p: R) =>
    db.insertInto(table).values(Object.fromEntries(columns.map((column) => [column, p[column]]))),
  );
}

/**
 * A family of prepared queries, one per shape (a number of rows, say), each prepared on first use: for a
 * query whose shape varies with its input in a few known ways (see {@link preparedQuery}'s invariant).
 */
export function preparedByShape<S, P extends Record<string, unknown>, O>(
  build: (shape: S) => (db: Kysely<any>, p: P) => Compilable<O>,
): (shape: S) => PreparedQuery<P, O> {
  const byShape = new Map<S, PreparedQuery<P, O>>();
  return (shape) => {
    let prepared = byShape.get(shape);
    if (!prepared) byShape.set(shape, (prepared = preparedQuery(build(shape))));
    return prepared;
  };
}

/** PostgreSQL texts of the prepared queries, by text: each gets a server-side prepared statement of this name. */
const statementNames = new Map<string, string>();

function nameStatement(text: string): void {
  if (!statementNames.has(text)) statementNames.set(text, `tollgate_${statementNames.size}`);
}

/**
 * The name of the PostgreSQL prepared statement for `text`, when it is the text of a prepared query: the
 * pg client then parses and plans it once per connection and afterwards sends only its values (see
 * `nameStatements` in postgres-dialect.ts). Undefined for any other text.
 */
export function statementName(text: string): string | undefined {
  return statementNames.get(text);
}
