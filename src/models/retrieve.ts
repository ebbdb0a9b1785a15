import Type from 'typebox';
import { ApiErrorSchema } from '#wire/errors.ts';
import type { App } from '../platform/http/server.ts';
import type { CatalogueDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import { PublicModelSchema, publicModel } from './routes.ts';
import { allowsModel } from './allowed.ts';
import { principalOf } from '../platform/http/server.ts';
import { modelPaths } from './id-paths.ts';
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
 * `GET /api/v1/models/:vendor/:model`, the model part as many segments as the id has
 * (`/api/v1/models/openai/meta-llama/llama-3`), and the same with the id URL-encoded in one segment
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
  // Not checked: any text is looked up, and what is not a model is the 404 that says where the list is.
  for (const path of modelPaths('/api/v1/models', { checked: false, documentEncoded: true })) {
    app.get(
      path.url,
      {
        schema: {
          ...schema(
            path.url.endsWith(':id')
              ? 'Retrieve a model by its URL-encoded id (`tollgate%2Fecho`), as the OpenAI SDK sends it'
              : 'Retrieve a model (OpenAI format, with prices in credits)',
            path.params,
          ),
          hide: path.hide,
        },
        config: { auth: ['ai:models'] },
        ...(path.preValidation ? { preValidation: path.preValidation } : {}),
      },
      async (request) => answer(path.idOf(request.params), principalOf(request)),
    );
  }
}
