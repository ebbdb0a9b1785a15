import type { Kysely, Migration } from 'kysely';

/** This feature's migrations: their names' numbers set the order they apply in (see platform/db/migrate.ts). */
export const webhooksMigrations: Record<string, Migration> = {
  '0810_webhook_deliveries': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('webhook_id', 'text', (c) => c.notNull())
        .addColumn('prediction_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('charged', 'integer', (c) => c.notNull())
        .addColumn('received_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('webhook_deliveries_pk', ['provider', 'webhook_id'])
        .execute();
      await db.schema
        .createIndex('webhook_deliveries_prediction')
        .on('webhook_deliveries')
        .columns(['prediction_id'])
        .execute();
    },
  },
};
