import type { CatalogueModel } from '../models/catalogue.ts';
import { worstCaseCostMicros } from '../models/pricing.ts';
import { ApiError } from '../platform/errors.ts';
import { countTextTokens } from '../providers/tokens.ts';
import { longCacheRefusal } from './long-cache.ts';
import type { CanonicalCall, CanonicalPart } from './canonical.ts';

/** The output cap when neither the request, the model's cap nor its context length gives one. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4_096;

/**
 * Counted prompt tokens are multiplied by this (plus a constant) for the hold: providers tokenize
 * differently from our o200k count, and a hold smaller than the real cost would undercharge.
 */
const PROMPT_MARGIN_NUMERATOR = 5n;
const PROMPT_MARGIN_DENOMINATOR = 4n;
const PROMPT_MARGIN_TOKENS = 16;

/** The OpenAI chat request fields the gateway reads; the others pass through when on the provider's allow-list. */
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

/**
 * What the gateway knows of a call before it holds: the models that may answer it, its counted text
 * tokens, its image parts and its predicted-output tokens, and the output ceiling it can afford (set only
 * when the full cap is not affordable; see `affordable.ts`).
 */
export interface ChatPlan {
  /** The model asked for, then the fallbacks that accept this request (its fields, its images). */
  candidates: CatalogueModel[];
  /** Counted text tokens of the prompt (images apart). */
  promptTokens: number;
  /** Image parts in the messages. */
  images: number;
  /** Tokens of `prediction.content`: OpenAI bills rejected predicted tokens as output, beyond the cap. */
  predictionTokens: number;
  /** The lowered output cap when the full one is not affordable; null: the request's or the model's cap. */
  ceiling: number | null;
  /** The call asks for a 1-hour prompt cache: its input is held at the highest input price `cacheWrite1h` included. */
  longCache?: boolean;
  /**
   * The call carries a document whose input tokens only the model's context bounds (a PDF, a text document with
   * citations: see {@link documentHeldAtContext}): its input is held at the model's whole context.
   */
  wholeContext?: boolean;
}

/** A plan for any protocol's call: the chat plan plus the client's own output cap and its number of choices. */
export interface CallPlan extends ChatPlan {
  /** The output cap the client set (never lowered); null: the model's cap, lowered to what the payer can afford. */
  asked: number | null;
  /** Answers asked for (OpenAI's `n`); each may produce the whole cap. */
  choices: number;
  /** The server-side web searches the call allows (the canonical call's `webSearch`): held in full, see {@link callWorstCase}. */
  webSearch?: { maxUses: number; inputTokensPerUse: number };
}

/** The plan of an OpenAI chat request (its `max_tokens`/`max_completion_tokens` and `n`). */
export function chatCallPlan(request: ChatRequest, plan: ChatPlan): CallPlan {
  return { ...plan, asked: request.max_completion_tokens ?? request.max_tokens ?? null, choices: request.n ?? 1 };
}

/**
 * Plans a call of any protocol on the model asked for and its fallbacks: 400 `TOO_MANY_IMAGES` past
 * `maxImages` image parts, 400 `IMAGE_INPUT_UNSUPPORTED` when the model asked for has no image-token budget, and the
 * protocol's own refusal of a model (`refuses`: a native field its provider may not receive), answered for
 * the model asked for and leaving out a fallback. `promptTokens` is the counted prompt (system, messages,
 * tools, response format; images apart).
 *
 * Security invariant: everything in the call that can make the upstream charge more is either counted into
 * the plan (text, tools, images at each model's budget, documents at its context, predicted output, every
 * choice of an OpenAI `n`) or refused here (or by the protocol's parser and `refuses`), before any hold is
 * placed, so the hold computed from the plan bounds what the call can cost.
 */
