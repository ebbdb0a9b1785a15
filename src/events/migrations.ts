import type { Kysely, Migration } from 'kysely';

/** Migrations of the range 1630–1639. */
export const eventsMigrations: Record<string, Migration> = {
  '1630_events_webhook_endpoints': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner_user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('event_types', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('secret_sealed', 'text', (c) => c.notNull())
        .addColumn('previous_secret_sealed', 'text')
        .addColumn('previous_expires_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('webhook_endpoints_owner')
        .on('webhook_endpoints')
        .columns(['owner_user_id', 'created_at'])
        .execute();
    },
  },
  '1631_events_outbox': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhook_events')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text')
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('dedupe_key', 'text', (c) => c.unique())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('webhook_messages')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('event_id', 'text', (c) => c.notNull().references('webhook_events.id').onDelete('cascade'))
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('claim_token', 'text')
        .addColumn('claimed_until', 'bigint')
        .addColumn('last_attempt_at', 'bigint')
        .addColumn('last_status_code', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('last_response_excerpt', 'text')
        .addColumn('delivered_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      // The sender's scan: what is due, oldest first. The endpoint's list: its newest messages.
      await db.schema
        .createIndex('webhook_messages_due')
        .on('webhook_messages')
        .columns(['status', 'next_attempt_at'])
        .execute();
      await db.schema
        .createIndex('webhook_messages_endpoint')
        .on('webhook_messages')
        .columns(['endpoint_id', 'created_at'])
        .execute();
    },
  },
  '1632_events_settings': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('event_settings')
        .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('low_balance_threshold', 'bigint')
        .addColumn('low_balance_armed', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
};
