import type { Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { ownTables } from '../platform/db/own-tables.ts';

/** A person with a Tollgate account. */
export interface UsersTable {
  id: string;
  /** Lower-cased; unique. */
  email: string;
  name: string;
  image: string | null;
  password_hash: string;
  created_at: number;
}

/** A dashboard session; the cookie carries the token, the table only its SHA-256. */
export interface SessionsTable {
  token_hash: string;
  user_id: string;
  csrf_token: string;
  created_at: number;
  expires_at: number;
  /**
   * When the session began with its account's sign-up: the page that sign-up returned to (an OAuth interaction's
   * page, for an account made from an app's sign-in page); null for a sign-in.
   */
  signed_up_for: string | null;
}

/** The tables this feature owns: only its view (`accountsDb`) sees them (tooling: src/testing/all-tables.ts). */
export interface AccountsTables {
  users: UsersTable;
  sessions: SessionsTable;
}

/** Accounts' view of the database: its own tables, and only those (see `ownTables`). */
export type AccountsDb = Kysely<AccountsTables>;

/** `db` (the shared connection, or a transaction handed over as `Db`) seen with accounts' own tables. */
export function accountsDb(db: Db): AccountsDb {
  return ownTables<AccountsTables>(db);
}
