/**
 * Another process for the migration tests: it prints `{"ready":true}`, waits for "go" on stdin so that two
 * workers start at the same moment, then opens the database its environment names (DATA_DIR, or the test's
 * PostgreSQL schema) and migrates it as `tollgate migrate` does, and prints one JSON line: the migrations it
 * applied, or its error.
 *
 * Usage: node src/platform/db/testing/migrate-worker.ts all|stall
 * - `all`: every migration of the code (what `tollgate migrate` and `serve` run).
 * - `stall`: {@link STALL_MIGRATIONS}: the second creates a table, prints `{"midway":true}` and never ends, so the
 *   test can kill the process (SIGKILL) in the middle of a migration.
 */
import { createInterface } from 'node:readline';
import { sql, type Kysely, type Migration } from 'kysely';
import { loadConfig } from '../../../config.ts';
import { allMigrations } from '../../../features.ts';
import { openDatabase } from '../connect.ts';
import { migrateToLatest } from '../migrate.ts';

/** Two migrations of the kill test: the first ends; the second makes a table and is killed before it ends. */
export const STALL_MIGRATIONS = (stall: boolean): Record<string, Migration> => ({
  '0001_test_first': {
    async up(db: Kysely<any>) {
      await sql`create table test_first (id integer primary key)`.execute(db);
    },
  },
  '0002_test_stalled': {
    async up(db: Kysely<any>) {
      await sql`create table test_stalled (id integer primary key)`.execute(db);
      if (!stall) return;
      console.log(JSON.stringify({ midway: true }));
      await new Promise(() => {});
    },
  },
});

if (import.meta.main) {
  const mode = process.argv[2];
  const config = loadConfig(process.env, { LOG_LEVEL: 'silent' });
  console.log(JSON.stringify({ ready: true }));
  for await (const line of createInterface({ input: process.stdin })) if (line.trim() === 'go') break;
  let database: ReturnType<typeof openDatabase> | undefined;
  try {
    database = openDatabase(config);
    const result = await migrateToLatest(
      database.db,
      mode === 'stall' ? STALL_MIGRATIONS(true) : allMigrations(),
      config,
    );
    console.log(JSON.stringify({ applied: (result.results ?? []).map((r) => r.migrationName) }));
  } catch (error) {
    console.log(JSON.stringify({ error: (error as Error).message }));
  } finally {
    await database?.close();
  }
  process.exit(0);
}
