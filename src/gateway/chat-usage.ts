import { microsToCredits } from '../platform/money.ts';
import type { ModelPricing } from '../models/catalogue.ts';
import { costMicros, inputTokens, outputTokens, type UsageBreakdown } from '../models/pricing.ts';
import type { TokenUsage } from '../providers/types.ts';
import type { CanonicalUsage } from './canonical.ts';

/**
 * Reads a chat call's usage as the upstream reported it (OpenAI's shape; the Anthropic adapter translates
 * to it) into the price model's disjoint parts, and writes the usage the client sees.
 *
 * Which upstream counts include which (so nothing is charged twice):
 * - `prompt_tokens` is **all** input: OpenAI's includes `prompt_tokens_details.cached_tokens` and
 *   `audio_tokens`; OpenRouter's includes its `cached_tokens` and `cache_write_tokens`; the Anthropic adapter
 *   sums `input_tokens` (which excludes the cache) + `cache_read_input_tokens` + `cache_creation_input_tokens`.
 *   The plain-prompt part is what remains after cache reads, cache writes and audio are taken out.
 * - `completion_tokens` is **all** output: `completion_tokens_details.reasoning_tokens` and `audio_tokens`
 *   are inside it; the plain-completion part is the rest. (An upstream whose `total_tokens` shows that its
 *   reasoning is outside `completion_tokens`, as Gemini's OpenAI endpoint does, has it added instead.)
 * - DeepSeek's `prompt_cache_hit_tokens` are its cached reads (inside `prompt_tokens`).
 * - `cache_write_tokens` are the writes of every cache lifetime; `cache_write_1h_tokens` (the Anthropic adapter's
 *   restatement of `cache_creation.ephemeral_1h_input_tokens`) are the 1-hour ones among them, billed at
 *   `cacheWrite1h`, the rest at `cacheWrite`. An upstream that gives no such split (OpenRouter) while the call
 *   asked for a 1-hour cache has all its writes billed at `cacheWrite1h`: never less than it may have cost.
 *
 * Security invariant (the upstream is not trusted as sent): every count is read through {@link tokenCount}
 * — a negative, fractional, non-numeric or absurd number can never make the settle throw (which left the
 * hold to expire uncharged) nor lower the charge below what the call visibly used. An unusable total falls
 * back to our own count; a detail larger than what is left of its total is clamped to it; an unusable
 * detail is 0, so its tokens are charged at the plain price (never less).
 */

/** No model's context comes near this: a larger reported count is cut to it (the hold caps the money anyway). */
export const MAX_REPORTED_TOKENS = 100_000_000;

/** A count as reported: a non-negative finite number, rounded up to an integer and capped; null when unusable. */
export function tokenCount(value: unknown): number | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return null;
  return Math.min(Math.ceil(value), MAX_REPORTED_TOKENS);
}

/** What the gateway counted itself: the prompt up front, the output only when a report needs it (tokenizing costs time). */
export interface OwnCount {
  prompt: number;
  output: () => number;
}

const objectOr = (value: unknown): Record<string, unknown> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/** A total: the reported one when usable, else ours; a reported 0 where we counted some is not believed either. */
function total(reported: unknown, own: () => number): number {
  const count = tokenCount(reported);
  if (count !== null && count > 0) return count;
  const counted = own();
  return count === 0 && counted === 0 ? 0 : Math.min(counted, MAX_REPORTED_TOKENS);
}

/**
 * The breakdown of one chat call (one request) from the upstream's report, or from our own counts when it sent
 * none. `longCache`: the call asked for a 1-hour prompt cache (its unsplit cache writes are billed as 1-hour ones).
 */
export function chatBreakdown(
  reported: TokenUsage | null | undefined,
  own: OwnCount,
  longCache = false,
): UsageBreakdown {
  const usage = objectOr(reported);
  const promptDetails = objectOr(usage.prompt_tokens_details);
  const completionDetails = objectOr(usage.completion_tokens_details);
  const promptTotal = reported ? total(usage.prompt_tokens, () => own.prompt) : own.prompt;
  let completionTotal = reported ? total(usage.completion_tokens, own.output) : own.output();
  // Some OpenAI-compatible upstreams (Gemini's) count reasoning outside `completion_tokens`; their
  // `total_tokens` then says so exactly, and the reasoning is added rather than taken out of the completion.
  // (Checked on the reported completion: Gemini may say 0 there for a call that only thought.)
  const reportedReasoning = tokenCount(completionDetails.reasoning_tokens) ?? 0;
  const reportedCompletion = tokenCount(usage.completion_tokens);
  if (
    reportedReasoning > 0 &&
    reportedCompletion !== null &&
    tokenCount(usage.total_tokens) === promptTotal + reportedCompletion + reportedReasoning
  ) {
    completionTotal = Math.min(completionTotal + reportedReasoning, MAX_REPORTED_TOKENS);
  }
  let inputLeft = promptTotal;
  const take = (value: unknown, left: number) => Math.min(tokenCount(value) ?? 0, left);
  // DeepSeek reports its cache hits as `prompt_cache_hit_tokens` (inside `prompt_tokens`), not as a detail.
  const cachedRead = take(promptDetails.cached_tokens ?? usage.prompt_cache_hit_tokens, inputLeft);
  inputLeft -= cachedRead;
  const cacheWrites = take(promptDetails.cache_write_tokens, inputLeft);
  inputLeft -= cacheWrites;
  // The 1-hour part: as split by the upstream; all of them when it gave no usable split and the call asked for 1 hour.
  const split = tokenCount(promptDetails.cache_write_1h_tokens);
  const cacheWrite1h = split !== null ? Math.min(split, cacheWrites) : longCache ? cacheWrites : 0;
  const cacheWrite = cacheWrites - cacheWrite1h;
  const audioIn = take(promptDetails.audio_tokens, inputLeft);
  inputLeft -= audioIn;
  const reasoning = take(completionDetails.reasoning_tokens, completionTotal);
  const audioOut = take(completionDetails.audio_tokens, completionTotal - reasoning);
  const webSearches = tokenCount(objectOr(usage.server_tool_use).web_search_requests) ?? 0;
  return {
    prompt: inputLeft,
    cachedRead,
    cacheWrite,
    cacheWrite1h,
    audioIn,
    completion: completionTotal - reasoning - audioOut,
    reasoning,
    audioOut,
    requests: 1,
    images: 0,
    seconds: 0,
    webSearches,
  };
}

