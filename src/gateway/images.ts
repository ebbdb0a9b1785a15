import Type from 'typebox';
import type { App } from '../platform/http/server.ts';
import type { GatewayDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import { MODEL_ID_PATTERN } from '../models/routes.ts';
import { countTextTokens } from '../providers/tokens.ts';
import { meteredCall } from './common.ts';
import { worstPromptTokens } from './chat-plan.ts';
import { IMAGES_ANSWERS } from './openai-answers.ts';
import { imagePricingOf, imagesAnswer, imagesUsage, imagesWorstCase, type ImagePricing } from './image-billing.ts';

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

/**
 * `POST /api/v1/images/generations`: holds `request` + the prompt's tokens + n images at their worst (per image:
 * the price of the asked quality and size; by tokens: their output bound), and is charged for the images
 * actually returned (./image-billing.ts).
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
      const pricingOf = (model: CatalogueModel) => imagePricingOf(body, model) as ImagePricing;
      const answered = await meteredCall(ctx, request, reply, {
        kind: 'images',
        modelId: body.model,
        supports: (adapter) => !!adapter.images,
        refuses: (model) => {
          const pricing = imagePricingOf(body, model);
          return pricing instanceof ApiError ? pricing : null;
        },
        worstCase: (model) => imagesWorstCase(model, pricingOf(model), worstPromptTokens(promptTokens), asked),
        call: (adapter, model, signal) => adapter.images!({ ...body, model: model.upstreamModel }, { signal }),
        usage: (result, model) => imagesUsage(result, model, pricingOf(model), { promptTokens, asked }),
      });
      return answered ? imagesAnswer(answered.result, answered.charged) : reply;
    },
  );
}
