import Type from 'typebox';
import type { App } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { costMicros } from '../models/pricing.ts';
import { MODEL_ID_PATTERN } from '../models/routes.ts';
import { meteredCall } from './common.ts';

const RealtimeBody = Type.Object({ model: Type.String({ pattern: MODEL_ID_PATTERN, maxLength: 300 }) }, { additionalProperties: true });

/**
 * `POST /api/v1/realtime/sessions`: mints an ephemeral upstream session (OpenAI's `client_secret`) that the
 * client then uses directly with the provider. Billed the model's `request` price per session: the audio
 * exchanged afterwards never passes through Tollgate, so it cannot be metered here.
 */
export function registerRealtimeRoute(app: App, ctx: AppContext): void {
  app.post('/api/v1/realtime/sessions', {
    schema: { tags: ['ai'], summary: 'Mint an ephemeral realtime session (OpenAI-compatible)', security: [{ bearer: [] }], body: RealtimeBody },
    config: { auth: ['ai:audio'] },
  }, async (request, reply) => {
    const body = request.body as { model: string; [k: string]: unknown };
    const answered = await meteredCall(ctx, request, reply, {
      kind: 'realtime',
      modelId: body.model,
      supports: (adapter) => !!adapter.realtimeSession,
      worstCase: (model) => costMicros(model.pricing, { requests: 1 }),
      call: (adapter, model, signal) => adapter.realtimeSession!({ ...body, model: model.upstreamModel }, { signal }),
      usage: (_session, model) => ({ cost: costMicros(model.pricing, { requests: 1 }), promptTokens: 0, completionTokens: 0 }),
    });
    if (!answered) return reply;
    return { ...answered.result, model: answered.model.id };
  });
}
