import type { CatalogueDeps } from './deps.ts';
import {
  getModelForUpdate,
  MAX_CATALOGUE_TOKENS,
  upsertModel,
  type CatalogueModel,
  type ModelInput,
  type ModelPricing,
} from './catalogue.ts';
import { defaultImageTokens } from './image-budgets.ts';
import { defaultReasons } from './reasoning-support.ts';
import { usdToMicros } from './pricing.ts';
import type { UpstreamModel } from '../providers/types.ts';

/** What a sync did, per provider. */
export interface SyncReport {
  providers: Array<{ provider: string; imported: number; updated: number; needsPricing: string[]; error?: string }>;
}

/** The public id of an upstream model: OpenRouter's ids are already `<vendor>/<model>`; others get the provider as vendor. */
function publicId(provider: string, upstreamId: string): string {
  return provider === 'openrouter' && upstreamId.includes('/') ? upstreamId : `${provider}/${upstreamId}`;
}

/**
 * Imports every configured provider's `/models` list into the catalogue, converting USD prices with
 * `CREDITS_PER_USD` exactly (decimal arithmetic, rounded up to the micro-credit).
 *
 * Invariant: a model without a listed price is imported **disabled** — enabling it at price zero would give it
 * away — and reported in `needsPricing` until the operator prices or enables it (`stillUnpriced`). What the operator set by hand (fallbacks and the answer's
 * deadline, the enabled flag of an existing model, an output cap, `reasons`) is kept; listed prices and limits
 * follow the provider, and so does a default `reasons` (the list's `supported_parameters`, else the family).
 */
export async function syncModels(ctx: CatalogueDeps, timeoutMs = ctx.config.UPSTREAM_TIMEOUT_MS): Promise<SyncReport> {
  const report: SyncReport = { providers: [] };
  for (const adapter of ctx.providers.syncable()) {
    const entry = { provider: adapter.name, imported: 0, updated: 0, needsPricing: [] as string[] };
    report.providers.push(entry);
    let listed: UpstreamModel[];
    try {
      listed = (await adapter.listModels?.({ signal: AbortSignal.timeout(timeoutMs) })) ?? [];
    } catch (error) {
      // The deadline's own abort says only "The operation was aborted due to timeout".
      const message =
        (error as Error).name === 'TimeoutError'
          ? `The upstream provider did not answer within ${timeoutMs} ms (UPSTREAM_TIMEOUT_MS).`
          : (error as Error).message;
      Object.assign(entry, { error: message });
      continue;
    }
    for (const upstream of listed) {
      const id = publicId(adapter.name, upstream.id);
      const priced = priceOf(upstream, ctx.config.CREDITS_PER_USD);
      // What the operator set is read with the row locked and written in the same transaction: read once
      // before the list was fetched (which may take minutes), an edit made meanwhile, on this instance or
      // another, was overwritten with the copy (a model the operator priced and enabled went back to disabled).
      const { existed, unpriced } = await ctx.db.transaction().execute(async (trx) => {
        const before = (await getModelForUpdate(trx, ctx.dialect, id)) ?? undefined;
        const saved = await upsertModel(trx, merged(adapter.name, upstream, id, priced, before), ctx.clock.now());
        return { existed: before !== undefined, unpriced: !priced && stillUnpriced(saved) };
      });
      if (existed) entry.updated++;
      else entry.imported++;
      if (unpriced) entry.needsPricing.push(id);
    }
  }
  ctx.models.announceChange();
  return report;
}

/**
 * Whether a model the provider lists without a price still waits for the operator's: disabled, every price 0,
 * as a sync imports it. One the operator priced (disabled or not) or enabled (a free local model, on purpose)
 * keeps what it was given and is not reported again at every sync.
 */
function stillUnpriced(model: CatalogueModel): boolean {
  return !model.enabled && Object.values(model.pricing).every((price) => !price);
}

/**
 * A provider's token count, or undefined (unknown) when the catalogue cannot keep it: past
 * {@link MAX_CATALOGUE_TOKENS}, one absurd entry of a list would fail the whole sync on PostgreSQL and, on SQLite,
 * be stored and make every read of the catalogue fail.
 */
function keptTokens(count: number | undefined): number | undefined {
  return count !== undefined && count <= MAX_CATALOGUE_TOKENS ? count : undefined;
}

