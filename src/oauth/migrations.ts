import { createHash } from 'node:crypto';
import type { Kysely, Migration } from 'kysely';

/** This feature's migrations: their names' numbers set the order they apply in (see platform/db/migrate.ts). */
export const oauthMigrations: Record<string, Migration> = {
  '0200_oauth_clients_authorized_apps': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('oauth_clients')
        .addColumn('client_id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('client_secret_hash', 'text')
        .addColumn('redirect_uris', 'text', (c) => c.notNull())
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('owner_user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('authorized_apps')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull().references('oauth_clients.client_id').onDelete('cascade'))
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('daily_limit', 'bigint')
        .addColumn('monthly_limit', 'bigint')
        .addColumn('total_limit', 'bigint')
        .addColumn('authorized_at', 'bigint', (c) => c.notNull())
        .addColumn('last_used_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .addPrimaryKeyConstraint('authorized_apps_pk', ['user_id', 'client_id'])
        .execute();
      await db.schema
        .createTable('oidc_payloads')
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('grant_id', 'text')
        .addColumn('user_code', 'text')
        .addColumn('uid', 'text')
        .addColumn('expires_at', 'bigint')
        .addColumn('consumed_at', 'bigint')
        .addPrimaryKeyConstraint('oidc_payloads_pk', ['model', 'id'])
        .execute();
      await db.schema.createIndex('oidc_payloads_grant').on('oidc_payloads').column('grant_id').execute();
      await db.schema.createIndex('oidc_payloads_uid').on('oidc_payloads').column('uid').execute();
    },
  },
  '0210_oidc_payloads_owner': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('oidc_payloads').addColumn('account_id', 'text').execute();
      await db.schema.alterTable('oidc_payloads').addColumn('client_id', 'text').execute();
      await db.schema
        .createIndex('oidc_payloads_owner')
        .on('oidc_payloads')
        .columns(['account_id', 'client_id'])
        .execute();
      await db.schema.createIndex('oidc_payloads_expiry').on('oidc_payloads').column('expires_at').execute();
    },
  },
  // Rows written before ids were hashed (see storedPayloadId in adapter.ts) hold live tokens as their ids and
  // in their payloads' `jti`. The logic is spelled out here, not imported, so this step never changes.
  '1500_oidc_payload_ids_hashed': {
    async up(db: Kysely<any>) {
      const rows: { id: string; model: string; payload: string }[] = await db
        .selectFrom('oidc_payloads')
        .select(['id', 'model', 'payload'])
        .where('model', '<>', 'Grant')
        .execute();
      for (const row of rows) {
        const payload = JSON.parse(row.payload) as Record<string, unknown>;
        delete payload.jti;
        const session = payload.session as Record<string, unknown> | undefined;
        if (session && typeof session === 'object') delete session.cookie;
        await db
          .updateTable('oidc_payloads')
          .set({ id: createHash('sha256').update(row.id).digest('hex'), payload: JSON.stringify(payload) })
          .where('model', '=', row.model)
          .where('id', '=', row.id)
          .execute();
      }
    },
  },
  // A confidential app authenticates with a secret (client_secret_hash) or with its public keys (jwks,
  // private_key_jwt: see client-keys.ts); never both, which registerClient keeps.
  '1830_oauth_clients_jwks': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('oauth_clients').addColumn('jwks', 'text').execute();
    },
  },
};
