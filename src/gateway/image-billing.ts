import { ApiError } from '../platform/errors.ts';
import { microsToCredits } from '../platform/money.ts';
import { costMicros } from '../models/pricing.ts';
import { imagePriceOf, type CatalogueModel } from '../models/catalogue.ts';
import { tokenCount } from './chat-usage.ts';
import type { OneShotUsage } from './common.ts';

/*
 * How an image call (generation or edit) is priced, held and charged. A model sells its images in one of two
 * ways, and a call pays the sum of the parts its model sets (decisions.md "Prices"):
 * - per image: `pricing.image`, or `imagePrices` by quality and size (DALL·E, most catalogues);
 * - by tokens, as OpenAI bills gpt-image-1: a model with neither pays its output image tokens at `completion`,
 *   which the upstream reports (`usage.output_tokens`). Before this, such a model's images cost nothing but the
 *   request and the prompt (found by an outside check: n=2 at 8,320 output tokens was charged 0.001 credits).
 * Both pay the prompt (the upstream's `usage.input_tokens` when it reports them, else the gateway's count) at
 * `prompt`, and `request`.
 */

/**
 * Output tokens held per image of a token-priced model whose catalogue entry sets no `maxOutputTokens`: the most
 * OpenAI documents for one gpt-image-1 image (high quality, 1024×1536: 6,240), so its worst case is held.
 */
export const IMAGE_OUTPUT_TOKENS_DEFAULT = 6240;

/** How one request's images are priced on a model: per image, or by output tokens with their bound per image. */
export type ImagePricing = { per: 'image'; price: number } | { per: 'token'; outputTokensPerImage: number };

/** The Images API fields that choose an image's price. */
export interface PricedImageFields {
  quality?: string;
  size?: string;
}

/**
 * How `model` prices this request's images, or the 400 naming the quality or size a per-image model has no price
 * for. A token-priced model bounds every quality and size by its output tokens, so it refuses none.
 */
export function imagePricingOf(body: PricedImageFields, model: CatalogueModel): ImagePricing | ApiError {
  const perImage = Object.keys(model.imagePrices).length > 0 || model.pricing.image > 0;
  if (!perImage) return { per: 'token', outputTokensPerImage: model.maxOutputTokens ?? IMAGE_OUTPUT_TOKENS_DEFAULT };
  const price = imagePriceOf(model, body.quality, body.size);
  if (price !== null) return { per: 'image', price };
  const param = body.size !== undefined ? 'size' : 'quality';
  const listed = Object.keys(model.imagePrices);
  return new ApiError(
    'UNSUPPORTED_PARAMETER',
    listed.length
      ? `The model "${model.id}" has no price for quality ${JSON.stringify(body.quality ?? 'auto')} and size ${JSON.stringify(body.size ?? 'auto')}; priced: ${listed.join(', ')}.`
      : `The model "${model.id}" has one flat per-image price, which does not bound a chosen ${param}; send no quality or size, or ask the operator to price them (imagePrices).`,
    { details: { param } },
  );
}

/** The most `images` can cost on `model` with `promptTokens` of input (already at their worst). */
export function imagesWorstCase(model: CatalogueModel, pricing: ImagePricing, promptTokens: number, images: number) {
  return costMicros(pricesOf(model, pricing), {
    promptTokens,
    completionTokens: pricing.per === 'token' ? pricing.outputTokensPerImage * images : 0,
    requests: 1,
    images: pricing.per === 'image' ? images : 0,
  });
}

/** The model's prices with this request's per-image price (none for a token-priced model). */
function pricesOf(model: CatalogueModel, pricing: ImagePricing) {
  return { ...model.pricing, image: pricing.per === 'image' ? pricing.price : 0 };
}

/**
 * What an answer used, in billing terms: never more images than were `asked` (and held for), whatever the
 * upstream returns; the input it reports, else `countedPromptTokens`; a token-priced model's output tokens as
 * reported, else each returned image at its bound (the hold's worst case: an upstream that reports nothing is
 * not given the images).
 */
export function imagesUsage(
  result: any,
  model: CatalogueModel,
  pricing: ImagePricing,
  counted: { promptTokens: number; asked: number },
): OneShotUsage {
  const returned = Math.min(Array.isArray(result?.data) ? result.data.length : counted.asked, counted.asked);
  const reported = result?.usage && typeof result.usage === 'object' ? result.usage : {};
  const promptTokens = tokenCount(reported.input_tokens) ?? counted.promptTokens;
  const completionTokens =
    pricing.per === 'token' ? (tokenCount(reported.output_tokens) ?? pricing.outputTokensPerImage * returned) : 0;
  return {
    cost: costMicros(pricesOf(model, pricing), {
      promptTokens,
      completionTokens,
      requests: 1,
      images: pricing.per === 'image' ? returned : 0,
    }),
    promptTokens,
    completionTokens,
  };
}

/**
 * The answer as the client gets it: the upstream's, its `usage` (if any) with the call's `cost` in credits. The
 * upstream's own `cost` (OpenRouter's, in USD) and `cost_details` are the operator's, not the caller's.
 */
export function imagesAnswer(result: any, charged: number): unknown {
  const {
    cost: _upstreamCost,
    cost_details: _upstreamDetails,
    is_byok: _byok,
    ...reported
  } = result?.usage && typeof result.usage === 'object' ? result.usage : {};
  return { ...result, usage: { ...reported, cost: microsToCredits(charged) } };
}