/** The catalogue entry of a listed model: the provider's facts, and what the operator set on `before`. */
function merged(
  provider: string,
  upstream: UpstreamModel,
  id: string,
  priced: ModelPricing | null,
  before: CatalogueModel | undefined,
): ModelInput {
  const inputModalities = upstream.inputModalities ?? before?.inputModalities ?? ['text'];
  return {
    id,
    provider,
    upstreamModel: upstream.id,
    name: upstream.name ?? before?.name ?? upstream.id,
    pricing: withKeptPrices(
      priced ?? before?.pricing ?? { prompt: 0, completion: 0, request: 0, second: 0, image: 0 },
      before,
    ),
    contextLength: keptTokens(upstream.contextLength) ?? before?.contextLength ?? null,
    maxOutputTokens: before?.maxOutputTokens ?? keptTokens(upstream.maxOutputTokens) ?? null,
    maxPredictSeconds: before?.maxPredictSeconds ?? null,
    // An operator's budget is kept; an imported vision model gets its family's worst case.
    imageTokens: before?.imageTokens ?? defaultImageTokens(upstream.id, inputModalities),
    imagePrices: before?.imagePrices ?? {},
    inputModalities,
    outputModalities: upstream.outputModalities ?? before?.outputModalities ?? ['text'],
    fallbacks: before?.fallbacks ?? [],
    answerTimeoutMs: before?.answerTimeoutMs ?? null,
    reasons: before?.reasonsByOperator ? before.reasons : defaultReasons(upstream.id, upstream.supportedParameters),
    reasonsByOperator: before?.reasonsByOperator ?? false,
    isTest: before?.isTest ?? false,
    enabled: before ? before.enabled : priced !== null,
  };
}

/**
 * A 1-hour cache-write price the operator set is kept when the provider lists none (OpenRouter lists
 * `input_cache_write_1h` only for providers that price that lifetime apart): a sync must not turn a model's
 * accepted `ttl: "1h"` into a refusal.
 *
 * Money invariant: the kept price follows the listed prompt price it was set against (scaled by the same
 * ratio, rounded up), and is never below the model's other input prices. Kept as it was, a provider's price
 * rise would bill 1-hour writes below what the provider charges for them, even below plain input.
 */
function withKeptPrices(pricing: ModelPricing, before: { pricing: ModelPricing } | undefined): ModelPricing {
  const kept = before?.pricing.cacheWrite1h ?? null;
  if ((pricing.cacheWrite1h ?? null) !== null || kept === null) return pricing;
  const scaled = scaledUp(kept, pricing.prompt, before!.pricing.prompt);
  return { ...pricing, cacheWrite1h: Math.max(scaled, pricing.prompt, pricing.cacheWrite ?? 0) };
}

/** `value × to / from`, rounded up, exact for integer prices; `value` when `from` is not a positive price. */
function scaledUp(value: number, to: number, from: number): number {
  if (!(from > 0) || to === from) return value;
  if ([value, to, from].every(Number.isSafeInteger)) {
    const product = BigInt(value) * BigInt(to);
    return Number((product + BigInt(from) - 1n) / BigInt(from));
  }
  return Math.ceil((value * to) / from);
}

/**
 * The listed USD prices in micro-credits, or null when the provider lists no usable prompt and completion
 * price. A detailed token price that is not listed, or listed unusable (OpenRouter's `-1` for "varies"),
 * stays unset so it falls back to the prompt/completion price: never 0.
 */
function priceOf(upstream: UpstreamModel, creditsPerUsd: number): ModelPricing | null {
  const usd = upstream.usdPricing;
  if (!usd?.prompt || !usd.completion) return null;
  const prompt = usdToMicros(usd.prompt, creditsPerUsd, 1_000_000n);
  const completion = usdToMicros(usd.completion, creditsPerUsd, 1_000_000n);
  if (prompt === null || completion === null) return null;
  const perMillion = (value: string | undefined) => (value ? usdToMicros(value, creditsPerUsd, 1_000_000n) : null);
  return {
    prompt,
    completion,
    cacheRead: perMillion(usd.cacheRead),
    cacheWrite: perMillion(usd.cacheWrite),
    cacheWrite1h: perMillion(usd.cacheWrite1h),
    reasoning: perMillion(usd.reasoning),
    audioInput: perMillion(usd.audioInput),
    audioOutput: perMillion(usd.audioOutput),
    request: usd.request ? (usdToMicros(usd.request, creditsPerUsd, 1n) ?? 0) : 0,
    second: 0,
    image: usd.image ? (usdToMicros(usd.image, creditsPerUsd, 1n) ?? 0) : 0,
    webSearch: usd.webSearch ? (usdToMicros(usd.webSearch, creditsPerUsd, 1n) ?? 0) : 0,
  };
}
