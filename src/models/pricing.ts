import { creditsToMicros, microsToCredits, CREDITS_RULE } from '../platform/money.ts';
import { ApiError } from '../platform/errors.ts';
import type { ModelPricing } from './catalogue.ts';

/** A decimal number as an exact fraction: `digits / 10^scale`. */
interface Decimal {
  digits: bigint;
  scale: number;
}

const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** Parses a decimal text (`"0.0000003"`, `"1.5e-7"`, `"100"`) exactly, with no float in between; null when it is not one. */
export function parseDecimal(text: string): Decimal | null {
  const match = DECIMAL.exec(text.trim());
  if (!match || (match[2] === '' && (match[3] ?? '') === '')) return null;
  const fraction = match[3] ?? '';
  let digits = BigInt((match[2] || '0') + fraction);
  let scale = fraction.length - Number(match[4] ?? 0);
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  if (scale > 60) return null;
  return { digits: match[1] === '-' ? -digits : digits, scale };
}

/**
 * Converts a USD price to integer micro-credits, exactly: `usd × creditsPerUsd × 10^6 × perUnits`, rounded up
 * to the next micro-credit (an imported price never undercharges by rounding). `perUnits` is 1,000,000 for
 * prices per token that the catalogue keeps per 1M tokens, and 1 for prices per call or per image. Null for
 * a price that is negative, not a number, or beyond 2^53 micro-credits (OpenRouter lists `-1` for "varies").
 */
export function usdToMicros(usd: string, creditsPerUsd: number, perUnits: bigint): number | null {
  const price = parseDecimal(usd);
  const rate = parseDecimal(String(creditsPerUsd));
  if (!price || !rate || price.digits < 0n || rate.digits <= 0n) return null;
  const numerator = price.digits * rate.digits * 1_000_000n * perUnits;
  const denominator = 10n ** BigInt(price.scale + rate.scale);
  const micros = (numerator + denominator - 1n) / denominator;
  return micros <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(micros) : null;
}

/** The prices a price list names, in the order the API and the README show them. */
export const PRICE_KEYS = [
  'prompt',
  'completion',
  'cacheRead',
  'cacheWrite',
  'cacheWrite1h',
  'reasoning',
  'audioInput',
  'audioOutput',
  'request',
  'image',
  'second',
  'webSearch',
] as const;

/**
 * The detailed token prices that may be left unset, and the plain price each falls back to. A price that
 * is not set is charged at its fallback, never at 0: a catalogue entry made before a provider priced its
 * cache, or by an operator who priced only prompt and completion, can never give cached or reasoning
 * tokens away.
 */
export const PRICE_FALLBACKS = {
  cacheRead: 'prompt',
  cacheWrite: 'prompt',
  audioInput: 'prompt',
  reasoning: 'completion',
  audioOutput: 'completion',
} as const satisfies Record<string, 'prompt' | 'completion'>;

type FallbackKey = keyof typeof PRICE_FALLBACKS;

/**
 * The prices that may be unset (`null`): the detailed token prices of {@link PRICE_FALLBACKS}, and
 * `cacheWrite1h`, the price of a 1-hour prompt-cache write (Anthropic bills it at 2× the input price, the
 * 5-minute `cacheWrite` at 1.25×). Unset, a model **refuses** `cache_control.ttl: "1h"` (400 naming the
 * price): the gateway cannot know a provider's multiplier, and a guessed price could undercharge. A 1-hour
 * write reported anyway (an upstream that caches longer than asked) is charged at `cacheWrite`.
 */
type NullableKey = FallbackKey | 'cacheWrite1h';

const isNullable = (key: string): key is NullableKey => key in PRICE_FALLBACKS || key === 'cacheWrite1h';

/** The price of `key` in micro-credits, with an unset detailed price resolved to its fallback. */
export function effectivePrice(pricing: ModelPricing, key: keyof ModelPricing): number {
  const value = pricing[key];
  if (value !== null && value !== undefined) return value;
  if (key === 'cacheWrite1h') return effectivePrice(pricing, 'cacheWrite');
  return key in PRICE_FALLBACKS ? pricing[PRICE_FALLBACKS[key as FallbackKey]] : 0;
}

