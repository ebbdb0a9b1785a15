import type { Feature } from '../../platform/feature.ts';
import type { App } from '../../platform/http/server.ts';
import { registerMessagesRoute } from './messages.ts';
import { registerCountTokensRoute } from './count-tokens.ts';
import { useAnthropicErrorEnvelope } from './shim-error-handler.ts';

/**
 * Anthropic's Messages API under `/api/v1`: `POST /messages` and `POST /messages/count_tokens`, for the
 * Anthropic SDK, the Vercel AI SDK's Anthropic provider and Claude Code. Same permissions (`ai:chat` or
 * `ai:completions`), billing and limits as chat; errors in Anthropic's envelope.
 */
export const anthropicMessagesFeature: Feature = {
  name: 'anthropic-messages',
  async register(app, ctx) {
    // An encapsulated scope, so that its error handler (Anthropic's envelope) covers these routes only.
    await app.register(async (scope) => {
      const typed = scope as unknown as App;
      useAnthropicErrorEnvelope(typed, ctx);
      registerMessagesRoute(typed, ctx);
      registerCountTokensRoute(typed, ctx);
    });
  },
};
