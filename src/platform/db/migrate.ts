import { Migrator, type Kysely, type Migration, type MigrationResultSet } from 'kysely';
import type { PlatformConfig } from '../config.ts';

/** Where the migrator keeps its own tables: the configured PostgreSQL schema (SQLite has none). */
export type MigrationPlace = Pick<PlatformConfig, 'DATABASE_URL' | 'DATABASE_SCHEMA'>;

function migrator(db: Kysely<any>, migrations: Record<string, Migration>, place: MigrationPlace): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    // Kysely looks for its tables in every schema; naming ours keeps deployments (and test runs) that
    // share one PostgreSQL database from seeing each other's migration state.
    migrationTableSchema: place.DATABASE_URL ? place.DATABASE_SCHEMA : undefined,
  });
}

/**
 * Applies every feature's migrations in name order. Each feature owns a `migrations.ts` whose names start
 * with a sequence number, so one set of migrations serves both dialects and lands in a known order.
 * A new migration takes a number above every existing one, whichever feature it belongs to: Kysely refuses
 * to apply one that sorts before a migration a database already ran.
 * Kysely's migrator takes a lock, so several processes starting at once apply each migration once.
 */
export async function migrateToLatest(
  db: Kysely<any>,
  migrations: Record<string, Migration>,
  place: MigrationPlace,
): Promise<MigrationResultSet> {
  const result = await migrator(db, migrations, place).migrateToLatest();
  if (result.error) throw result.error;
  return result;
}

/** Names of the migrations not yet applied (empty when the schema is current). */
export async function pendingMigrations(
  db: Kysely<any>,
  migrations: Record<string, Migration>,
  place: MigrationPlace,
): Promise<string[]> {
  return (await migrator(db, migrations, place).getMigrations()).filter((m) => !m.executedAt).map((m) => m.name);
}
