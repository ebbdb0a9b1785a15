import { PostgresAdapter, sql, type Generated, type Kysely, type Migration } from 'kysely';
import { rebuildWithoutRowid } from '../platform/db/sqlite-rebuild.ts';

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
  period: 'daily' | 'monthly' | 'total';
  amount: number;
}

export interface BillingTables {
  wallets: WalletsTable;
  ledger_transactions: LedgerTransactionsTable;
  ledger_entries: LedgerEntriesTable;
  holds: HoldsTable;
  spend_counters: SpendCountersTable;
  spending_limits: SpendingLimitsTable;
}

export const billingMigrations: Record<string, Migration> = {
  '0400_billing_wallets_ledger_holds': {
    async up(db: Kysely<any>) {
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      await db.schema
        .createTable('wallets')
        .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id'))
        .addColumn('balance', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('reserved', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        // Defence in depth: the service never lets these happen; the database refuses them too.
        .addCheckConstraint('wallets_reserved_nonnegative', sql.raw('reserved >= 0'))
        .addCheckConstraint('wallets_available_nonnegative', sql.raw('balance - reserved >= 0'))
        .execute();
      await db.schema
        .createTable('ledger_transactions')
        .addColumn('seq', postgres ? 'bigserial' : 'integer', (c) =>
          postgres ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('hold_id', 'text')
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('balance_after', 'bigint', (c) => c.notNull())
        .addColumn('reserved_after', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('ledger_transactions_user')
        .on('ledger_transactions')
        .columns(['user_id', 'seq'])
        .execute();
      await db.schema
        .createTable('ledger_entries')
        .addColumn('transaction_id', 'text', (c) => c.notNull().references('ledger_transactions.id'))
        .addColumn('account', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('ledger_entries_pk', ['transaction_id', 'account'])
        .execute();
      await db.schema.createIndex('ledger_entries_account').on('ledger_entries').column('account').execute();
      await db.schema
        .createTable('holds')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('app_id', 'text')
        .addColumn('key_id', 'text')
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('captured', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('refunded', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('closed_at', 'bigint')
        .addColumn('period_day', 'bigint', (c) => c.notNull())
        .addColumn('period_month', 'bigint', (c) => c.notNull())
        .addCheckConstraint(
          'holds_amounts',
          sql.raw('amount >= 0 AND captured >= 0 AND captured <= amount AND refunded >= 0 AND refunded <= captured'),
        )
        .execute();
      await db.schema.createIndex('holds_open_expiry').on('holds').columns(['status', 'expires_at']).execute();
      await db.schema
        .createIndex('holds_user_status')
        .on('holds')
        .columns(['user_id', 'status', 'expires_at'])
        .execute();
      await db.schema
        .createTable('spend_counters')
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('period', 'text', (c) => c.notNull())
        .addColumn('period_start', 'bigint', (c) => c.notNull())
        .addColumn('spent', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('held', 'bigint', (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('spend_counters_pk', ['subject', 'period', 'period_start'])
        .execute();
    },
  },
  '0900_billing_compact_storage': {
    /**
     * Fewer B-trees written per call (see BENCHMARKS.md): the open-hold indexes keep only open holds, so a
     * settled hold leaves them instead of staying there for ever; and on SQLite the text-keyed tables the
     * gateway writes on every call are stored by their primary key alone (see `rebuildWithoutRowid`).
     * Queries that want the partial indexes say `status = 'open'` as a literal: a bound parameter could be
     * anything, so a planner cannot use an index that holds only open holds for it.
     */
    async up(db: Kysely<any>) {
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      const change = async (trx: Kysely<any>) => {
        await trx.schema.dropIndex('holds_open_expiry').execute();
        await trx.schema.dropIndex('holds_user_status').execute();
        if (!postgres)
          for (const table of ['wallets', 'holds', 'spend_counters', 'ledger_entries'])
            await rebuildWithoutRowid(trx, table);
        await trx.schema
          .createIndex('holds_open_expiry')
          .on('holds')
          .column('expires_at')
          .where(sql.ref('status'), '=', sql.lit('open'))
          .execute();
        await trx.schema
          .createIndex('holds_user_open')
          .on('holds')
          .columns(['user_id', 'expires_at'])
          .where(sql.ref('status'), '=', sql.lit('open'))
          .execute();
      };
      // PostgreSQL runs every migration in a transaction already; Kysely runs SQLite's without one.
      await (postgres ? change(db) : db.transaction().execute(change));
    },
  },
  '1620_billing_debt_and_references': {
    /**
     * Money that comes back out through a payment processor (refunds, disputes) may exceed what the user still
     * has: the rest is a debt on the wallet row (checked where holds are placed) and a `user:<id>:debt` ledger
     * account. Movements from a processor carry its ids in `reference`.
     */
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('wallets')
        .addColumn('debt', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('ledger_transactions').addColumn('reference', 'text').execute();
    },
  },
  '1010_billing_spending_limits': {
    /**
     * Billing owns the spending limits: they move out of `authorized_apps` (an app's daily, monthly and total
     * limit for a user) and `api_keys` (a key's limit and period) into `spending_limits`, which only billing
     * writes; the old columns go, so nothing can read a stale copy.
     */
    async up(db: Kysely<any>) {
      const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
      const change = async (trx: Kysely<any>) => {
        await trx.schema
          .createTable('spending_limits')
          .addColumn('subject', 'text', (c) => c.notNull())
          .addColumn('period', 'text', (c) => c.notNull())
          .addColumn('amount', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('spending_limits_pk', ['subject', 'period'])
          .addCheckConstraint('spending_limits_amount', sql.raw('amount >= 0'))
          .execute();
        for (const period of ['daily', 'monthly', 'total'] as const) {
          await trx
            .insertInto('spending_limits')
            .columns(['subject', 'period', 'amount'])
            .expression(
              trx
                .selectFrom('authorized_apps')
                .select([
                  sql<string>`'app:' || user_id || ':' || client_id`.as('subject'),
                  sql.lit(period).as('period'),
                  `${period}_limit as amount`,
                ])
                .where(`${period}_limit`, 'is not', null),
            )
            .execute();
        }
        await trx
          .insertInto('spending_limits')
          .columns(['subject', 'period', 'amount'])
          .expression(
            trx
              .selectFrom('api_keys')
              .select([
                sql<string>`'key:' || id`.as('subject'),
                sql<string>`coalesce(limit_period, 'total')`.as('period'),
                'limit_micro as amount',
              ])
              .where('limit_micro', 'is not', null),
          )
          .execute();
        for (const column of ['daily_limit', 'monthly_limit', 'total_limit'])
          await trx.schema.alterTable('authorized_apps').dropColumn(column).execute();
        for (const column of ['limit_micro', 'limit_period'])
          await trx.schema.alterTable('api_keys').dropColumn(column).execute();
      };
      await (postgres ? change(db) : db.transaction().execute(change));
    },
  },
};
