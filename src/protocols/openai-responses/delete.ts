import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import { principalOf } from '../../platform/http/server.ts';
import type { AppContext } from '../../platform/context.ts';
import { ApiError } from '../../platform/errors.ts';
import { ApiErrorSchema } from '#wire/errors.ts';
import { ResponseIdParams } from './schemas.ts';
import { deleteResponse } from './store.ts';

const Deleted = Type.Object({
  id: Type.String(),
  object: Type.Literal('response.deleted'),
  deleted: Type.Literal(true),
});

/** `DELETE /api/v1/responses/:id`: forgets a stored response of the caller's (404 for anyone else's). */
export function registerDeleteResponseRoute(app: App, ctx: AppContext): void {
  app.delete(
    '/api/v1/responses/:id',
    {
      schema: {
        tags: ['ai'],
        summary: 'Delete a stored response (OpenAI Responses)',
        security: [{ bearer: [] }],
        params: ResponseIdParams,
        response: { 200: Deleted, 404: ApiErrorSchema },
      },
      config: { auth: ['ai:chat', 'ai:completions'] },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      if (!(await deleteResponse(ctx, principalOf(request), id)))
        throw new ApiError('NOT_FOUND', `No stored response "${id}" of yours.`, { details: { param: 'id' } });
      return { id, object: 'response.deleted' as const, deleted: true as const };
    },
  );
}
