import type { Feature } from '../../platform/feature.ts';
import type { App } from '../../platform/http/server.ts';
import { registerMessagesRoute } from './messages.ts';
import { registerCountTokensRoute } from './count-tokens.ts';

/**
 * Anthropic's Messages API under `/api/v1`: `POST /messages` and `POST /messages/count_tokens`, for the
 * Anthropic SDK, the Vercel AI SDK's Anthropic provider and Claude Code. Same permissions (`ai:chat` or
 * `ai:completions`), billing and limits as chat; errors in Anthropic's envelope (each route's `errorRenderer`).
 */
export const anthropicMessagesFeature: Feature = {
  name: 'anthropic-messages',
  register(app, ctx) {
    const typed = app as unknown as App;
    registerMessagesRoute(typed, ctx);
    registerCountTokensRoute(typed, ctx);
  },
};