/** Every price in micro-credits, unset detailed prices resolved to their fallbacks. */
export function effectivePricing(pricing: ModelPricing): Required<{ [K in keyof ModelPricing]: number }> {
  return Object.fromEntries(PRICE_KEYS.map((key) => [key, effectivePrice(pricing, key)])) as Required<{
    [K in keyof ModelPricing]: number;
  }>;
}

/** Prices as `GET /api/v1/models` shows them: every price a number, but `cacheWrite1h` null when unset (1-hour caching refused). */
export type PublicPricing = { [K in (typeof PRICE_KEYS)[number]]: K extends 'cacheWrite1h' ? number | null : number };

/**
 * Catalogue prices (micro-credits) as `GET /api/v1/models` shows them (credits): every price, an unset detailed
 * price shown as the price it falls back to (what the caller pays); an unset `cacheWrite1h` is null (the model
 * refuses 1-hour cache writes).
 */
export function pricingToCredits(pricing: ModelPricing): PublicPricing {
  const effective = effectivePricing(pricing);
  return Object.fromEntries(
    PRICE_KEYS.map((key) => [
      key,
      key === 'cacheWrite1h' && (pricing.cacheWrite1h ?? null) === null ? null : microsToCredits(effective[key]),
    ]),
  ) as PublicPricing;
}

/** Prices as the operator API shows them: credits, an unset detailed price `null`. */
export type AdminPricing = { [K in (typeof PRICE_KEYS)[number]]: K extends NullableKey ? number | null : number };

/** Catalogue prices as the operator API shows them (credits): an unset detailed price is `null` (it falls back). */
export function pricingToAdminCredits(pricing: ModelPricing): AdminPricing {
  return Object.fromEntries(
    PRICE_KEYS.map((key) => {
      const value = pricing[key];
      return [key, value === null || value === undefined ? (isNullable(key) ? null : 0) : microsToCredits(value)];
    }),
  ) as AdminPricing;
}

/**
 * Prices given in credits (the admin API) as micro-credits; 400 for a negative price or one with more than
 * 6 decimals. A plain price left out is 0; a detailed price left out or `null` is unset (it falls back).
 */
export function pricingFromCredits(
  pricing: Partial<Record<keyof ModelPricing, number | null>>,
): Required<ModelPricing> {
  const out: Required<ModelPricing> = {
    prompt: 0,
    completion: 0,
    cacheRead: null,
    cacheWrite: null,
    cacheWrite1h: null,
    reasoning: null,
    audioInput: null,
    audioOutput: null,
    request: 0,
    image: 0,
    second: 0,
    webSearch: 0,
  };
  for (const key of PRICE_KEYS) {
    const value = pricing[key];
    if (value === undefined || value === null) continue;
    const micros = creditsToMicros(value);
    if (micros === null || micros < 0)
      throw new ApiError('INVALID_REQUEST', `pricing.${key} must be a non-negative number of credits ${CREDITS_RULE}.`);
    out[key] = micros;
  }
  return out;
}

/**
 * What a call used, in the parts the price list prices. The token parts are **disjoint**: each token the
 * provider counted is in exactly one of them, so the cost is a plain sum and nothing is charged twice
 * (providers differ on which of their counts include which; `gateway/chat-usage.ts` maps them onto these parts).
 */
export interface UsageBreakdown {
  /** Input tokens at the plain prompt price: the input less cache reads, cache writes and audio input. */
  prompt: number;
  /** Input tokens read from the provider's prompt cache. */
  cachedRead: number;
  /** Input tokens written to the provider's prompt cache for 5 minutes (its default lifetime). */
  cacheWrite: number;
  /** Input tokens written to the provider's prompt cache for 1 hour (Anthropic's `ttl: "1h"`), priced at `cacheWrite1h`. */
  cacheWrite1h: number;
  /** Input audio tokens (not cached). */
  audioIn: number;
  /** Output tokens at the plain completion price: the output less reasoning and audio output. */
  completion: number;
  /** Reasoning (thinking) tokens. */
  reasoning: number;
  /** Output audio tokens. */
  audioOut: number;
  /** Calls (chat: 1). */
  requests: number;
  /** Output images. */
  images: number;
  /** Seconds of provider compute or of audio; fractions are charged to the millisecond. */
  seconds: number;
  /** Web searches the provider ran for the call. */
  webSearches: number;
}

