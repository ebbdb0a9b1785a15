import type { Feature } from '../../platform/feature.ts';
import type { App } from '../../platform/http/server.ts';
import type { MessagesDeps } from './deps.ts';
import { registerMessagesRoute } from './messages.ts';
import { registerCountTokensRoute } from './count-tokens.ts';
import { anthropicErrorBody } from './errors.ts';

/**
 * Anthropic's Messages API under `/api/v1`: `POST /messages` and `POST /messages/count_tokens`, for the
 * Anthropic SDK, the Vercel AI SDK's Anthropic provider and Claude Code. Same permissions (`ai:chat` or
 * `ai:completions`), billing and limits as chat; errors in Anthropic's envelope (each route's `errorRenderer`).
 */
export function createAnthropicMessagesFeature(deps: MessagesDeps): Feature {
  return {
    name: 'anthropic-messages',
    // What the SDK calls beyond these two routes (`messages.batches`, …) is a 404 in Anthropic's envelope too.
    errorEnvelopes: { '/api/v1/messages/': anthropicErrorBody },
    register(app) {
      const typed = app as unknown as App;
      registerMessagesRoute(typed, deps);
      registerCountTokensRoute(typed, deps);
    },
  };
}
