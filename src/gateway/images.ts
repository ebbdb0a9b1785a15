import Type from 'typebox';
import type { App } from '../platform/http/server.ts';
import type { GatewayDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import { costMicros } from '../models/pricing.ts';
import { imagePriceOf, type CatalogueModel } from '../models/catalogue.ts';
import { MODEL_ID_PATTERN } from '../models/routes.ts';
import { countTextTokens } from '../providers/tokens.ts';
import { meteredCall } from './common.ts';
import { worstPromptTokens } from './chat-plan.ts';
import { IMAGES_ANSWERS } from './openai-answers.ts';

/** The Images API's priced fields, as generations take them in JSON and edits as multipart text fields. */
export const ImagesBody = Type.Object(
  {
    model: Type.String({ pattern: MODEL_ID_PATTERN, maxLength: 300 }),
    prompt: Type.String({ minLength: 1, maxLength: 32_000 }),
    n: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
    quality: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]+$', maxLength: 32 })),
    size: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]+$', maxLength: 32 })),
  },
  { additionalProperties: true },
);

/**
 * Images API fields passed upstream as sent: none changes the price of an image once its quality and size
 * are priced (README "Pass-through allow-list"). Anything else — `partial_images` (extra output images),
 * `stream`, a field added upstream later — is refused with 400 `UNSUPPORTED_PARAMETER`.
 */
export const IMAGES_PASSED: readonly string[] = [
  'model',
  'prompt',
  'n',
  'quality',
  'size',
  'response_format',
  'output_format',
  'output_compression',
  'background',
  'moderation',
  'style',
  'user',
];

/** An Images API request's fields (generations' JSON body, or an edit's text fields). */
export type ImagesRequest = {
  model: string;
  prompt: string;
  n?: number;
  quality?: string;
  size?: string;
  [k: string]: unknown;
};

/** The per-image price of this request on `model`, or the 400 naming the quality or size it has no price for. */
export function perImagePrice(body: ImagesRequest, model: CatalogueModel): number | ApiError {
  const price = imagePriceOf(model, body.quality, body.size);
  if (price !== null) return price;
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

/**
 * `POST /api/v1/images/generations`: holds `request` + the per-image price of the asked quality and size × n
 * + the prompt's tokens, and is charged for the images actually returned.
 */
export function registerImagesRoute(app: App, ctx: GatewayDeps): void {
  app.post(
    '/api/v1/images/generations',
    {
      schema: {
        tags: ['ai'],
        summary: 'Generate images (OpenAI-compatible)',
        security: [{ bearer: [] }],
        body: ImagesBody,
      },
      config: { auth: ['ai:images'], billed: true, documentedResponses: IMAGES_ANSWERS },
    },
    async (request, reply) => {
      const body = request.body as ImagesRequest;
      const unknown = Object.keys(body).find((field) => !IMAGES_PASSED.includes(field));
      if (unknown)
        throw new ApiError(
          'UNSUPPORTED_PARAMETER',
          `The field "${unknown}" is not on the Images API pass-through allow-list; the gateway passes only fields whose cost it can hold for (README "Pass-through allow-list").`,
          { details: { param: unknown } },
        );
      const asked = body.n ?? 1;
      const promptTokens = countTextTokens(body.prompt);
      const pricingOf = (model: CatalogueModel) => ({ ...model.pricing, image: perImagePrice(body, model) as number });
      const answered = await meteredCall(ctx, request, reply, {
        kind: 'images',
        modelId: body.model,
        supports: (adapter) => !!adapter.images,
        refuses: (model) => {
          const price = perImagePrice(body, model);
          return price instanceof ApiError ? price : null;
        },
        worstCase: (model) =>
          costMicros(pricingOf(model), { promptTokens: worstPromptTokens(promptTokens), requests: 1, images: asked }),
        call: (adapter, model, signal) => adapter.images!({ ...body, model: model.upstreamModel }, { signal }),
        usage: (result, model) => {
          // Never more images than were asked (and held for), whatever the upstream returns.
          const images = Math.min(Array.isArray(result?.data) ? result.data.length : asked, asked);
          return {
            cost: costMicros(pricingOf(model), { promptTokens, requests: 1, images }),
            promptTokens,
            completionTokens: 0,
          };
        },
      });
      return answered ? answered.result : reply;
    },
  );
}
