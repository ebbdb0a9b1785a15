import { Migrator, sql, type Kysely, type Migration, type MigrationResultSet } from 'kysely';
import type { PlatformConfig } from '../config.ts';
import { withoutQueryTimeout } from './connect.ts';

/** Where the migrator keeps its own tables: the configured PostgreSQL schema (SQLite has none). */
export type MigrationPlace = Pick<PlatformConfig, 'DATABASE_URL' | 'DATABASE_SCHEMA'>;

function migrator(db: Kysely<any>, migrations: Record<string, Migration>, place: MigrationPlace): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    // Kysely looks for its tables in every schema; naming ours keeps deployments (and test runs) that
    // share one PostgreSQL database from seeing each other's migration state.
    migrationTableSchema: place.DATABASE_URL ? place.DATABASE_SCHEMA : undefined,
    // The order is checked by checkHistory, which knows the migrations that landed late (Kysely's own check
    // compares the executed ones in the order of their timestamps, so a migration run late would fail every
    // later start).
    allowUnorderedMigrations: true,
  });
}

/**
 * Migrations that reached main numbered below others already there (their branch merged after them): a
 * database made in between (main of 23 November 2026, 16:18–16:36 UTC, which had 1630–1640 and not these) runs
 * them late, after higher numbers. Each is independent of the ones it follows (new columns and tables of
 * billing and top-ups; 1630–1640 are the events' and stored responses' own tables). Do not add to this list:
 * a new migration takes a number above every existing one.
 */
export const LANDED_LATE: ReadonlySet<string> = new Set(['1620_billing_debt_and_references', '1621_topups']);

/**
 * Migrations renamed after databases ran them: main of 23 November 2026, 22:43 UTC, called 1710
 * `1700_billing_one_open_hold_index` for one commit (1700 went to another branch's migration). The record is
 * renamed before migrating, so the migration is not run twice; its content is the same under both names.
 */
export const RENAMED_MIGRATIONS: Readonly<Record<string, string>> = {
  '1700_billing_one_open_hold_index': '1710_billing_one_open_hold_index',
};

/**
 * Applies every feature's migrations in name order. Each feature owns a `migrations.ts` whose names start
 * with a sequence number, so one set of migrations serves both dialects and lands in a known order.
 * A new migration takes a number above every existing one, whichever feature it belongs to: a migration
 * that sorts before one a database already ran is refused ({@link checkHistory}), except the few of
 * {@link LANDED_LATE}. A database that ran migrations this code does not know (a newer version's) is refused
 * before anything is applied ({@link NewerDatabaseError}).
 * Kysely's migrator runs the pending migrations in one transaction under a lock (PostgreSQL: an advisory lock;
 * SQLite: the transaction's BEGIN IMMEDIATE, see GroupCommitSqliteAdapter), so several processes starting at
 * once apply each migration once, and a process killed mid-way leaves none of its migrations half applied.
 */
export async function migrateToLatest(
  db: Kysely<any>,
  migrations: Record<string, Migration>,
  place: MigrationPlace,
): Promise<MigrationResultSet> {
  // A migration may build an index over a big table, and a second process waits on the lock while the first
  // migrates: neither is a request's statement, to be cut at DATABASE_QUERY_TIMEOUT_SECONDS.
  return withoutQueryTimeout(async () => {
    await checkHistory(db, migrations, place);
    const result = await migrator(db, migrations, place).migrateToLatest();
    if (result.error) throw result.error;
    return result;
  });
}

/**
 * Refuses a database this code must not migrate, before anything is applied, after renaming the records of
 * {@link RENAMED_MIGRATIONS}: one that ran migrations unknown here ({@link NewerDatabaseError}), or one that
 * ran a migration sorting after one still pending here (outside {@link LANDED_LATE}), which means a migration
 * was numbered below an existing one.
 */
async function checkHistory(db: Kysely<any>, migrations: Record<string, Migration>, place: MigrationPlace) {
  let executed = await executedMigrations(db, place);
  if (executed === null) return;
  const table = () => (place.DATABASE_URL ? db.withSchema(place.DATABASE_SCHEMA) : db);
  for (const [old, current] of Object.entries(RENAMED_MIGRATIONS)) {
    if (!executed.includes(old) || executed.includes(current) || !Object.hasOwn(migrations, current)) continue;
    await table().updateTable('kysely_migration').set({ name: current }).where('name', '=', old).execute();
    executed = executed.map((name) => (name === old ? current : name));
  }
  const unknown = executed.filter((name) => !Object.hasOwn(migrations, name));
  if (unknown.length > 0) throw new NewerDatabaseError(unknown);
  const done = new Set(executed);
  const last = executed
    .filter((name) => !LANDED_LATE.has(name))
    .sort()
    .at(-1);
  const early = Object.keys(migrations)
    .filter((name) => !done.has(name) && !LANDED_LATE.has(name) && last !== undefined && name < last)
    .sort();
  if (early.length > 0) {
    throw new Error(
      `migration ${early[0]} sorts before ${last}, which this database already ran: a new migration must take a ` +
        'number above every existing one. Nothing was changed.',
    );
  }
}

/** Names of the migrations not yet applied (empty when the schema is current). */
export async function pendingMigrations(
  db: Kysely<any>,
  migrations: Record<string, Migration>,
  place: MigrationPlace,
): Promise<string[]> {
  return (await migrator(db, migrations, place).getMigrations()).filter((m) => !m.executedAt).map((m) => m.name);
}

/**
 * A database that a newer Tollgate migrated: it has run migrations this code does not know. Older code on a
 * newer schema could write rows the newer code does not expect (or miss a table it must write), so `serve`
 * and every command refuse it before touching anything. Kysely refused it already, as "corrupted migrations:
 * previously executed migration … is missing", which reads as damage and invites deleting rows from
 * `kysely_migration`; this says what happened and what to do. The record is Kysely's `kysely_migration` table,
 * which every version has kept, so each version from this one on refuses every later version's database.
 */
export class NewerDatabaseError extends Error {
  readonly code = 'DATABASE_NEWER_THAN_CODE';
  readonly unknownMigrations: string[];
  constructor(unknownMigrations: string[]) {
    super(
      `this database was upgraded by a newer version of Tollgate: it has run migration${unknownMigrations.length > 1 ? 's' : ''} ` +
        `${unknownMigrations.join(', ')}, which this version does not know. Downgrading is not supported: start the ` +
        'version that upgraded it (or a newer one), or restore a backup made before the upgrade (README, ' +
        '"Upgrading"). Nothing was changed.',
    );
    this.name = 'NewerDatabaseError';
    this.unknownMigrations = unknownMigrations;
  }
}

/** Names of the migrations the database records as run, in name order; null on a new database (no table). */
async function executedMigrations(db: Kysely<any>, place: MigrationPlace): Promise<string[] | null> {
  const schema = place.DATABASE_URL ? place.DATABASE_SCHEMA : undefined;
  const table = schema ? `"${schema.replaceAll('"', '""')}".kysely_migration` : null;
  const exists = table
    ? await sql<{ found: unknown }>`select to_regclass(${table}) as found`.execute(db)
    : await sql<{ found: unknown }>`select 1 as found from sqlite_master where name = 'kysely_migration'`.execute(db);
  if (!exists.rows[0]?.found) return null;
  const rows: { name: string }[] = await (schema ? db.withSchema(schema) : db)
    .selectFrom('kysely_migration')
    .select('name')
    .orderBy('name')
    .execute();
  return rows.map((row) => row.name);
}
