import { sql } from 'kysely';
import type { TestEnv } from './harness.ts';

/**
 * A full disk under a running test service, for real: every write of the service's own database connection
 * fails as it does when the disk fills, and succeeds again once {@link freeDisk} gives the space back, with
 * no restart. Reads go on.
 *
 * - SQLite: the connection's `max_page_count` is set to the database's size and its free pages are used up
 *   by a filler table, so a write that needs a page fails with SQLITE_FULL from SQLite's own pager (which
 *   rolls the whole transaction back, as on a real full disk). Temporary triggers make every row written
 *   (inserted, updated or deleted) also need pages, so that every write fails, as when the WAL cannot grow,
 *   rather than only those that happen to need a new page.
 * - PostgreSQL: a trigger on each table of the suite's schema raises SQLSTATE 53100 `disk_full` from the
 *   server, with PostgreSQL's own sentence for it, on every row written.
 */
export async function fillDisk(env: TestEnv): Promise<void> {
  const db = env.service.ctx.db;
  if (env.kind === 'postgres') {
    const schema = env.space.schema;
    await sql
      .raw(
        `create or replace function "${schema}".test_disk_full() returns trigger language plpgsql as $$ begin
           raise exception 'could not extend file "base/16384/16385": No space left on device'
             using errcode = 'disk_full', hint = 'Check free disk space.';
         end $$`,
      )
      .execute(db);
    for (const table of await tablesOf(env))
      await sql
        .raw(
          `create trigger test_disk_full before insert or update or delete on "${schema}"."${table}"
             for each row execute function "${schema}".test_disk_full()`,
        )
        .execute(db);
    return;
  }
  const tables = await tablesOf(env);
  await sql.raw(`create table if not exists ${FILLER} (b blob)`).execute(db);
  const { page_count } = (await sql<{ page_count: number }>`pragma page_count`.execute(db)).rows[0]!;
  await sql.raw(`pragma max_page_count = ${page_count}`).execute(db);
  // Uses up the free pages: the insert that finds none left fails, and the next write needing a page will.
  for (;;) {
    try {
      await sql.raw(`insert into ${FILLER} values (zeroblob(900))`).execute(db);
    } catch (error) {
      if ((error as { errcode?: number }).errcode === 13) break;
      throw error;
    }
  }
  for (const table of tables)
    for (const event of ['insert', 'update', 'delete'])
      await sql
        .raw(
          `create temp trigger "test_disk_full_${table}_${event}" after ${event} on main."${table}"
             begin insert into ${FILLER} values (zeroblob(4000)); end`,
        )
        .execute(db);
}

/** Gives the space back: the service's writes succeed again, on the same connection. */
export async function freeDisk(env: TestEnv): Promise<void> {
  const db = env.service.ctx.db;
  if (env.kind === 'postgres') {
    for (const table of await tablesOf(env))
      await sql.raw(`drop trigger if exists test_disk_full on "${env.space.schema}"."${table}"`).execute(db);
    return;
  }
  const triggers = await sql<{ name: string }>`select name from temp.sqlite_master where type = 'trigger'`.execute(db);
  for (const { name } of triggers.rows)
    if (name.startsWith('test_disk_full_')) await sql.raw(`drop trigger temp."${name}"`).execute(db);
  // SQLite's largest page count: no limit but the disk's.
  await sql.raw('pragma max_page_count = 4294967294').execute(db);
  await sql.raw(`drop table if exists ${FILLER}`).execute(db);
}

/** The SQLite table that takes up the free pages. */
const FILLER = 'test_disk_filler';

/** The service's tables (the migrations' own included: nothing may write while the disk is full). */
async function tablesOf(env: TestEnv): Promise<string[]> {
  const db = env.service.ctx.db;
  if (env.kind === 'postgres') {
    const rows = await sql<{ name: string }>`
      select table_name as name from information_schema.tables
      where table_schema = ${env.space.schema} and table_type = 'BASE TABLE'`.execute(db);
    return rows.rows.map((row) => row.name);
  }
  const rows = await sql<{ name: string }>`
    select name from sqlite_master
    where type = 'table' and name not like 'sqlite_%' and name != ${FILLER} and sql not like 'create virtual%'`.execute(
    db,
  );
  return rows.rows.map((row) => row.name);
}