/** All input tokens of a breakdown (what OpenAI calls `prompt_tokens`). */
export function inputTokens(
  usage: Pick<UsageBreakdown, 'prompt' | 'cachedRead' | 'cacheWrite' | 'audioIn'> & { cacheWrite1h?: number },
): number {
  return usage.prompt + usage.cachedRead + usage.cacheWrite + (usage.cacheWrite1h ?? 0) + usage.audioIn;
}

/** All output tokens of a breakdown (what OpenAI calls `completion_tokens`). */
export function outputTokens(usage: Pick<UsageBreakdown, 'completion' | 'reasoning' | 'audioOut'>): number {
  return usage.completion + usage.reasoning + usage.audioOut;
}

/**
 * What {@link costMicros} accepts: any parts of a {@link UsageBreakdown}, plus the older `promptTokens` and
 * `completionTokens`, which are plain prompt and completion tokens (added to `prompt` and `completion`).
 */
export type CostUsage = Partial<UsageBreakdown> & { promptTokens?: number; completionTokens?: number };

/** A part as a BigInt; a count that is not a non-negative safe integer is a programming error here (usage is sanitized before it is priced). */
function count(value: number | undefined, name: string): bigint {
  const n = value ?? 0;
  if (!Number.isSafeInteger(n) || n < 0)
    throw new RangeError(`usage.${name} must be a non-negative integer, got ${n}.`);
  return BigInt(n);
}

const TOKEN_PRICES: Array<[keyof UsageBreakdown, keyof ModelPricing]> = [
  ['prompt', 'prompt'],
  ['cachedRead', 'cacheRead'],
  ['cacheWrite', 'cacheWrite'],
  ['cacheWrite1h', 'cacheWrite1h'],
  ['audioIn', 'audioInput'],
  ['completion', 'completion'],
  ['reasoning', 'reasoning'],
  ['audioOut', 'audioOutput'],
];

/**
 * The cost in micro-credits of a call that used `usage`: each token part at its price per 1M tokens (an
 * unset detailed price at its fallback), seconds to the millisecond, plus per-call, per-image and
 * per-search prices. Exact integer arithmetic; the sum is rounded up to the next micro-credit once.
 */
export function costMicros(pricing: ModelPricing, usage: CostUsage): number {
  return costMicrosInSafeNumbers(pricing, usage) ?? costMicrosInBigInts(pricing, usage);
}

/**
 * {@link costMicros} in plain numbers, or undefined when an input is not a non-negative safe integer (the
 * BigInt path then throws its error) or a product or sum leaves the safe integers. Why: the BigInt path
 * allocated ~2 KB per call, twice per gateway call. Exact: every product and sum is checked against
 * `Number.MAX_SAFE_INTEGER` after it is made (a result beyond 2^53 cannot round back below it, and one within
 * is exact), and the division is corrected by its remainder.
 */
function costMicrosInSafeNumbers(pricing: ModelPricing, usage: CostUsage): number | undefined {
  // Written without closures or per-call arrays: this path exists not to allocate.
  let nanos = 0;
  for (let i = 0; i < TOKEN_PRICES.length; i++) {
    const term = safeProduct(usage[TOKEN_PRICES[i]![0]], effectivePrice(pricing, TOKEN_PRICES[i]![1]), 1_000);
    if (term < 0 || (nanos += term) > Number.MAX_SAFE_INTEGER) return undefined;
  }
  const prompt = safeProduct(usage.promptTokens, pricing.prompt, 1_000);
  const completion = safeProduct(usage.completionTokens, pricing.completion, 1_000);
  if (prompt < 0 || completion < 0 || (nanos += prompt + completion) > Number.MAX_SAFE_INTEGER) return undefined;
  const seconds = usage.seconds ?? 0;
  if (!Number.isFinite(seconds) || seconds < 0) return undefined;
  const timed = safeProduct(Math.ceil(seconds * 1000), pricing.second, 1_000_000);
  if (timed < 0 || (nanos += timed) > Number.MAX_SAFE_INTEGER - 2_000_000_000) return undefined;
  const requests = safeProduct(usage.requests, pricing.request, 1);
  const images = safeProduct(usage.images, pricing.image, 1);
  const searches = safeProduct(usage.webSearches, pricing.webSearch ?? 0, 1);
  if (requests < 0 || images < 0 || searches < 0) return undefined;
  let quotient = Math.floor(nanos / 1_000_000_000);
  let remainder = nanos - quotient * 1_000_000_000;
  if (remainder < 0) ((quotient -= 1), (remainder += 1_000_000_000));
  else if (remainder >= 1_000_000_000) ((quotient += 1), (remainder -= 1_000_000_000));
  const total = quotient + (remainder > 0 ? 1 : 0) + requests + images + searches;
  return total <= Number.MAX_SAFE_INTEGER ? total : undefined;
}

