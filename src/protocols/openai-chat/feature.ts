import type { Feature } from '../../platform/feature.ts';
import type { App } from '../../platform/http/server.ts';
import { registerChatRoute } from './route.ts';

/** The OpenAI chat protocol: `POST /api/v1/chat/completions` on the call pipeline (`gateway/run-call.ts`). */
export const openAiChatFeature: Feature = {
  name: 'openai-chat',
  register(app, ctx) {
    registerChatRoute(app as unknown as App, ctx);
  },
};
