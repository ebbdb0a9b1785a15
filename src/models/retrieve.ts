import Type from 'typebox';
import { ApiErrorSchema } from '#wire/errors.ts';
import type { App } from '../platform/http/server.ts';
import type { CatalogueDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import { PublicModelSchema, publicModel } from './routes.ts';
import { allowsModel } from './allowed.ts';
import { principalOf } from '../platform/http/server.ts';
import type { Principal } from '../platform/http/principal.ts';

const schema = (summary: string, params: ReturnType<typeof Type.Object>) => ({
  tags: ['ai'],
  summary,
  description:
    'OpenAI\'s model object (`id`, `object: "model"`, `created`, `owned_by`) with the fields `GET /api/v1/models` lists (name, prices in credits, context length, modalities). An unknown or disabled model is a 404 `MODEL_NOT_FOUND`, and so is a model an API key created with `models` may not call (the list leaves it out too).',
  security: [{ bearer: [] }],
  params,
  response: { 200: PublicModelSchema, 404: ApiErrorSchema },
});

/**
 * `GET /api/v1/models/:vendor/:model`, and the same with the id URL-encoded in one segment
 * (`/api/v1/models/tollgate%2Fecho`), which is how the official OpenAI SDK's `models.retrieve` sends it.
 */
export function registerModelRetrieveRoutes(app: App, ctx: CatalogueDeps): void {
  // A model the key may not call is answered as the list leaves it out: as one that does not exist.
  const answer = async (id: string, principal: Principal) => {
    const model = await ctx.models.get(id);
    if (!model || !allowsModel(principal.models, model.id))
      throw new ApiError('MODEL_NOT_FOUND', `The model "${id}" does not exist; GET /api/v1/models lists the models.`);
    return publicModel(model);
  };
  app.get(
    '/api/v1/models/:vendor/:model',
    {
      schema: schema(
        'Retrieve a model (OpenAI format, with prices in credits)',
        Type.Object({ vendor: Type.String({ maxLength: 100 }), model: Type.String({ maxLength: 300 }) }),
      ),
      config: { auth: ['ai:models'] },
    },
    async (request) => {
      const { vendor, model } = request.params as { vendor: string; model: string };
      return answer(`${vendor}/${model}`, principalOf(request));
    },
  );
  app.get(
    '/api/v1/models/:id',
    {
      schema: schema(
        'Retrieve a model by its URL-encoded id (`tollgate%2Fecho`), as the OpenAI SDK sends it',
        Type.Object({
          id: Type.String({ maxLength: 400, description: 'The model id `<vendor>/<model>`, URL-encoded.' }),
        }),
      ),
      config: { auth: ['ai:models'] },
    },
    async (request) => answer((request.params as { id: string }).id, principalOf(request)),
  );
}
