import { sql, type Kysely, type Migration } from 'kysely';

/** A top-up's life: paid and credited (`succeeded`), waiting (`pending`, `processing` for slow methods), or not. */
export type TopupStatus = 'pending' | 'processing' | 'succeeded' | 'failed' | 'expired';

/**
 * One purchase of credits through Stripe: a Checkout Session the user paid (`checkout`) or an off-session
 * payment of auto top-up (`auto`). The credits are fixed when it is created; the ledger movement that credits
 * them is `transaction_id`. Refunds and disputes that took credits back are counted here too.
 */
export interface TopupsTable {
  /** `top_…` */
  id: string;
  user_id: string;
  kind: 'checkout' | 'auto';
  status: TopupStatus;
  /** The price in the currency's minor unit (cents), as Stripe charges it. */
  amount_minor: number;
  currency: string;
  /** Micro-credits bought. */
  credits: number;
  checkout_session_id: string | null;
  payment_intent_id: string | null;
  checkout_url: string | null;
  receipt_url: string | null;
  failure_reason: string | null;
  /** Micro-credits taken back by refunds (Stripe's cumulative `amount_refunded`, converted). */
  refunded: number;
  /** Micro-credits an open or lost dispute took back. */
  disputed: number;
  dispute_status: 'open' | 'won' | 'lost' | null;
  transaction_id: string | null;
  created_at: number;
  updated_at: number;
  credited_at: number | null;
}

/**
 * Stripe events processed, one row per event id, inserted in the transaction of the event's effect (the
 * ledger movement included): the primary key makes a second copy, on any instance, change nothing.
 */
export interface StripeEventsTable {
  event_id: string;
  type: string;
  received_at: number;
}

/**
 * A user's Stripe side: the customer, the payment method saved for auto top-up, and its settings. At most one
 * auto top-up is in flight per user: `auto_in_flight` names it, and it is claimed by a conditional update.
 */
export interface TopupAccountsTable {
  user_id: string;
  stripe_customer_id: string | null;
  payment_method_id: string | null;
  auto_enabled: number;
  /** Micro-credits: a settle that leaves `available` below this starts an auto top-up. */
  auto_threshold: number;
  auto_amount_minor: number;
  auto_in_flight: string | null;
  /** Why auto top-up was turned off (a failed payment), shown on the dashboard until it is set up again. */
  auto_failure: string | null;
  auto_failed_at: number | null;
  updated_at: number;
}

export interface TopupsTables {
  topups: TopupsTable;
  stripe_events: StripeEventsTable;
  topup_accounts: TopupAccountsTable;
}

export const topupsMigrations: Record<string, Migration> = {
  '1621_topups': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('topups')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('amount_minor', 'bigint', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('credits', 'bigint', (c) => c.notNull())
        .addColumn('checkout_session_id', 'text', (c) => c.unique())
        .addColumn('payment_intent_id', 'text', (c) => c.unique())
        .addColumn('checkout_url', 'text')
        .addColumn('receipt_url', 'text')
        .addColumn('failure_reason', 'text')
        .addColumn('refunded', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('disputed', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('dispute_status', 'text')
        .addColumn('transaction_id', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('credited_at', 'bigint')
        .addCheckConstraint(
          'topups_amounts',
          sql.raw('credits > 0 AND refunded >= 0 AND disputed >= 0 AND refunded + disputed <= credits'),
        )
        .execute();
      await db.schema.createIndex('topups_user').on('topups').columns(['user_id', 'created_at']).execute();
      // The database's own guard: one pending auto top-up per user, whatever the instances do.
      await db.schema
        .createIndex('topups_one_auto_in_flight')
        .on('topups')
        .column('user_id')
        .unique()
        .where(sql.ref('kind'), '=', sql.lit('auto'))
        .where(sql.ref('status'), '=', sql.lit('pending'))
        .execute();
      await db.schema
        .createTable('stripe_events')
        .addColumn('event_id', 'text', (c) => c.primaryKey())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('received_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('topup_accounts')
        .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id'))
        .addColumn('stripe_customer_id', 'text')
        .addColumn('payment_method_id', 'text')
        .addColumn('auto_enabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('auto_threshold', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('auto_amount_minor', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('auto_in_flight', 'text')
        .addColumn('auto_failure', 'text')
        .addColumn('auto_failed_at', 'bigint')
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
};
