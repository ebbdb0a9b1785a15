import type { Generated, Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { ownTables } from '../platform/db/own-tables.ts';

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
  /** Per 1M tokens written to the prompt cache for 1 hour (migration 1740); NULL: such writes are refused. */
  price_cache_write_1h: number | null;
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
  /**
   * Milliseconds this model's answer may take to begin before the next fallback is tried (or 504 answered);
   * NULL: `UPSTREAM_TIMEOUT_MS` (migration 1800).
   */
  answer_timeout_ms: number | null;
  /**
   * 1 when the model takes a reasoning effort: a Messages thinking budget is sent to it as one (migration 1840;
   * see `reasoning-support.ts` for the defaults).
   */
  reasons: Generated<number>;
  /** 1 when the operator set `reasons` (a sync keeps it); 0: a default, which a sync refreshes. */
  reasons_by_operator: Generated<number>;
  /** 1 for built-in test models such as `tollgate/echo`. */
  is_test: number;
  enabled: number;
  updated_at: number;
}

/** The tables this feature owns: only its view (`modelsDb`) sees them (tooling: src/testing/all-tables.ts). */
export interface ModelsTables {
  models: ModelsTable;
}

/** Models' view of the database: its own tables, and only those (see `ownTables`). */
export type ModelsDb = Kysely<ModelsTables>;

/** `db` (the shared connection, or a transaction handed over as `Db`) seen with models' own tables. */
export function modelsDb(db: Db): ModelsDb {
  return ownTables<ModelsTables>(db);
}
