import type { Generated, Kysely, Migration } from 'kysely';
import { defaultImageTokens } from './image-budgets.ts';

/**
 * The model catalogue: each public id (`<vendor>/<model>`) maps to a provider, an upstream model and
 * prices. Prices are integer micro-credits: `prompt`/`completion` per 1M tokens, `request` per call,
 * `second` per second of provider compute, `image` per output image (decisions.md "Credits").
 */
export interface ModelsTable {
  id: string;
  /** `openai`, `openrouter`, `anthropic`, `replicate`, `echo`, or the name of a configured provider. */
  provider: string;
  upstream_model: string;
  name: string;
  price_prompt: number;
  price_completion: number;
  price_request: number;
  price_second: number;
  price_image: number;
  /** Detailed token prices per 1M tokens (migration 1100); NULL falls back to `price_prompt` (cache read/write, audio input) or `price_completion` (reasoning, audio output). */
  price_cache_read: number | null;
  price_cache_write: number | null;
  price_reasoning: number | null;
  price_audio_input: number | null;
  price_audio_output: number | null;
  /** Per web search (migration 1100). */
  price_web_search: Generated<number>;
  context_length: number | null;
  max_output_tokens: number | null;
  /**
   * Chat: the prompt tokens one image part may cost, held per image; null refuses image parts (migration
   * 1200; see `image-budgets.ts` for the defaults).
   */
  image_tokens: number | null;
  /**
   * Images API: JSON object of per-image prices in micro-credits by `"<quality>/<size>"`, either part may be
   * `*` (migration 1200). `{}`: the flat `price_image` for a request that names neither quality nor size.
   */
  image_prices: Generated<string>;
  /** Predictions: the worst-case compute seconds a hold covers (default 120). */
  max_predict_seconds: number | null;
  /** JSON arrays of `text`, `image`, `audio`, `embedding`. */
  input_modalities: string;
  output_modalities: string;
  /** JSON array of model ids tried, in order, on an upstream 5xx or timeout before any output. */
  fallbacks: string;
  /** 1 for built-in test models such as `tollgate/echo`. */
  is_test: number;
  enabled: number;
  updated_at: number;
}

export interface ModelsTables {
  models: ModelsTable;
}

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
};
