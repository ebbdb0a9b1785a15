import type { Kysely, Migration } from 'kysely';

/** Migrations in this feature's range (1640–1649). */
export const responsesMigrations: Record<string, Migration> = {
  '1640_stored_responses': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('stored_responses')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('app_id', 'text')
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('input_items', 'text', (c) => c.notNull())
        .addColumn('response', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      // The expiry job deletes the oldest first.
      await db.schema.createIndex('stored_responses_expiry').on('stored_responses').column('expires_at').execute();
    },
  },
};
