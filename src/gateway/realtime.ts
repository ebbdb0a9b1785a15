import Type from 'typebox';
import type { App } from '../platform/http/server.ts';
import type { GatewayDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import { costMicros } from '../models/pricing.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import { MODEL_ID_PATTERN } from '../models/routes.ts';
import { meteredCall } from './common.ts';
import { REALTIME_SESSION_ANSWERS } from './openai-answers.ts';

const RealtimeBody = Type.Object(
  { model: Type.String({ pattern: MODEL_ID_PATTERN, maxLength: 300 }) },
  { additionalProperties: true },
);

/**
 * Session fields the gateway sets itself (its caps), so a client cannot lift them: the output cap per
 * response and the client secret's lifetime.
 */
const CAPPED_FIELDS = ['max_response_output_tokens', 'max_output_tokens', 'client_secret', 'expires_after'];

/**
 * What one realtime session is held and charged: `request` + `second` × `REALTIME_MAX_SESSION_SECONDS`.
 * The audio exchanged afterwards flows between the client and the provider, never through Tollgate, so no
 * usage ever comes back to settle on: the session is sold whole, at the worst case its caps allow.
 */
export function realtimeSessionCost(model: CatalogueModel, maxSessionSeconds: number): number {
  return costMicros(model.pricing, { requests: 1, seconds: maxSessionSeconds });
}

/**
 * The deployment's realtime caps (`REALTIME_MAX_SESSION_SECONDS`, `REALTIME_MAX_RESPONSE_OUTPUT_TOKENS`); throws 404
 * unless the operator set `REALTIME_ENABLED`, since an unmetered upstream session must be a deliberate choice.
 */
export function realtimeCaps(ctx: GatewayDeps): { maxSeconds: number; maxTokens: number } {
  if (!ctx.config.REALTIME_ENABLED)
    throw new ApiError(
      'NOT_FOUND',
      'Realtime sessions are not enabled on this deployment (the operator sets REALTIME_ENABLED).',
    );
  return {
    maxSeconds: ctx.config.REALTIME_MAX_SESSION_SECONDS,
    maxTokens: ctx.config.REALTIME_MAX_RESPONSE_OUTPUT_TOKENS,
  };
}

/**
 * `POST /api/v1/realtime/sessions`: mints an ephemeral upstream session (OpenAI's `client_secret`) that the
 * client then uses directly with the provider.
 *
 * Invariants: the route answers 404 unless the operator set `REALTIME_ENABLED` (an unmetered upstream
 * session must be a deliberate choice); the session sent upstream always carries the gateway's caps
 * (`max_response_output_tokens`, and a client secret that expires after `REALTIME_MAX_SESSION_SECONDS`),
 * whatever the client sent, and the hold — captured whole — is the worst case those caps allow.
 */
export function registerRealtimeRoute(app: App, ctx: GatewayDeps): void {
  app.post(
    '/api/v1/realtime/sessions',
    {
      schema: {
        tags: ['ai'],
        summary: 'Mint an ephemeral realtime session (OpenAI-compatible; off unless REALTIME_ENABLED)',
        security: [{ bearer: [] }],
        body: RealtimeBody,
      },
      config: { auth: ['ai:audio'], billed: true, documentedResponses: REALTIME_SESSION_ANSWERS },
    },
    async (request, reply) => {
      const { maxSeconds, maxTokens } = realtimeCaps(ctx);
      const body = request.body as { model: string; [k: string]: unknown };
      const capped = CAPPED_FIELDS.find((field) => body[field] !== undefined);
      if (capped)
        throw new ApiError(
          'UNSUPPORTED_PARAMETER',
          `The field "${capped}" is set by the gateway (its session caps); leave it out.`,
          { details: { param: capped } },
        );
      const answered = await meteredCall(ctx, request, reply, {
        kind: 'realtime',
        modelId: body.model,
        supports: (adapter) => !!adapter.realtimeSession,
        worstCase: (model) => realtimeSessionCost(model, maxSeconds),
        call: (adapter, model, signal) =>
          adapter.realtimeSession!(
            {
              ...body,
              model: model.upstreamModel,
              max_response_output_tokens: maxTokens,
              client_secret: { expires_after: { anchor: 'created_at', seconds: maxSeconds } },
            },
            { signal },
          ),
        usage: (_session, model) => ({
          cost: realtimeSessionCost(model, maxSeconds),
          promptTokens: 0,
          completionTokens: 0,
        }),
      });
      if (!answered) return reply;
      return { ...answered.result, model: answered.model.id };
    },
  );
}
