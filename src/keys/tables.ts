import type { Kysely, Migration } from 'kysely';

/** A user API key (`ak_…`). The value is looked up by its SHA-256 and kept only AES-256-GCM sealed. */
export interface ApiKeysTable {
  /** `key_…` */
  id: string;
  user_id: string;
  /** The OAuth client that created it; null when created from the dashboard. */
  app_id: string | null;
  name: string;
  /** SHA-256 hex of the key value; unique. */
  key_hash: string;
  /** The key value sealed with ENCRYPTION_KEY (contract §2.1 returns `key` when listing). */
  key_sealed: string;
  /** JSON array of permissions (contract §5.3). */
  permissions: string;
  last_used_at: number | null;
  created_at: number;
  revoked_at: number | null;
}

export interface KeysTables {
  api_keys: ApiKeysTable;
}

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
};
