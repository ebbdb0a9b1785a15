import type { Kysely, Migration } from 'kysely';
import { defaultImageTokens } from './image-budgets.ts';
import { familyReasons } from './reasoning-support.ts';

/** This feature's migrations: their names' numbers set the order they apply in (see platform/db/migrate.ts). */
export const modelsMigrations: Record<string, Migration> = {
  '0500_models_catalogue': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('models')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('upstream_model', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('price_prompt', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('price_completion', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('price_request', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('price_second', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('price_image', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('context_length', 'integer')
        .addColumn('max_output_tokens', 'integer')
        .addColumn('max_predict_seconds', 'integer')
        .addColumn('input_modalities', 'text', (c) => c.notNull().defaultTo('["text"]'))
        .addColumn('output_modalities', 'text', (c) => c.notNull().defaultTo('["text"]'))
        .addColumn('fallbacks', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('is_test', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '1100_models_detail_prices': {
    async up(db: Kysely<any>) {
      // Nullable on purpose: NULL means "not set, charge the plain prompt/completion price", which is what
      // every model priced before this migration was charged, so existing rows keep their charges.
      for (const column of [
        'price_cache_read',
        'price_cache_write',
        'price_reasoning',
        'price_audio_input',
        'price_audio_output',
      ]) {
        await db.schema.alterTable('models').addColumn(column, 'bigint').execute();
      }
      await db.schema
        .alterTable('models')
        .addColumn('price_web_search', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  },
  '1200_models_worst_cases': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('models').addColumn('image_tokens', 'integer').execute();
      await db.schema
        .alterTable('models')
        .addColumn('image_prices', 'text', (c) => c.notNull().defaultTo('{}'))
        .execute();
      // Models that already list image input keep taking images, at their family's worst case.
      const rows = await db.selectFrom('models').select(['id', 'upstream_model', 'input_modalities']).execute();
      for (const row of rows) {
        const budget = defaultImageTokens(row.upstream_model, JSON.parse(row.input_modalities));
        if (budget !== null)
          await db.updateTable('models').set({ image_tokens: budget }).where('id', '=', row.id).execute();
      }
    },
  },
  '1740_models_cache_write_1h_price': {
    async up(db: Kysely<any>) {
      // Nullable: NULL means "no 1-hour cache-write price", and such a model refuses `cache_control.ttl: "1h"`,
      // which every model did before this migration.
      await db.schema.alterTable('models').addColumn('price_cache_write_1h', 'bigint').execute();
    },
  },
  '1800_models_answer_timeout': {
    async up(db: Kysely<any>) {
      // Nullable: NULL means "wait UPSTREAM_TIMEOUT_MS", the deadline every model had before this migration.
      await db.schema.alterTable('models').addColumn('answer_timeout_ms', 'integer').execute();
    },
  },
  '1840_models_reasons': {
    async up(db: Kysely<any>) {
      // `reasons`: the model takes a reasoning effort (a Messages thinking budget becomes one only then);
      // `reasons_by_operator`: 1 when the operator chose it, which a sync keeps (0: a default the sync may refresh).
      await db.schema
        .alterTable('models')
        .addColumn('reasons', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('models')
        .addColumn('reasons_by_operator', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      // Existing models get their family's default; the next sync refines it from the provider's list.
      const rows = await db.selectFrom('models').select(['id', 'upstream_model']).execute();
      for (const row of rows)
        if (familyReasons(row.upstream_model))
          await db.updateTable('models').set({ reasons: 1 }).where('id', '=', row.id).execute();
    },
  },
};