export function planCall(
  call: CanonicalCall,
  candidates: CatalogueModel[],
  promptTokens: number,
  maxImages: number,
  refuses?: (model: CatalogueModel) => ApiError | null,
): CallPlan {
  let images = 0;
  for (const message of [{ content: call.system }, ...call.messages])
    for (const part of message.content) if (part.type === 'image') images++;
  if (images > maxImages) {
    throw new ApiError(
      'TOO_MANY_IMAGES',
      `This request has ${images} image parts; at most ${maxImages} are accepted per request (MAX_IMAGES_PER_REQUEST).`,
      { details: { param: 'messages', images, maxImages } },
    );
  }
  const held = [call.system, ...call.messages.map((message) => message.content)].flat().find(documentHeldAtContext);
  const wholeContext = held !== undefined;
  const [model] = candidates;
  if (wholeContext && model.contextLength === null) {
    // Named by its path where the protocol knows it (chat's file part, Responses' input_file), else `messages`.
    const param = (held.type === 'document' && held.param) || 'messages';
    const at = param === 'messages' ? '' : `${param}: `;
    throw new ApiError(
      'UNSUPPORTED_PARAMETER',
      `${at}The model "${model.id}" states no context length in the catalogue, which is the only bound of what a PDF (or a document with citations) costs; send it to a model with a context length, or ask the operator to set this one's.`,
      { details: { param } },
    );
  }
  if (images > 0 && model.imageTokens === null) {
    throw new ApiError(
      'IMAGE_INPUT_UNSUPPORTED',
      `The model "${model.id}" does not accept image parts (it has no image-token budget in the catalogue); send them to a vision model, or ask the operator to set the model's imageTokens.`,
      { details: { param: 'messages' } },
    );
  }
  const refusal = refuses?.(model);
  if (refusal) throw refusal;
  const longCache = call.longCache;
  if (longCache !== undefined) {
    const unpriced = longCacheRefusal(model, longCache);
    if (unpriced) throw unpriced;
  }
  const accepting = candidates.filter(
    (m) =>
      (images === 0 || m.imageTokens !== null) &&
      (!wholeContext || m.contextLength !== null) &&
      (!refuses || refuses(m) === null) &&
      (longCache === undefined || longCacheRefusal(m, longCache) === null),
  );
  // OpenAI chat's `n` and array predictions are read from its own body: the canonical call has no word for them.
  const chat = call.native?.protocol === 'openai-chat' ? (call.native.body as ChatRequest) : null;
  const predictionTokens = chat
    ? countPredictionTokens(chat.prediction)
    : call.prediction !== undefined
      ? countTextTokens(call.prediction)
      : 0;
  const choices = call.choices ?? (typeof chat?.n === 'number' ? chat.n : 1);
  return {
    candidates: accepting,
    promptTokens,
    images,
    predictionTokens,
    ceiling: null,
    asked: call.maxOutputTokens,
    choices,
    ...(longCache !== undefined ? { longCache: true } : {}),
    ...(wholeContext ? { wholeContext: true } : {}),
    ...(call.webSearch ? { webSearch: call.webSearch } : {}),
  };
}

/**
 * Whether a part is a document held at the model's whole context rather than counted.
 *
 * Why the context, and not the count of a PDF's base64 text (chat's rule for its `file` parts once, which
 * crushed the output cap to 1 token when that count passed the context): Anthropic (and
 * OpenAI) bill a PDF as each page's extracted text plus each page as an image (~1,500–3,000 text tokens and up to
 * ~1,600 image tokens a page, at most 100 pages), and neither is bounded by the file's bytes: a content stream
 * compressed with Flate expands a thousandfold, a font's ToUnicode map turns one byte into a long string, and a
 * page of a few bytes is still an image of ~1,600 tokens. What always bounds the input is the model's context
 * window: a call whose input exceeds it is refused by the upstream, and billed nothing. A URL document's size is
 * unknowable before the call, and a text document with citations is chunked into sentences with instructions added
 * by Anthropic (uncounted here): both are held the same way.
 */
export function documentHeldAtContext(part: CanonicalPart): boolean {
  return part.type === 'document' && (part.source.type === 'pdf' || part.citations === true);
}

/** Tokens of an OpenAI `prediction` (`{ type: "content", content: string | text parts }`); 0 when absent. */
export function countPredictionTokens(prediction: unknown): number {
  if (prediction === undefined || prediction === null) return 0;
  const content = (prediction as { content?: unknown }).content;
  if (typeof content === 'string') return countTextTokens(content);
  if (Array.isArray(content))
    return content.reduce(
      (sum: number, part: any) =>
        sum + countTextTokens(typeof part?.text === 'string' ? part.text : JSON.stringify(part ?? '')),
      0,
    );
  return countTextTokens(JSON.stringify(prediction));
}

