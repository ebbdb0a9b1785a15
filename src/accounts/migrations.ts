import type { Kysely, Migration } from 'kysely';

/** This feature's migrations: their names' numbers set the order they apply in (see platform/db/migrate.ts). */
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
  // A session that began with its account's sign-up keeps the page that sign-up returned to: an OAuth
  // interaction's, when made from an app's sign-in page, whose `prompt=login` it then answers (oauth/sign-in-step.ts).
  '1860_accounts_sessions_signed_up_for': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('sessions').addColumn('signed_up_for', 'text').execute();
    },
  },
};