/** A chat call's usage priced: its parts, what it is charged (its cost, capped at what was held) and the usage the client sees. */
export interface ChatAccount {
  breakdown: UsageBreakdown;
  /** Micro-credits the usage costs, rounded up to the micro-credit: what the meter bills, above the hold or not. */
  cost: number;
  /** Micro-credits charged: the cost, or the hold when the cost is above it. */
  charge: number;
  /** The answer's `usage`: OpenAI's counts and details, OpenRouter's `cache_write_tokens` and `cost` (credits). */
  usage: TokenUsage;
}

/**
 * Prices a chat call. `held` caps the charge (a free call holds nothing and costs nothing); the cost is
 * computed in BigInt and never throws for a breakdown read by {@link chatBreakdown}.
 */
export function accountChat(
  pricing: ModelPricing,
  held: number,
  reported: TokenUsage | null | undefined,
  own: OwnCount,
  longCache = false,
): ChatAccount {
  const breakdown = chatBreakdown(reported, own, longCache);
  let cost: number;
  try {
    cost = costMicros(pricing, breakdown);
  } catch {
    // Beyond 2^53 micro-credits: far above any hold.
    cost = Number.MAX_SAFE_INTEGER;
  }
  const charge = Math.min(cost, held);
  return { breakdown, cost, charge, usage: answerUsage(reported, breakdown, charge) };
}

/**
 * The `usage` object of an answer: the upstream's own extra fields kept (OpenAI's prediction counts…),
 * every count replaced by the sanitized one we billed, `cost` in credits replaced by ours, and OpenRouter's
 * `cost_details` (the operator's upstream cost) dropped.
 */
function answerUsage(reported: TokenUsage | null | undefined, parts: UsageBreakdown, charge: number): TokenUsage {
  const { cost: _upstreamCost, cost_details: _upstreamDetails, is_byok: _byok, ...rest } = objectOr(reported);
  const promptTokens = inputTokens(parts);
  const completionTokens = outputTokens(parts);
  return {
    ...rest,
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: {
      ...promptDetailsOf(rest, parts.cacheWrite1h),
      cached_tokens: parts.cachedRead,
      cache_write_tokens: parts.cacheWrite + parts.cacheWrite1h,
      audio_tokens: parts.audioIn,
    },
    completion_tokens_details: {
      ...objectOr(rest.completion_tokens_details),
      reasoning_tokens: parts.reasoning,
      audio_tokens: parts.audioOut,
    },
    cost: microsToCredits(charge),
  };
}

/**
 * A billed canonical usage (the pipeline's) as OpenAI's `usage` object, exactly as {@link answerUsage} writes
 * it: the upstream's own extra fields kept, every count the sanitized one billed, `cost` ours.
 */
export function openAiUsageOf(usage: CanonicalUsage): TokenUsage {
  const { cost: _upstreamCost, cost_details: _upstreamDetails, is_byok: _byok, ...rest } = objectOr(usage.reported);
  return {
    ...rest,
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: {
      ...promptDetailsOf(rest, usage.cacheWrite1hTokens ?? 0),
      cached_tokens: usage.cacheReadTokens ?? 0,
      cache_write_tokens: usage.cacheWriteTokens ?? 0,
      audio_tokens: usage.audioInputTokens ?? 0,
    },
    completion_tokens_details: {
      ...objectOr(rest.completion_tokens_details),
      reasoning_tokens: usage.reasoningTokens ?? 0,
      audio_tokens: usage.audioOutputTokens ?? 0,
    },
    cost: usage.cost ?? 0,
  };
}

/**
 * The upstream's own prompt details, its `cache_write_1h_tokens` replaced by the billed count (shown only when
 * some were billed: the 1-hour writes among `cache_write_tokens`).
 */
function promptDetailsOf(usage: Record<string, unknown>, cacheWrite1h: number): Record<string, unknown> {
  const { cache_write_1h_tokens: _reported, ...details } = objectOr(usage.prompt_tokens_details);
  return cacheWrite1h > 0 ? { ...details, cache_write_1h_tokens: cacheWrite1h } : details;
}

/**
 * The parts of a call's usage that its usage record's prompt and completion counts do not show (cache
 * reads and writes, audio, reasoning, web searches), for the record's `details`; undefined for a plain call,
 * so the common case writes nothing more. `cacheWrite` is the 5-minute writes, `cacheWrite1h` (present when
 * some) the 1-hour ones.
 */
export function recordedDetails(breakdown: UsageBreakdown): Record<string, number> | undefined {
  const { cachedRead, cacheWrite, cacheWrite1h, audioIn, reasoning, audioOut, webSearches } = breakdown;
  const details = { cachedRead, cacheWrite, audioIn, reasoning, audioOut, webSearches };
  // `cacheWrite1h` only when there are some: a record of a call without 1-hour writes stays as it was.
  const all = cacheWrite1h > 0 ? { ...details, cacheWrite1h } : details;
  return Object.values(all).some((count) => count > 0) ? all : undefined;
}
