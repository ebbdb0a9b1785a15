import { sql, type ColumnType, type Generated, type Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { ownTables } from '../platform/db/own-tables.ts';

/**
 * A user's wallet: a cache of the ledger that is updated in the same transaction as the entries, and the
 * row every movement of that user locks first (so all of one user's money moves one at a time, across
 * processes). `balance` is what the user owns (available + held); `reserved` is the part held by open holds.
 */
export interface WalletsTable {
  user_id: string;
  /** Micro-credits: the sum of the user's `available` and `held` ledger accounts. */
  balance: number;
  /** Micro-credits: the sum of the user's `held` ledger account (= the open holds' amounts). */
  reserved: number;
  /**
   * Micro-credits the user owes (minus the sum of the `debt` ledger account): a refund or dispute of a top-up
   * whose credits were already spent. Any debt refuses new holds (402) until a top-up repays it.
   */
  debt: Generated<number>;
  created_at: number;
  updated_at: number;
}

/** The kinds of money movement; each is one balanced ledger transaction. */
export const MOVEMENT_TYPES = [
  'grant',
  'topup',
  'adjustment',
  'hold',
  'capture',
  'release',
  'expiry',
  'refund',
  'dispute',
] as const;
export type MovementType = (typeof MOVEMENT_TYPES)[number];

/** One movement of credits: the header of a set of entries that sum to zero. Append-only. */
export interface LedgerTransactionsTable {
  /** Insertion order; pages of the transaction list follow it. */
  seq: Generated<number>;
  /** `txn_…` */
  id: string;
  type: MovementType;
  /** The user whose wallet moved (every movement touches exactly one wallet). */
  user_id: string;
  hold_id: string | null;
  description: string;
  /** The payment processor's ids behind the movement (`stripe:evt_…:pi_…`), for top-ups, refunds, disputes. */
  reference: string | null;
  /** Wallet balance and reserved amount just after this movement (micro-credits). */
  balance_after: number;
  reserved_after: number;
  created_at: number;
}

/**
 * One side of a movement: `amount` micro-credits (signed) on `account`. Accounts are `user:<id>:available`,
 * `user:<id>:held` and `system:<name>`; an account's balance is the sum of its entries, and the entries
 * of one transaction sum to zero, so all entries together always sum to zero. Append-only.
 */
export interface LedgerEntriesTable {
  transaction_id: string;
  account: string;
  amount: number;
  created_at: number;
}

/** A hold's life: open until settled (captured and the rest released), released, or expired by the sweep. */
export type HoldStatus = 'open' | 'settled' | 'released' | 'expired';

/**
 * `status = 'open'` written into the SQL as a literal, as the open-hold indexes are partial on it (see
 * migration 0900): with a bound parameter the planner could not use them.
 */
export const OPEN = sql.lit<'open'>('open');

/** Credits reserved for one billable call before it runs; settled exactly once. */
export interface HoldsTable {
  /** `hold_…` */
  id: string;
  user_id: string;
  app_id: string | null;
  key_id: string | null;
  /** Micro-credits reserved when the hold was placed. */
  amount: number;
  /** Micro-credits captured at settlement (≤ amount). */
  captured: number;
  /** Micro-credits of `captured` given back by refunds (≤ captured). */
  refunded: number;
  status: HoldStatus;
  description: string;
  created_at: number;
  expires_at: number;
  closed_at: number | null;
  /** Start (epoch ms, UTC) of the day and the month the hold was placed in: the periods it counts in. */
  period_day: number;
  period_month: number;
}

/**
 * Spend per limit subject and period, kept beside the holds so a limit check reads one row per period.
 * `subject` is `app:<userId>:<clientId>` or `key:<keyId>`; `period_start` is the UTC day or month start
 * (0 for `total`). `held` is the sum of the open holds placed in that period, `spent` what their
 * settlements captured net of refunds. Updated under the user's wallet lock, in the movement's transaction.
 */
export interface SpendCountersTable {
  subject: string;
  /** No `weekly`: a week's spend is the sum of its days' counters (periods.ts COUNTER_PERIODS). */
  period: 'daily' | 'monthly' | 'total';
  period_start: number;
  spent: number;
  held: number;
}

/**
 * Spending limits, billing's own: one row per subject (`app:<userId>:<clientId>` or `key:<keyId>`, as the
 * spend counters name them) and period, with the limit in micro-credits. No row: no limit for that period.
 * An app may have a limit for each period; a key has at most one. Only billing writes it (see limits.ts).
 */
export interface SpendingLimitsTable {
  subject: string;
  period: 'daily' | 'weekly' | 'monthly' | 'total';
  amount: number;
}

/*
 * The usage records are the meter's: a call's record is written by its settle or release, in the same
 * transaction (see usage-records.ts), so the feature that writes it atomically with the charge owns the
 * table. The usage feature reports on it through billing's API (`usageAggregates`).
 */

/** One billable call (chat, embedding, image, audio, prediction): who, what, how much, how it ended. */
export interface UsageRecordsTable {
  /** `use_…` */
  id: string;
  user_id: string;
  app_id: string | null;
  key_id: string | null;
  model: string;
  /** `chat`, `embeddings`, `images`, `speech`, `transcriptions`, `translations`, `realtime`, `prediction`. */
  kind: string;
  prompt_tokens: number;
  completion_tokens: number;
  /** Micro-credits captured. */
  cost: number;
  latency_ms: number;
  /** `ok`, `client_aborted`, `upstream_error`, `failed`, `canceled`. */
  status: string;
  hold_id: string | null;
  created_at: number;
  /**
   * How the charge was taken: null when the call was settled on its hold; `charged_after_expiry` when its
   * hold had expired (a crash, a stall) and the cost was charged from the available credits instead.
   */
  settlement: 'charged_after_expiry' | null;
  /** Micro-credits of the call's cost that were not charged: beyond its hold, or beyond what was available after it expired. */
  uncollected: ColumnType<number, number | undefined, number>;
  /** JSON of the usage details the meter was given (cached, reasoning, audio tokens…), or null. */
  details: string | null;
}

/**
 * An operator credit request sent with an `Idempotency-Key`: the first one's answer, replayed to a retry of the
 * same request, and refused to the same key with another request. Written in the movement's transaction.
 */
export interface OperatorCreditRequestsTable {
  idempotency_key: string;
  /** SHA-256 of the request (user, micro-credits, reason): what a retry must repeat. */
  fingerprint: string;
  user_id: string;
  /** The balance the first request answered (micro-credits). */
  balance: number;
  created_at: number;
}

/** The tables this feature owns: only its view (`billingDb`) sees them (tooling: src/testing/all-tables.ts). */
export interface BillingTables {
  wallets: WalletsTable;
  ledger_transactions: LedgerTransactionsTable;
  ledger_entries: LedgerEntriesTable;
  holds: HoldsTable;
  spend_counters: SpendCountersTable;
  spending_limits: SpendingLimitsTable;
  usage_records: UsageRecordsTable;
  operator_credit_requests: OperatorCreditRequestsTable;
}

/** Billing's view of the database: its own tables, and only those (see `ownTables`). */
export type BillingDb = Kysely<BillingTables>;

/** `db` (the shared connection, or a transaction handed over as `Db`) seen with billing's own tables. */
export function billingDb(db: Db): BillingDb {
  return ownTables<BillingTables>(db);
}