/** `count × price × scale` when all are non-negative safe integers and so is the product, else -1. */
function safeProduct(count: number | undefined, price: number, scale: number): number {
  const n = count ?? 0;
  if (!isCount(n) || !isCount(price)) return -1;
  const product = n * price * scale;
  return n * price <= Number.MAX_SAFE_INTEGER && product <= Number.MAX_SAFE_INTEGER ? product : -1;
}

const isCount = (n: number) => Number.isSafeInteger(n) && n >= 0;

/** {@link costMicros} in BigInts: any input, and the errors for invalid ones. Exported for the tests. */
export function costMicrosInBigInts(pricing: ModelPricing, usage: CostUsage): number {
  // Everything is summed in nano-micro-credits (10^-9 micro-credits): tokens are priced per 10^6, seconds per 10^3.
  let nanos = 0n;
  for (const [part, price] of TOKEN_PRICES)
    nanos += count(usage[part], part) * BigInt(effectivePrice(pricing, price)) * 1_000n;
  nanos += count(usage.promptTokens, 'promptTokens') * BigInt(pricing.prompt) * 1_000n;
  nanos += count(usage.completionTokens, 'completionTokens') * BigInt(pricing.completion) * 1_000n;
  const seconds = usage.seconds ?? 0;
  if (!Number.isFinite(seconds) || seconds < 0)
    throw new RangeError(`usage.seconds must be a non-negative number, got ${seconds}.`);
  nanos += BigInt(Math.ceil(seconds * 1000)) * BigInt(pricing.second) * 1_000_000n;
  const units =
    count(usage.requests, 'requests') * BigInt(pricing.request) +
    count(usage.images, 'images') * BigInt(pricing.image) +
    count(usage.webSearches, 'webSearches') * BigInt(pricing.webSearch ?? 0);
  const total = (nanos + 999_999_999n) / 1_000_000_000n + units;
  if (total > BigInt(Number.MAX_SAFE_INTEGER))
    throw new ApiError('INVALID_REQUEST', 'The request would cost more than can be represented.');
  return Number(total);
}

/**
 * The most a call with these counts can cost whatever the provider's details turn out to be: every input
 * token at the highest input price (prompt, cache read/write, audio input) and every output token at the
 * highest output price (completion, reasoning, audio output). A hold computed with this bounds the charge
 * even when the provider reports cache writes or reasoning priced above the plain prices. `longCache`: the
 * call asks for a 1-hour prompt cache, so its input may be written at `cacheWrite1h` too.
 */
export function worstCaseCostMicros(
  pricing: ModelPricing,
  usage: {
    promptTokens?: number;
    completionTokens?: number;
    requests?: number;
    seconds?: number;
    images?: number;
    webSearches?: number;
  },
  longCache = false,
): number {
  const highestInput = Math.max(
    ...(['prompt', 'cacheRead', 'cacheWrite', 'audioInput'] as const).map((key) => effectivePrice(pricing, key)),
    longCache ? effectivePrice(pricing, 'cacheWrite1h') : 0,
  );
  const highestOutput = Math.max(
    ...(['completion', 'reasoning', 'audioOutput'] as const).map((key) => effectivePrice(pricing, key)),
  );
  return costMicros({ ...pricing, prompt: highestInput, completion: highestOutput }, usage);
}
