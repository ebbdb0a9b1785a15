import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { rebuildWithoutRowid } from '../platform/db/sqlite-rebuild.ts';

/** This feature's migrations: their names' numbers set the order they apply in (see platform/db/migrate.ts). */
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
      // The migrator runs every migration in a transaction, on SQLite too (GroupCommitSqliteAdapter).
      await change(db);
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
     * writes; the old columns go, so nothing can read a stale copy. A data move across features (it reads and
     * alters oauth's and keys' tables), kept as it ran: migrations are history, and run on the whole database.
     */
    async up(db: Kysely<any>) {
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
      await change(db);
    },
  },
  '1710_billing_one_open_hold_index': {
    /**
     * One B-tree less written by every hold placed and every hold closed: the sweep was the only reader of
     * `holds_open_expiry`, and `holds_user_open` serves it too. Both hold only open holds (one per call in
     * flight, plus the overdue ones the sweep is there to clear), so the sweep reads all of `holds_user_open`
     * instead of a range of the other: SQLite scans it as a covering index, PostgreSQL with a bitmap scan.
     */
    async up(db: Kysely<any>) {
      await db.schema.dropIndex('holds_open_expiry').execute();
    },
  },
  '1720_billing_ledger_entries_without_account_index': {
    /**
     * One B-tree less written by every ledger entry (five a call): `ledger_entries_account` served only the
     * verification of one user's accounts. Verification now sums each user's accounts over that user's
     * transactions (`ledger_transactions_user`, then the entries' primary key; verify.ts), and every other
     * reader of the entries goes by transaction or reads them all (a sum of the revenue account in the chaos
     * tests). Dropping an index copies nothing (SQLite lists its pages as free, PostgreSQL removes its file),
     * so unlike a table rebuild this runs at start like any migration.
     */
    async up(db: Kysely<any>) {
      await db.schema.dropIndex('ledger_entries_account').execute();
    },
  },
  '1750_billing_operator_credit_idempotency': {
    /** Operator credits sent with an `Idempotency-Key` (see `OperatorCreditRequestsTable`). */
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('operator_credit_requests')
        .addColumn('idempotency_key', 'text', (c) => c.primaryKey())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('balance', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
};

/**
 * The usage records' migrations, written when the usage feature owned the table; the meter owns it now (see
 * schema.ts), and the names are unchanged, so databases that ran them see nothing new.
 */
export const usageRecordsMigrations: Record<string, Migration> = {
  '0600_usage_records': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('usage_records')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('app_id', 'text')
        .addColumn('key_id', 'text')
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('prompt_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('completion_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('cost', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('latency_ms', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('hold_id', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('usage_records_user_time')
        .on('usage_records')
        .columns(['user_id', 'created_at'])
        .execute();
    },
  },
  '0910_usage_records_compact_storage': {
    /** On SQLite, usage records are stored by their id alone (see `rebuildWithoutRowid`): one B-tree less per call. */
    async up(db: Kysely<any>) {
      if (db.getExecutor().adapter instanceof PostgresAdapter) return;
      await rebuildWithoutRowid(db, 'usage_records');
    },
  },
  '1000_usage_records_settlement': {
    /** What the meter records beyond the charge: a charge taken after the hold expired, what was not collected, the usage details. */
    async up(db: Kysely<any>) {
      await db.schema.alterTable('usage_records').addColumn('settlement', 'text').execute();
      await db.schema
        .alterTable('usage_records')
        .addColumn('uncollected', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('usage_records').addColumn('details', 'text').execute();
    },
  },
};
