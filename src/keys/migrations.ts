import type { Kysely, Migration } from 'kysely';

/** This feature's migrations: their names' numbers set the order they apply in (see platform/db/migrate.ts). */
export const keysMigrations: Record<string, Migration> = {
  '0300_keys_api_keys': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('app_id', 'text', (c) => c.references('oauth_clients.client_id').onDelete('set null'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('key_sealed', 'text', (c) => c.notNull())
        .addColumn('permissions', 'text', (c) => c.notNull())
        .addColumn('limit_micro', 'bigint')
        .addColumn('limit_period', 'text')
        .addColumn('last_used_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('api_keys_user').on('api_keys').columns(['user_id', 'created_at']).execute();
    },
  },
  '1760_keys_expires_at': {
    async up(db: Kysely<any>) {
      // Nullable: NULL means the key never expires, as every key did before this migration.
      await db.schema.alterTable('api_keys').addColumn('expires_at', 'bigint').execute();
    },
  },
  '1850_keys_models': {
    async up(db: Kysely<any>) {
      // Nullable: NULL means the key may call every model, as every key could before this migration.
      await db.schema.alterTable('api_keys').addColumn('models', 'text').execute();
    },
  },
};
