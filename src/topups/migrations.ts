import { sql, type Kysely, type Migration } from 'kysely';

/** This feature's migrations: their names' numbers set the order they apply in (see platform/db/migrate.ts). */
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
