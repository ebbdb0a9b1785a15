import type { App } from '../../platform/http/server.ts';
import { principalOf } from '../../platform/http/server.ts';
import type { AppContext } from '../../platform/context.ts';
import { ApiErrorSchema } from '#wire/errors.ts';
import { ResponseIdParams, ResponseSchema } from './schemas.ts';
import { requireResponse } from './store.ts';

/** `GET /api/v1/responses/:id`: a response stored with `store: true`, to its own user and app only (404 otherwise). */
export function registerRetrieveResponseRoute(app: App, ctx: AppContext): void {
  app.get(
    '/api/v1/responses/:id',
    {
      schema: {
        tags: ['ai'],
        summary: 'Retrieve a stored response (OpenAI Responses; only those created with `store: true`)',
        security: [{ bearer: [] }],
        params: ResponseIdParams,
        response: { 200: ResponseSchema, 404: ApiErrorSchema },
      },
      config: { auth: ['ai:chat', 'ai:completions'] },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      return (await requireResponse(ctx, principalOf(request), id)).response;
    },
  );
}
