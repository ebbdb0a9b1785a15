import Type from 'typebox';
import type { App } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { costMicros } from '../models/pricing.ts';
import { MODEL_ID_PATTERN } from '../models/routes.ts';
import { countTextTokens } from '../providers/tokens.ts';
import { meteredCall } from './common.ts';
import { worstPromptTokens } from './chat-plan.ts';

const ImagesBody = Type.Object({
  model: Type.String({ pattern: MODEL_ID_PATTERN, maxLength: 300 }),
  prompt: Type.String({ minLength: 1, maxLength: 32_000 }),
  n: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
}, { additionalProperties: true });

/**
 * `POST /api/v1/images/generations`: holds `request` + `image` × n + the prompt's tokens, and is charged for
 * the images actually returned.
 */
export function registerImagesRoute(app: App, ctx: AppContext): void {
  app.post('/api/v1/images/generations', {
    schema: { tags: ['ai'], summary: 'Generate images (OpenAI-compatible)', security: [{ bearer: [] }], body: ImagesBody },
    config: { auth: ['ai:images'] },
  }, async (request, reply) => {
    const body = request.body as { model: string; prompt: string; n?: number; [k: string]: unknown };
    const asked = body.n ?? 1;
    const promptTokens = countTextTokens(body.prompt);
    const answered = await meteredCall(ctx, request, reply, {
      kind: 'images',
      modelId: body.model,
      supports: (adapter) => !!adapter.images,
      worstCase: (model) => costMicros(model.pricing, { promptTokens: worstPromptTokens(promptTokens), requests: 1, images: asked }),
      call: (adapter, model, signal) => adapter.images!({ ...body, model: model.upstreamModel }, { signal }),
      usage: (result, model) => {
        // Never more images than were asked (and held for), whatever the upstream returns.
        const images = Math.min(Array.isArray(result?.data) ? result.data.length : asked, asked);
        return { cost: costMicros(model.pricing, { promptTokens, requests: 1, images }), promptTokens, completionTokens: 0 };
      },
    });
    return answered ? answered.result : reply;
  });
}
