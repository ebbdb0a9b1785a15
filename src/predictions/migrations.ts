import type { Kysely, Migration } from 'kysely';

/** This feature's migrations: their names' numbers set the order they apply in (see platform/db/migrate.ts). */
export const predictionsMigrations: Record<string, Migration> = {
  '0800_predictions': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('predictions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('replicate_id', 'text', (c) => c.notNull().unique())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('app_id', 'text')
        .addColumn('key_id', 'text')
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('upstream_model', 'text', (c) => c.notNull())
        .addColumn('hold_id', 'text', (c) => c.notNull())
        .addColumn('held', 'bigint', (c) => c.notNull())
        .addColumn('price_request', 'bigint', (c) => c.notNull())
        .addColumn('price_second', 'bigint', (c) => c.notNull())
        .addColumn('price_image', 'bigint', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('output', 'text')
        .addColumn('error', 'text')
        .addColumn('predict_time_us', 'bigint')
        .addColumn('charge', 'bigint')
        .addColumn('captured', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('checked_at', 'bigint')
        .addColumn('finalized_at', 'bigint')
        .addColumn('settled_at', 'bigint')
        .execute();
      await db.schema
        .createIndex('predictions_user_time')
        .on('predictions')
        .columns(['user_id', 'created_at'])
        .execute();
      // Reconciliation scans the open ones (and the claimed-but-unsettled ones) oldest first.
      await db.schema
        .createIndex('predictions_open')
        .on('predictions')
        .columns(['finalized_at', 'created_at'])
        .execute();
      await db.schema
        .createIndex('predictions_unsettled')
        .on('predictions')
        .columns(['settled_at', 'finalized_at'])
        .execute();
    },
  },
  '1730_predictions_cancel_requested': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('predictions').addColumn('cancel_requested_at', 'bigint').execute();
    },
  },
  // What the hold covered, part by part, so that no part is charged beyond it (null on older predictions).
  '1790_predictions_held_parts': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('predictions').addColumn('held_seconds', 'bigint').execute();
      await db.schema.alterTable('predictions').addColumn('outputs_asked', 'bigint').execute();
    },
  },
};
