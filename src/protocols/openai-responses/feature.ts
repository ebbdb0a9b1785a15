import type { Feature } from '../../platform/feature.ts';
import type { App } from '../../platform/http/server.ts';
import { registerCreateResponseRoute } from './create.ts';
import { registerRetrieveResponseRoute } from './retrieve.ts';
import { registerDeleteResponseRoute } from './delete.ts';
import { responsesMigrations } from './migrations.ts';
import { expireResponsesJob } from './store.ts';

/**
 * OpenAI's Responses API (`/api/v1/responses`): an inbound protocol on the gateway's one pipeline, with the
 * responses kept on `store: true` (table `stored_responses`, job `expire-responses`).
 */
export const responsesFeature: Feature = {
  name: 'openai-responses',
  migrations: responsesMigrations,
  jobs: [expireResponsesJob],
  register(app, ctx) {
    const typed = app as unknown as App;
    registerCreateResponseRoute(typed, ctx);
    registerRetrieveResponseRoute(typed, ctx);
    registerDeleteResponseRoute(typed, ctx);
  },
};
