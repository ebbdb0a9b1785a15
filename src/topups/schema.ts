import type { Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { ownTables } from '../platform/db/own-tables.ts';

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

/** The tables this feature owns: only its view (`topupsDb`) sees them (tooling: src/testing/all-tables.ts). */
export interface TopupsTables {
  topups: TopupsTable;
  stripe_events: StripeEventsTable;
  topup_accounts: TopupAccountsTable;
}

/** Topups' view of the database: its own tables, and only those (see `ownTables`). */
export type TopupsDb = Kysely<TopupsTables>;

/** `db` (the shared connection, or a transaction handed over as `Db`) seen with topups' own tables. */
export function topupsDb(db: Db): TopupsDb {
  return ownTables<TopupsTables>(db);
}
