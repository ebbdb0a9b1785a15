import type { Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { ownTables } from '../platform/db/own-tables.ts';

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

/** The tables this feature owns: only its view (`webhooksDb`) sees them (tooling: src/testing/all-tables.ts). */
export interface WebhooksTables {
  webhook_deliveries: WebhookDeliveriesTable;
}

/** Webhooks' view of the database: its own tables, and only those (see `ownTables`). */
export type WebhooksDb = Kysely<WebhooksTables>;

/** `db` (the shared connection, or a transaction handed over as `Db`) seen with webhooks' own tables. */
export function webhooksDb(db: Db): WebhooksDb {
  return ownTables<WebhooksTables>(db);
}
