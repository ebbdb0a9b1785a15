import type { Selectable } from 'kysely';
import type { ModelsDb } from './schema.ts';
import type { ModelsTable } from './schema.ts';
import { TIMER_MAX_MS } from '../platform/config.ts';
import { MIN_UPSTREAM_TIMEOUT_MS } from '../providers/config.ts';
import { familyReasons } from './reasoning-support.ts';

/**
 * Prices in integer micro-credits: token prices per 1M tokens, `request` per call, `second` per compute
 * second, `image` per output image, `webSearch` per search. A detailed token price that is unset (`null` or
 * absent) is charged at its fallback — `prompt` for `cacheRead`, `cacheWrite` and `audioInput`,
 * `completion` for `reasoning` and `audioOutput` (`PRICE_FALLBACKS` in `pricing.ts`) — never at 0.
 */
export interface ModelPricing {
  prompt: number;
  completion: number;
  /** Input tokens read from the provider's prompt cache. */
  cacheRead?: number | null;
  /** Input tokens written to the provider's prompt cache (the 5-minute lifetime, Anthropic's default). */
  cacheWrite?: number | null;
  /** Input tokens written to the prompt cache for 1 hour (`cache_control.ttl: "1h"`); unset: the model refuses that lifetime. */
  cacheWrite1h?: number | null;
  /** Reasoning tokens, when the provider prices them apart from the completion. */
  reasoning?: number | null;
  audioInput?: number | null;
  audioOutput?: number | null;
  request: number;
  second: number;
  image: number;
  /** Per web search the provider ran; unset is 0 (a model that cannot search never reports one). */
  webSearch?: number;
}

/**
 * The largest token count the catalogue keeps (`contextLength`, `maxOutputTokens`): its columns are PostgreSQL
 * `integer`s, which refuse more, and SQLite, which stores any integer, could not read one past 2^53 back. No
 * model comes near it (the longest contexts are a few million tokens).
 */
export const MAX_CATALOGUE_TOKENS = 2_147_483_647;

/** A model of the catalogue, as the features use it. */
export interface CatalogueModel {
  id: string;
  provider: string;
  upstreamModel: string;
  name: string;
  pricing: ModelPricing;
  contextLength: number | null;
  maxOutputTokens: number | null;
  maxPredictSeconds: number | null;
  /** Prompt tokens one image part may cost in a chat (held per image); null: image parts are refused. */
  imageTokens: number | null;
  /** Images API prices per image in micro-credits by `"<quality>/<size>"` (`*` for either); see {@link imagePriceOf}. */
  imagePrices: Record<string, number>;
  inputModalities: string[];
  outputModalities: string[];
  fallbacks: string[];
  /**
   * Milliseconds this model's answer may take to begin (a non-streaming answer's whole body, a stream's first
   * output) before the next fallback is tried, or 504 answered; null: `UPSTREAM_TIMEOUT_MS`. The operator knows
   * which models answer fast: without it a hung provider held the call for the global deadline (10 minutes)
   * before any fallback was tried.
   */
  answerTimeoutMs: number | null;
  /**
   * Whether the model takes a reasoning effort: a Messages `thinking.budget_tokens` reaches an OpenAI-compatible
   * model as a `reasoning_effort` only when it does (many answer 400 to one). Default: `reasoning-support.ts`.
   */
  reasons: boolean;
  /** True when the operator set {@link reasons} (a sync keeps it); false: a default, which a sync refreshes. */
  reasonsByOperator: boolean;
  isTest: boolean;
  enabled: boolean;
  updatedAt: number;
}

/**
 * The most `answerTimeoutMs` may be: the bound of `UPSTREAM_TIMEOUT_MS` (a Node timer's longest delay), which
 * also fits the PostgreSQL `integer` column.
 */
export const MAX_ANSWER_TIMEOUT_MS = TIMER_MAX_MS;

/** The least `answerTimeoutMs` may be: the bound of `UPSTREAM_TIMEOUT_MS`; less could not reach any provider. */
export const MIN_ANSWER_TIMEOUT_MS = MIN_UPSTREAM_TIMEOUT_MS;

/** Maps a row of `models` to a {@link CatalogueModel}. */
export function modelFromRow(row: Selectable<ModelsTable>): CatalogueModel {
  return {
    id: row.id,
    provider: row.provider,
    upstreamModel: row.upstream_model,
    name: row.name,
    pricing: {
      prompt: row.price_prompt,
      completion: row.price_completion,
      cacheRead: row.price_cache_read ?? null,
      cacheWrite: row.price_cache_write ?? null,
      cacheWrite1h: row.price_cache_write_1h ?? null,
      reasoning: row.price_reasoning ?? null,
      audioInput: row.price_audio_input ?? null,
      audioOutput: row.price_audio_output ?? null,
      request: row.price_request,
      second: row.price_second,
      image: row.price_image,
      webSearch: row.price_web_search ?? 0,
    },
    contextLength: row.context_length,
    maxOutputTokens: row.max_output_tokens,
    maxPredictSeconds: row.max_predict_seconds,
    imageTokens: row.image_tokens ?? null,
    imagePrices: JSON.parse(row.image_prices ?? '{}'),
    inputModalities: JSON.parse(row.input_modalities),
    outputModalities: JSON.parse(row.output_modalities),
    fallbacks: JSON.parse(row.fallbacks),
    answerTimeoutMs: row.answer_timeout_ms ?? null,
    reasons: row.reasons === 1,
    reasonsByOperator: row.reasons_by_operator === 1,
    isTest: row.is_test === 1,
    enabled: row.enabled === 1,
    updatedAt: row.updated_at,
  };
}

