import type pg from 'pg';
import { statementName } from './prepared.ts';
import {
  PostgresDialect,
  PostgresIntrospector,
  sql,
  type DatabaseIntrospector,
  type DatabaseMetadataOptions,
  type Kysely,
  type TableMetadata,
} from 'kysely';

interface ColumnRow {
  table: string;
  kind: string;
  column: string;
  type: string;
  type_schema: string;
  not_null: boolean;
  has_default: boolean;
  identity: string;
}

/**
 * Kysely's PostgreSQL introspector, narrowed to the connection's own schema (`current_schema()`).
 *
 * Why: Kysely's version reads every schema and calls `has_schema_privilege(name, …)` and
 * `pg_get_serial_sequence(name, …)` with schema *names*. When another deployment or test run sharing the
 * database drops its schema while that query runs, PostgreSQL answers `schema "…" does not exist` and our
 * migrator (which introspects to find its own tables) fails to start. Reading only our schema, by oid joins
 * and without name-resolving functions, cannot trip over anyone else's.
 */
export class CurrentSchemaIntrospector extends PostgresIntrospector implements DatabaseIntrospector {
  readonly #db: Kysely<any>;

  constructor(db: Kysely<any>) {
    super(db);
    this.#db = db;
  }

  override async getTables(
    options: DatabaseMetadataOptions = { withInternalKyselyTables: false },
  ): Promise<TableMetadata[]> {
    const { rows } = await sql<ColumnRow>`
      SELECT c.relname AS "table", c.relkind AS kind, a.attname AS "column", typ.typname AS type,
             dtns.nspname AS type_schema, a.attnotnull AS not_null, a.atthasdef AS has_default, a.attidentity AS identity
        FROM pg_catalog.pg_class c
        JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace
        JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid
        JOIN pg_catalog.pg_type typ ON typ.oid = a.atttypid
        JOIN pg_catalog.pg_namespace dtns ON dtns.oid = typ.typnamespace
       WHERE ns.nspname = current_schema() AND c.relkind IN ('r', 'v', 'p') AND a.attnum > 0 AND NOT a.attisdropped
       ORDER BY c.relname, a.attnum`.execute(this.#db);
    const schema = (await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(this.#db)).rows[0]!.schema;
    const tables = new Map<string, TableMetadata>();
    for (const row of rows) {
      if (
        !options.withInternalKyselyTables &&
        (row.table === 'kysely_migration' || row.table === 'kysely_migration_lock')
      )
        continue;
      let table = tables.get(row.table);
      if (!table) tables.set(row.table, (table = { name: row.table, schema, isView: row.kind === 'v', columns: [] }));
      table.columns.push({
        name: row.column,
        dataType: row.type,
        dataTypeSchema: row.type_schema,
        isNullable: !row.not_null,
        hasDefaultValue: row.has_default,
        isAutoIncrementing: row.identity !== '' || (row.has_default && row.type.startsWith('int')),
      });
    }
    return [...tables.values()];
  }
}

/** PostgreSQL dialect whose introspection stays inside the connection's schema (see {@link CurrentSchemaIntrospector}). */
export class SchemaScopedPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db);
  }
}

/**
 * Makes `client` run the texts of prepared queries (prepared.ts) as named prepared statements: parsed and
 * planned once per connection, then each run sends only a Bind and an Execute. Kysely calls
 * `client.query(text, values)`; any other text, and every other form of call, passes through unchanged.
 * Names are per text, so a name always means the same statement on every connection.
 */
export function nameStatements(client: pg.ClientBase): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (text: unknown, values?: unknown, callback?: unknown) => {
    const name = typeof text === 'string' && callback === undefined ? statementName(text) : undefined;
    return name ? query({ name, text, values }) : query(text, values, callback);
  };
}
