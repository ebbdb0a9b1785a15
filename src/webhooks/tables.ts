import type { Kysely, Migration } from 'kysely';

/**
 * One accepted (verified) webhook delivery, keyed by its sender and `webhook-id`. The primary key is the
 * idempotency guard: every copy of a delivery races to insert this row in the transaction that finalizes
 * billing, and only the copy whose insert lands has any effect. Refused deliveries are never written.
 */
export interface WebhookDeliveriesTable {
  /** `replicate`. */
  provider: string;
  webhook_id: string;
  /** The prediction id the body carried (the provider's id). */
  prediction_id: string;
  status: string;
  /** 1 when this delivery finalized the prediction's billing. */
  charged: number;
  received_at: number;
}

export interface WebhooksTables {
  webhook_deliveries: WebhookDeliveriesTable;
}

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
