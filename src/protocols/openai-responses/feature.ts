import type { Feature } from '../../platform/feature.ts';
import type { App } from '../../platform/http/server.ts';
import type { ResponsesDeps } from './deps.ts';
import { registerCreateResponseRoute } from './create.ts';
import { registerRetrieveResponseRoute } from './retrieve.ts';
import { registerDeleteResponseRoute } from './delete.ts';
import { registerInputItemsRoute } from './input-items.ts';
import { registerInputTokensRoute } from './input-tokens.ts';
import { expireResponsesJob } from './store.ts';

/**
 * OpenAI's Responses API (`/api/v1/responses`): an inbound protocol on the gateway's one pipeline, with the
 * responses kept on `store: true` (table `stored_responses`, job `expire-responses`).
 */
export function createResponsesFeature(deps: ResponsesDeps): Feature {
  return {
    name: 'openai-responses',
    jobs: [expireResponsesJob(deps)],
    register(app) {
      const typed = app as unknown as App;
      registerCreateResponseRoute(typed, deps);
      registerRetrieveResponseRoute(typed, deps);
      registerDeleteResponseRoute(typed, deps);
      registerInputItemsRoute(typed, deps);
      registerInputTokensRoute(typed, deps);
    },
  };
}