/**
 * Prompt tokens of the plan on one model: the counted text plus each image at the model's budget; a call with a
 * document held at the context ({@link documentHeldAtContext}) at least the model's context (its own count of a
 * call whose upstream reports no usage).
 */
export function planPromptTokens(plan: ChatPlan, model: CatalogueModel): number {
  const counted = countedPromptTokens(plan, model);
  return plan.wholeContext && model.contextLength !== null ? Math.max(counted, model.contextLength) : counted;
}

/**
 * The counted text plus each image at the model's budget (documents held at the context apart): what the gateway
 * knows of a prompt before the upstream reports, without the context a PDF is held at (a stream shows it before
 * that report: Anthropic's `message_start`).
 */
export function countedPromptTokens(plan: ChatPlan, model: CatalogueModel): number {
  return plan.promptTokens + plan.images * (model.imageTokens ?? 0);
}

/**
 * The output cap for one model: the client's, clamped to the model's cap or what its context leaves, and to
 * the plan's affordable ceiling when the client set none.
 */
export function callOutputCap(plan: CallPlan, model: CatalogueModel): number {
  // A document held at the context is not known to fill it: the cap leaves room for what was counted only.
  const promptTokens = countedPromptTokens(plan, model);
  const asked = plan.asked ?? undefined;
  const contextLeft = model.contextLength ? Math.max(1, model.contextLength - promptTokens) : null;
  const modelCap =
    model.maxOutputTokens !== null ? Math.min(model.maxOutputTokens, contextLeft ?? Infinity) : contextLeft;
  if (asked !== undefined) return modelCap !== null ? Math.min(asked, modelCap) : asked;
  const cap = modelCap ?? DEFAULT_MAX_OUTPUT_TOKENS;
  return plan.ceiling !== null ? Math.min(cap, plan.ceiling) : cap;
}

/** Prompt tokens the hold assumes: the counted tokens with the tokenizer margin. */
export function worstPromptTokens(promptTokens: number): number {
  return (
    Number(
      (BigInt(promptTokens) * PROMPT_MARGIN_NUMERATOR + PROMPT_MARGIN_DENOMINATOR - 1n) / PROMPT_MARGIN_DENOMINATOR,
    ) + PROMPT_MARGIN_TOKENS
  );
}

/** {@link callWorstCase} of an OpenAI chat request's plan. */
export function chatWorstCase(request: ChatRequest, plan: ChatPlan): number {
  return callWorstCase(chatCallPlan(request, plan));
}

/**
 * The most a call can cost on any of its candidate models, in micro-credits: the counted text with the
 * tokenizer margin, each image at the model's image-token budget, the output cap for every choice, and the
 * predicted-output tokens (a call with a PDF: its input at least the model's whole context); a call that asks
 * for a 1-hour cache has its input at the highest input price with `cacheWrite1h` among them.
 *
 * A call with a server-side web search (`plan.webSearch`, Anthropic's tool with its `max_uses` = N) adds
 * N × `webSearch` (every search's fee in full: the upstream runs at most N) and N × `inputTokensPerUse` input
 * tokens at that same highest input price (the results each search brings into the prompt, which Anthropic bills
 * as input: thousands to tens of thousands a search). Why a fixed allowance: what a search reads is unknown before
 * it runs, and the output stays within the cap as without searches. What a call reports beyond its hold is
 * recorded as `uncollected` by the meter (the wallet is never overspent), so this allowance sets who bears a
 * search heavier than it: the payer up to the hold, the operator past it.
 */
export function callWorstCase(plan: CallPlan): number {
  let worst = 0;
  const searches = plan.webSearch?.maxUses ?? 0;
  const searchTokens = searches * (plan.webSearch?.inputTokensPerUse ?? 0);
  for (const model of plan.candidates) {
    const counted = worstPromptTokens(plan.promptTokens) + plan.images * (model.imageTokens ?? 0);
    // The input a call sends can never exceed the model's context (the upstream refuses it, billing nothing).
    const sent = plan.wholeContext && model.contextLength !== null ? Math.max(counted, model.contextLength) : counted;
    const promptTokens = sent + searchTokens;
    const completionTokens = callOutputCap(plan, model) * plan.choices + plan.predictionTokens;
    const usage = { promptTokens, completionTokens, requests: 1, webSearches: searches };
    worst = Math.max(worst, worstCaseCostMicros(model.pricing, usage, plan.longCache === true));
  }
  return worst;
}
