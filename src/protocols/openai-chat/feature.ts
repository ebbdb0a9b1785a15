import type { Feature } from '../../platform/feature.ts';
import type { App } from '../../platform/http/server.ts';
import type { GatewayDeps } from '../../gateway/deps.ts';
import { registerChatRoute } from './route.ts';

/** The OpenAI chat protocol: `POST /api/v1/chat/completions` on the call pipeline (`gateway/run-call.ts`). */
export function createOpenAiChatFeature(deps: GatewayDeps): Feature {
  return {
    name: 'openai-chat',
    register(app) {
      registerChatRoute(app as unknown as App, deps);
    },
  };
}
