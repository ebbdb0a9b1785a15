import { PostgresAdapter, type ColumnType, type Kysely, type Migration } from 'kysely';
import { rebuildWithoutRowid } from '../platform/db/sqlite-rebuild.ts';

/** One billable call (chat, embedding, image, audio, prediction): who, what, how much, how it ended. */
export interface UsageRecordsTable {
  /** `use_…` */
  id: string;
  user_id: string;
  app_id: string | null;
  key_id: string | null;
  model: string;
  /** `chat`, `embeddings`, `images`, `speech`, `transcriptions`, `realtime`, `prediction`. */
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

export interface UsageTables {
  usage_records: UsageRecordsTable;
}

export const usageMigrations: Record<string, Migration> = {
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
      await db.transaction().execute((trx) => rebuildWithoutRowid(trx, 'usage_records'));
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
