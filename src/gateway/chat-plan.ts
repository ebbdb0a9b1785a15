import type { CatalogueModel } from '../models/catalogue.ts';
import { worstCaseCostMicros } from '../models/pricing.ts';
import type { ChatBody } from '../providers/types.ts';

/** The output cap when neither the request, the model's cap nor its context length gives one. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4_096;

/**
 * Counted prompt tokens are multiplied by this (plus a constant) for the hold: providers tokenize
 * differently from our o200k count, and a hold smaller than the real cost would undercharge.
 */
const PROMPT_MARGIN_NUMERATOR = 5n;
const PROMPT_MARGIN_DENOMINATOR = 4n;
const PROMPT_MARGIN_TOKENS = 16;

/** The chat request fields the gateway reads; every other field passes through untouched. */
export interface ChatRequest {
  model: string;
  messages: unknown[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean; [k: string]: unknown } | null;
  max_tokens?: number;
  max_completion_tokens?: number;
  n?: number;
  [field: string]: unknown;
}

/** The output cap for one model: the request's, clamped to the model's cap or what its context leaves. */
export function outputCap(request: ChatRequest, model: CatalogueModel, promptTokens: number): number {
  const asked = request.max_completion_tokens ?? request.max_tokens;
  const contextLeft = model.contextLength ? Math.max(1, model.contextLength - promptTokens) : null;
  const modelCap = model.maxOutputTokens !== null ? Math.min(model.maxOutputTokens, contextLeft ?? Infinity) : contextLeft;
  if (asked !== undefined) return modelCap !== null ? Math.min(asked, modelCap) : asked;
  return modelCap ?? DEFAULT_MAX_OUTPUT_TOKENS;
}

/**
 * The body sent to one model's upstream: the client's body with the upstream model and the output cap.
 *
 * Invariant: the cap the hold was computed with is the cap the upstream receives, so the hold truly bounds
 * the completion. The client's own field name is kept; otherwise OpenAI gets `max_completion_tokens` (its
 * reasoning models refuse `max_tokens`) and every other provider `max_tokens`.
 */
export function upstreamChatBody(request: ChatRequest, model: CatalogueModel, promptTokens: number, stream: boolean): ChatBody {
  const cap = outputCap(request, model, promptTokens);
  const body: ChatBody = { ...request, model: model.upstreamModel };
  const field = request.max_completion_tokens !== undefined || (request.max_tokens === undefined && model.provider === 'openai') ? 'max_completion_tokens' : 'max_tokens';
  delete body.max_tokens;
  delete body.max_completion_tokens;
  body[field] = cap;
  if (stream) {
    body.stream = true;
    // Usage is always asked for: it is what the call is billed on. The client sees it only if it asked.
    body.stream_options = { ...(request.stream_options ?? {}), include_usage: true };
  } else {
    delete body.stream_options;
  }
  return body;
}

/** Prompt tokens the hold assumes: the counted tokens with the tokenizer margin. */
export function worstPromptTokens(promptTokens: number): number {
  return Number((BigInt(promptTokens) * PROMPT_MARGIN_NUMERATOR + PROMPT_MARGIN_DENOMINATOR - 1n) / PROMPT_MARGIN_DENOMINATOR) + PROMPT_MARGIN_TOKENS;
}

/** The most a chat call can cost on any of its candidate models, in micro-credits. */
export function chatWorstCase(request: ChatRequest, candidates: CatalogueModel[], promptTokens: number): number {
  const choices = request.n ?? 1;
  let worst = 0;
  for (const model of candidates) {
    const cost = worstCaseCostMicros(model.pricing, { promptTokens: worstPromptTokens(promptTokens), completionTokens: outputCap(request, model, promptTokens) * choices, requests: 1 });
    worst = Math.max(worst, cost);
  }
  return worst;
}