/** The model with this public id, or null (disabled models included; callers decide). */
export async function getModel(db: ModelsDb, id: string): Promise<CatalogueModel | null> {
  const row = await db.selectFrom('models').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? modelFromRow(row) : null;
}

/**
 * The model with this public id, its row locked until `trx` ends (PostgreSQL; SQLite runs one write transaction
 * at a time): for a read-then-write that must not overwrite a change committed in between.
 */
export async function getModelForUpdate(
  trx: ModelsDb,
  dialect: 'sqlite' | 'postgres',
  id: string,
): Promise<CatalogueModel | null> {
  const query = trx.selectFrom('models').selectAll().where('id', '=', id);
  const row = await (dialect === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
  return row ? modelFromRow(row) : null;
}

/**
 * The enabled Replicate models pinned to this version (`upstreamModel` `owner/name:<version>`): how a client
 * that sends only the version (the `replicate` client's `run("owner/name:<version>")`) names a model.
 */
export async function modelsPinnedToVersion(db: ModelsDb, version: string): Promise<CatalogueModel[]> {
  const rows = await db
    .selectFrom('models')
    .selectAll()
    .where('provider', '=', 'replicate')
    .where('enabled', '=', 1)
    .where('upstream_model', 'like', `%:${version}`)
    .orderBy('id')
    .execute();
  // LIKE's `_` matches any character: keep only the exact suffix.
  return rows.map(modelFromRow).filter((model) => model.upstreamModel.endsWith(`:${version}`));
}

/** Every enabled model, by id. */
export async function listModels(db: ModelsDb): Promise<CatalogueModel[]> {
  const rows = await db.selectFrom('models').selectAll().where('enabled', '=', 1).orderBy('id').execute();
  return rows.map(modelFromRow);
}

/** Every model, disabled ones included, by id (the cache keeps them all so a disabled id still resolves to "not found" without a query). */
export async function listAllModels(db: ModelsDb): Promise<CatalogueModel[]> {
  const rows = await db.selectFrom('models').selectAll().orderBy('id').execute();
  return rows.map(modelFromRow);
}

/**
 * A model as written: the worst-case fields default to none (no images in chat, no per-size image prices), the
 * answer's deadline to `UPSTREAM_TIMEOUT_MS`, `reasons` to its family's (not the operator's choice).
 */
export type ModelInput = Omit<
  CatalogueModel,
  'updatedAt' | 'imageTokens' | 'imagePrices' | 'answerTimeoutMs' | 'reasons' | 'reasonsByOperator'
> &
  Partial<Pick<CatalogueModel, 'imageTokens' | 'imagePrices' | 'answerTimeoutMs' | 'reasons' | 'reasonsByOperator'>>;

/** Inserts or replaces a model. */
export async function upsertModel(db: ModelsDb, model: ModelInput, now: number): Promise<CatalogueModel> {
  const row = {
    id: model.id,
    provider: model.provider,
    upstream_model: model.upstreamModel,
    name: model.name,
    price_prompt: model.pricing.prompt,
    price_completion: model.pricing.completion,
    price_request: model.pricing.request,
    price_second: model.pricing.second,
    price_image: model.pricing.image,
    price_cache_read: model.pricing.cacheRead ?? null,
    price_cache_write: model.pricing.cacheWrite ?? null,
    price_cache_write_1h: model.pricing.cacheWrite1h ?? null,
    price_reasoning: model.pricing.reasoning ?? null,
    price_audio_input: model.pricing.audioInput ?? null,
    price_audio_output: model.pricing.audioOutput ?? null,
    price_web_search: model.pricing.webSearch ?? 0,
    context_length: model.contextLength,
    max_output_tokens: model.maxOutputTokens,
    max_predict_seconds: model.maxPredictSeconds,
    image_tokens: model.imageTokens ?? null,
    image_prices: JSON.stringify(model.imagePrices ?? {}),
    input_modalities: JSON.stringify(model.inputModalities),
    output_modalities: JSON.stringify(model.outputModalities),
    fallbacks: JSON.stringify(model.fallbacks),
    answer_timeout_ms: model.answerTimeoutMs ?? null,
    reasons: (model.reasons ?? familyReasons(model.upstreamModel)) ? 1 : 0,
    reasons_by_operator: model.reasonsByOperator ? 1 : 0,
    is_test: model.isTest ? 1 : 0,
    enabled: model.enabled ? 1 : 0,
    updated_at: now,
  };
  const { id, ...rest } = row;
  await db
    .insertInto('models')
    .values(row)
    .onConflict((oc) => oc.column('id').doUpdateSet(rest))
    .execute();
  return modelFromRow(row);
}

/**
 * The per-image price of an Images API request for `quality` and `size` (as the client sent them; absent is
 * `auto`): the most specific key the model lists, tried in the order quality and size, quality with `*`,
 * `*` with size, then `*` with `*`. A model with no per-size prices has its flat `image` price for a request
 * that names neither; otherwise null, and the request is refused (a flat price cannot bound a larger or
 * finer image).
 */
export function imagePriceOf(
  model: Pick<CatalogueModel, 'pricing' | 'imagePrices'>,
  quality: string | undefined,
  size: string | undefined,
): number | null {
  const prices = model.imagePrices;
  if (Object.keys(prices).length === 0) return quality === undefined && size === undefined ? model.pricing.image : null;
  const q = quality ?? 'auto';
  const s = size ?? 'auto';
  for (const key of [`${q}/${s}`, `${q}/*`, `*/${s}`, '*/*']) if (prices[key] !== undefined) return prices[key];
  return null;
}
