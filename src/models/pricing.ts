import { creditsToMicros, microsToCredits } from '../platform/money.ts';
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

/** Catalogue prices (micro-credits) as the API shows them (credits). */
export function pricingToCredits(pricing: ModelPricing): Record<keyof ModelPricing, number> {
  return {
    prompt: microsToCredits(pricing.prompt),
    completion: microsToCredits(pricing.completion),
    request: microsToCredits(pricing.request),
    second: microsToCredits(pricing.second),
    image: microsToCredits(pricing.image),
  };
}

/** Prices given in credits (the admin API) as micro-credits; 400 for a negative price or one with more than 6 decimals. */
export function pricingFromCredits(pricing: Partial<Record<keyof ModelPricing, number>>): ModelPricing {
  const out = { prompt: 0, completion: 0, request: 0, second: 0, image: 0 };
  for (const key of Object.keys(out) as Array<keyof ModelPricing>) {
    const value = pricing[key];
    if (value === undefined) continue;
    const micros = creditsToMicros(value);
    if (micros === null || micros < 0) throw new ApiError('INVALID_REQUEST', `pricing.${key} must be a non-negative number of credits with at most 6 decimals.`);
    out[key] = micros;
  }
  return out;
}

/** The cost in micro-credits of a call with these token counts and units, rounded up to the next micro-credit. */
export function costMicros(pricing: ModelPricing, usage: { promptTokens?: number; completionTokens?: number; requests?: number; seconds?: number; images?: number }): number {
  const perMillion = BigInt(usage.promptTokens ?? 0) * BigInt(pricing.prompt) + BigInt(usage.completionTokens ?? 0) * BigInt(pricing.completion);
  const tokenCost = (perMillion + 999_999n) / 1_000_000n;
  const secondsCost = BigInt(Math.ceil((usage.seconds ?? 0) * 1000)) * BigInt(pricing.second);
  const total = tokenCost + (secondsCost + 999n) / 1000n + BigInt(usage.requests ?? 0) * BigInt(pricing.request) + BigInt(usage.images ?? 0) * BigInt(pricing.image);
  if (total > BigInt(Number.MAX_SAFE_INTEGER)) throw new ApiError('INVALID_REQUEST', 'The request would cost more than can be represented.');
  return Number(total);
}
