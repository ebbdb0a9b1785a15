import type { Kysely, Migration } from 'kysely';

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
}

export interface AccountsTables {
  users: UsersTable;
  sessions: SessionsTable;
}

export const accountsMigrations: Record<string, Migration> = {
  '0100_accounts_users_sessions': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('image', 'text')
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('csrf_token', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sessions_user_id').on('sessions').column('user_id').execute();
    },
  },
};
