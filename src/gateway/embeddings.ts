import Type from 'typebox';
import { principalOf, type App } from '../platform/http/server.ts';
import type { GatewayDeps } from './deps.ts';
import { costMicros } from '../models/pricing.ts';
import { tokenCount } from './chat-usage.ts';
import { MODEL_ID_PATTERN } from '../models/routes.ts';
import { countEmbeddingInputTokens } from '../providers/tokens.ts';
import { meteredCall } from './common.ts';
import { microsToCredits } from '../platform/money.ts';
import { worstPromptTokens } from './chat-plan.ts';
import { EMBEDDINGS_ANSWERS } from './openai-answers.ts';

const EmbeddingsBody = Type.Object(
  {
    model: Type.String({ pattern: MODEL_ID_PATTERN, maxLength: 300 }),
    input: Type.Union([
      Type.String(),
      Type.Array(Type.Union([Type.String(), Type.Integer(), Type.Array(Type.Integer())]), {
        minItems: 1,
        maxItems: 2048,
      }),
    ]),
  },
  { additionalProperties: true },
);

/** `POST /api/v1/embeddings`: billed on prompt tokens (the upstream's count, else ours). */
export function registerEmbeddingsRoute(app: App, ctx: GatewayDeps): void {
  app.post(
    '/api/v1/embeddings',
    {
      schema: {
        tags: ['ai'],
        summary: 'Create embeddings (OpenAI-compatible)',
        security: [{ bearer: [] }],
        body: EmbeddingsBody,
      },
      config: { auth: ['ai:embeddings'], billed: true, documentedResponses: EMBEDDINGS_ANSWERS },
    },
    async (request, reply) => {
      const body = request.body as { model: string; input: unknown; [k: string]: unknown };
      // Counted in slices (a batch of inputs can be megabytes) and not remembered: inputs are seldom sent twice.
      const counted = await ctx.promptCounts.countPrompt(
        principalOf(request),
        (count) => countEmbeddingInputTokens(body.input, count),
        { remember: false },
      );
      const answered = await meteredCall(ctx, request, reply, {
        kind: 'embeddings',
        modelId: body.model,
        supports: (adapter) => !!adapter.embeddings,
        worstCase: (model) => costMicros(model.pricing, { promptTokens: worstPromptTokens(counted), requests: 1 }),
        call: (adapter, model, signal) => adapter.embeddings!({ ...body, model: model.upstreamModel }, { signal }),
        usage: (result, model) => {
          // The upstream's count, sanitized (a negative or absurd one would fail the settle): else ours.
          const promptTokens = tokenCount(result?.usage?.prompt_tokens) || counted;
          return { cost: costMicros(model.pricing, { promptTokens, requests: 1 }), promptTokens, completionTokens: 0 };
        },
      });
      if (!answered) return reply;
      // The usage billed, as chat answers it: the counts charged and `cost` in credits. The upstream's own
      // `cost` (OpenRouter's, in USD) and `cost_details` are the operator's, not the caller's.
      const {
        cost: _upstreamCost,
        cost_details: _upstreamDetails,
        is_byok: _byok,
        ...reported
      } = answered.result?.usage && typeof answered.result.usage === 'object' ? answered.result.usage : {};
      const promptTokens = answered.used.promptTokens;
      return {
        ...answered.result,
        ...(body.encoding_format === 'base64' ? { data: asBase64Vectors(answered.result?.data) } : {}),
        model: answered.model.id,
        usage: {
          ...reported,
          prompt_tokens: promptTokens,
          total_tokens: promptTokens,
          cost: microsToCredits(answered.charged),
        },
      };
    },
  );
}

/**
 * The vectors of an answer as base64 when base64 was asked for. Why: the official OpenAI SDKs ask for base64
 * by default and decode every vector as base64 (little-endian float32, as OpenAI sends it), and an
 * OpenAI-compatible upstream may ignore `encoding_format` and send arrays of numbers, which the SDK would
 * then decode into garbage. A vector that is already a string, or not an array of numbers, is left alone.
 */
export function asBase64Vectors(data: unknown): unknown {
  if (!Array.isArray(data)) return data;
  return data.map((item) => {
    const vector = (item as { embedding?: unknown } | null)?.embedding;
    if (!Array.isArray(vector) || !vector.every((x) => typeof x === 'number')) return item;
    const bytes = Buffer.alloc(vector.length * 4);
    // float32, little-endian whatever the host's byte order, as OpenAI sends it.
    vector.forEach((x: number, i) => bytes.writeFloatLE(x, i * 4));
    return { ...item, embedding: bytes.toString('base64') };
  });
}
