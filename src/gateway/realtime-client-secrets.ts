import Type from 'typebox';
import type { App } from '../platform/http/server.ts';
import type { GatewayDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import { MODEL_ID_PATTERN } from '../models/routes.ts';
import { UpstreamError } from '../providers/types.ts';
import { meteredCall } from './common.ts';
import { realtimeCaps, realtimeSessionCost } from './realtime.ts';
import { REALTIME_CLIENT_SECRET_ANSWERS } from './openai-answers.ts';

const ClientSecretBody = Type.Object(
  {
    expires_after: Type.Optional(
      Type.Object(
        { anchor: Type.Optional(Type.Literal('created_at')), seconds: Type.Integer({ minimum: 10, maximum: 7200 }) },
        { additionalProperties: false },
      ),
    ),
    session: Type.Optional(
      Type.Object(
        {
          type: Type.Optional(Type.String({ maxLength: 40 })),
          model: Type.Optional(Type.String({ pattern: MODEL_ID_PATTERN, maxLength: 300 })),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { additionalProperties: true },
);

type ClientSecretRequest = {
  expires_after?: { anchor?: 'created_at'; seconds: number };
  session?: { type?: string; model?: string; max_output_tokens?: unknown; [field: string]: unknown };
  [field: string]: unknown;
};

/**
 * The caps of the session asked for, within the operator's: a client may ask for less (a key that expires
 * sooner, fewer output tokens per response), never more. Throws the 400 that names the field otherwise.
 */
function cappedSession(body: ClientSecretRequest, maxSeconds: number, maxTokens: number) {
  const session = body.session ?? {};
  if (session.type !== undefined && session.type !== 'realtime')
    throw new ApiError(
      'UNSUPPORTED_PARAMETER',
      `session.type "${session.type}" is not served: Tollgate mints client secrets for "realtime" sessions only.`,
      { details: { param: 'session.type' } },
    );
  if (session.model === undefined)
    throw new ApiError(
      'INVALID_REQUEST',
      'session.model is required: Tollgate holds and charges a realtime session at its model\'s price (for example "openai/gpt-realtime").',
      { details: { param: 'session.model' } },
    );
  const seconds = body.expires_after?.seconds ?? maxSeconds;
  if (seconds > maxSeconds)
    throw new ApiError(
      'UNSUPPORTED_PARAMETER',
      `expires_after.seconds may be at most ${maxSeconds} on this deployment (REALTIME_MAX_SESSION_SECONDS, what each session is charged for); ask for ${maxSeconds} or less, or leave it out.`,
      { details: { param: 'expires_after.seconds' } },
    );
  const tokens = session.max_output_tokens ?? maxTokens;
  if (!Number.isInteger(tokens) || (tokens as number) < 1 || (tokens as number) > maxTokens)
    throw new ApiError(
      'UNSUPPORTED_PARAMETER',
      `session.max_output_tokens may be an integer from 1 to ${maxTokens} on this deployment (REALTIME_MAX_RESPONSE_OUTPUT_TOKENS); leave it out for ${maxTokens}.`,
      { details: { param: 'session.max_output_tokens' } },
    );
  return { model: session.model, seconds, tokens: tokens as number, session };
}

/**
 * `POST /api/v1/realtime/client_secrets`: the Realtime API's generally available way to start a session
 * (`client.realtime.clientSecrets.create` in the official SDKs): mints an ephemeral key (`ek_…`) with the
 * session's configuration, which the client then uses directly with the provider.
 *
 * Invariants, as for `/realtime/sessions` ({@link registerRealtimeRoute}): 404 unless the operator set
 * `REALTIME_ENABLED`; what is sent upstream always carries the gateway's caps — `session.max_output_tokens`
 * and `expires_after` at most `REALTIME_MAX_RESPONSE_OUTPUT_TOKENS` and `REALTIME_MAX_SESSION_SECONDS` — and
 * the hold, captured whole, is the worst case those caps allow (the audio never passes through Tollgate).
 */
export function registerRealtimeClientSecretRoute(app: App, ctx: GatewayDeps): void {
  app.post(
    '/api/v1/realtime/client_secrets',
    {
      schema: {
        tags: ['ai'],
        summary: 'Mint a realtime client secret (OpenAI-compatible; off unless REALTIME_ENABLED)',
        description:
          'Creates an ephemeral key for a `realtime` session of `session.model` (required), charged whole as `/realtime/sessions` is. `expires_after.seconds` and `session.max_output_tokens` may be lower than the deployment caps, not higher; left out, the caps are set.',
        security: [{ bearer: [] }],
        body: ClientSecretBody,
      },
      config: { auth: ['ai:audio'], billed: true, documentedResponses: REALTIME_CLIENT_SECRET_ANSWERS },
    },
    async (request, reply) => {
      const { maxSeconds, maxTokens } = realtimeCaps(ctx);
      const body = request.body as ClientSecretRequest;
      const asked = cappedSession(body, maxSeconds, maxTokens);
      const answered = await meteredCall(ctx, request, reply, {
        kind: 'realtime',
        modelId: asked.model,
        supports: (adapter) => !!adapter.realtimeClientSecret,
        worstCase: (model) => realtimeSessionCost(model, maxSeconds),
        call: async (adapter, model, signal) => {
          const secret = await adapter.realtimeClientSecret!(
            {
              ...body,
              expires_after: { anchor: 'created_at', seconds: asked.seconds },
              session: {
                ...asked.session,
                type: 'realtime',
                model: model.upstreamModel,
                max_output_tokens: asked.tokens,
              },
            },
            { signal },
          );
          // An answer without its key is no session: the hold is released and the fallbacks tried, not charged.
          if (typeof secret.value !== 'string' || !Number.isInteger(secret.expires_at))
            throw new UpstreamError(502, 'The provider answered a client secret without its value or expiry.');
          return secret;
        },
        usage: (_secret, model) => ({
          cost: realtimeSessionCost(model, maxSeconds),
          promptTokens: 0,
          completionTokens: 0,
        }),
      });
      if (!answered) return reply;
      const { result, model } = answered;
      const session = typeof result.session === 'object' && result.session !== null ? result.session : {};
      return { ...result, session: { ...session, model: model.id } };
    },
  );
}
