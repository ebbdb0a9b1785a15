import type { Feature } from '../../platform/feature.ts';
import type { App } from '../../platform/http/server.ts';
import type { GatewayDeps } from '../../gateway/deps.ts';
import { registerCompletionsRoute } from './route.ts';

/** OpenAI's legacy text completions: `POST /api/v1/completions` on the call pipeline (`gateway/run-call.ts`). */
export function createOpenAiCompletionsFeature(deps: GatewayDeps): Feature {
  return {
    name: 'openai-completions',
    register(app) {
      registerCompletionsRoute(app as unknown as App, deps);
    },
  };
}
