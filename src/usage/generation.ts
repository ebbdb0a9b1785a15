import Type from 'typebox';
import type { App } from '../platform/http/server.ts';
import { principalOf } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { ApiError } from '../platform/errors.ts';
import { microsToCredits } from '../platform/money.ts';
import { findGeneration } from '../billing/reports.ts';
import { anyKeyOrBillingRead } from '../billing/read-access.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });
const Unknown = (description: string) => Type.Null({ description });

const GenerationQuery = Type.Object({
  id: Type.String({
    minLength: 1,
    maxLength: 200,
    description:
      'The `id` of the chat completion, response, message or completion Tollgate answered (`chatcmpl-…`, `resp_…`, `msg_…`, `cmpl-…`).',
  }),
});

/** `GET /api/v1/generation`: OpenRouter's generation stats, the fields Tollgate knows filled, the others null. */
const GenerationSchema = Type.Object({
  data: Type.Object({
    id: Type.String(),
    upstream_id: Unknown("The upstream's own id, not kept apart from the answered one: null"),
    model: Type.String({ description: 'The model that answered (a fallback, when one did)' }),
    created_at: Type.String({ format: 'date-time', description: 'When the call was settled' }),
    total_cost: Type.Number({ description: 'Credits charged for the call' }),
    usage: Type.Number({ description: 'Credits charged for the call (as `total_cost`)' }),
    cache_discount: Unknown('Not computed: null'),
    upstream_inference_cost: Unknown('Not known: null'),
    is_byok: Type.Boolean({ description: 'Always false: every call is paid from the wallet' }),
    app_id: Nullable(
      Type.String(),
      'The OAuth app the call was made through (its token or a key it created); null when none',
    ),
    provider_name: Unknown('Not recorded: null'),
    streamed: Type.Boolean(),
    cancelled: Type.Boolean({ description: 'True when the client left before the answer ended' }),
    latency: Type.Integer({ description: 'Milliseconds from the call being held to its settle' }),
    moderation_latency: Unknown('No moderation: null'),
    generation_time: Unknown('Not measured apart from `latency`: null'),
    finish_reason: Nullable(
      Type.String(),
      'Why the answer ended: `stop`, `length`, `tool_calls`, `content_filter` or `error`; null when the client left',
    ),
    native_finish_reason: Unknown("The provider's own reason, not kept: null"),
    tokens_prompt: Type.Integer({ description: 'Input tokens the call was charged for' }),
    tokens_completion: Type.Integer({ description: 'Output tokens the call was charged for' }),
    native_tokens_prompt: Type.Integer({
      description: "Input tokens as the provider reported them (Tollgate's count when it reported none)",
    }),
    native_tokens_completion: Type.Integer({
      description: 'Output tokens, reasoning included, as the provider reported them',
    }),
    native_tokens_cached: Type.Integer({ description: "Input tokens read from the provider's prompt cache" }),
    native_tokens_reasoning: Type.Integer({ description: 'Output tokens spent on reasoning' }),
    native_tokens_completion_images: Unknown('Not counted: null'),
    num_media_prompt: Unknown('Not counted: null'),
    num_media_completion: Unknown('Not counted: null'),
    num_input_audio_prompt: Unknown('Not counted: null'),
    num_search_results: Unknown('Not counted: null'),
    origin: Unknown('Not recorded: null'),
    external_user: Unknown('Not recorded: null'),
    router: Unknown('No router: null'),
  }),
});

/**
 * `GET /api/v1/generation?id=`: the stats of one call, by the id Tollgate answered it with, in OpenRouter's shape,
 * so a tool that asks OpenRouter what a call cost asks Tollgate the same way; `total_cost` is the `usage.cost`
 * the answer carried.
 *
 * A call is found once it is settled (its usage record commits with its charge): before that, and for an id
 * unknown, it is a 404 that OpenRouter's clients retry. Security invariant: only the call's owner reads it; another
 * user's id, or an app's credential asking for a call made through another app (or none), is the same 404 as an
 * unknown id, never a 403 that would say it exists. Any API key of the user, an OAuth token with `billing:read`.
 */
export function registerGenerationRoute(app: App, ctx: AppContext): void {
  app.get(
    '/api/v1/generation',
    {
      schema: {
        tags: ['usage'],
        summary: 'The stats of one call by the id it was answered with (OpenRouter generation stats)',
        description:
          "Any API key of the user may call it (no permission needed), as on OpenRouter; an app's OAuth token needs `billing:read` and reads its own calls only. A call in flight is a 404 until it is settled: retry.",
        security: [{ bearer: [] }],
        querystring: GenerationQuery,
        response: { 200: GenerationSchema },
      },
      config: { auth: [] },
      preValidation: anyKeyOrBillingRead,
    },
    async (request) => {
      const principal = principalOf(request);
      const { id } = request.query as { id: string };
      const call = await findGeneration(ctx.db, { userId: principal.userId, appId: principal.appId }, id);
      if (!call)
        throw new ApiError(
          'NOT_FOUND',
          'Generation not found: no settled call of yours was answered with this id. A call is found once it is settled; retry shortly after it ends.',
        );
      const cost = microsToCredits(call.cost);
      const details = call.details ?? {};
      return {
        data: {
          id: call.id,
          upstream_id: null,
          model: call.model,
          created_at: new Date(call.createdAt).toISOString(),
          total_cost: cost,
          usage: cost,
          cache_discount: null,
          upstream_inference_cost: null,
          is_byok: false,
          app_id: call.appId,
          provider_name: null,
          streamed: call.streamed,
          cancelled: call.status === 'client_aborted',
          latency: call.latencyMs,
          moderation_latency: null,
          generation_time: null,
          finish_reason: call.finishReason,
          native_finish_reason: null,
          tokens_prompt: call.promptTokens,
          tokens_completion: call.completionTokens,
          native_tokens_prompt: call.promptTokens,
          native_tokens_completion: call.completionTokens,
          native_tokens_cached: details.cachedRead ?? 0,
          native_tokens_reasoning: details.reasoning ?? 0,
          native_tokens_completion_images: null,
          num_media_prompt: null,
          num_media_completion: null,
          num_input_audio_prompt: null,
          num_search_results: null,
          origin: null,
          external_user: null,
          router: null,
        },
      };
    },
  );
}
