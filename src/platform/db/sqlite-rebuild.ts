import { sql, type Kysely } from 'kysely';

/**
 * Rebuilds a SQLite table as a `WITHOUT ROWID` table, keeping its columns, constraints, rows and indexes.
 *
 * Why: a table keyed by text (an id, a composite key) is two B-trees in SQLite, the rowid table and the
 * index behind its primary key, and every insert writes a page of each to the WAL at commit. Keyed by its
 * primary key alone, the row lives in one B-tree. On the gateway's path that was a tenth of the commit cost.
 *
 * The table's own `CREATE TABLE` text is reused, so its definition is not written twice; a table already
 * without rowid is left alone. Run it inside a transaction: a failure then leaves the old table as it was.
 * Only tables that no foreign key references may be rebuilt (dropping a referenced table would check them).
 */
export async function rebuildWithoutRowid(db: Kysely<any>, table: string): Promise<void> {
  const { rows } = await sql<{
    type: string;
    sql: string | null;
  }>`SELECT type, sql FROM sqlite_master WHERE tbl_name = ${table}`.execute(db);
  const create = rows.find((row) => row.type === 'table')?.sql;
  if (!create) throw new Error(`table ${table} does not exist`);
  if (/\bwithout\s+rowid\s*$/i.test(create)) return;
  const name = new RegExp(`^CREATE TABLE\\s+(?:"${table}"|${table})\\s*\\(`, 'i');
  if (!name.test(create)) throw new Error(`unexpected definition of ${table}: ${create.slice(0, 80)}`);
  const staging = `${table}__rebuild`;
  await sql.raw(`${create.replace(name, `CREATE TABLE "${staging}" (`)} WITHOUT ROWID`).execute(db);
  await sql.raw(`INSERT INTO "${staging}" SELECT * FROM "${table}"`).execute(db);
  await sql.raw(`DROP TABLE "${table}"`).execute(db);
  await sql.raw(`ALTER TABLE "${staging}" RENAME TO "${table}"`).execute(db);
  // Explicit indexes went with the old table; the primary key's own index (no SQL text) is now the table.
  for (const index of rows) if (index.type === 'index' && index.sql) await sql.raw(index.sql).execute(db);
}
