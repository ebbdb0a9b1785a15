import type { Kysely } from 'kysely';
import type { Db } from './connect.ts';

/**
 * `db` seen with the tables `T` only. Each feature calls this once, in its own `schema.ts`, with its own
 * tables: its queries then compile against those and nothing else, so reading or writing another feature's
 * table is a type error and goes through that feature's API instead. `db` is the shared connection, or a
 * transaction another feature opened and handed over (see {@link asDb}); the view costs nothing at run time.
 */
export function ownTables<T>(db: Db): Kysely<T> {
  return db as unknown as Kysely<T>;
}

/**
 * Forgets which feature's tables a handle was typed with: how a feature passes its open transaction to
 * another feature's API, which views it with its own tables and so joins the caller's transaction.
 */
export function asDb(db: Kysely<any>): Db {
  return db as Db;
}
