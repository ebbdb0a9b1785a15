import Type, { type Static } from 'typebox';
import type { App } from '../platform/http/server.ts';
import type { CatalogueDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import {
  getModel,
  listAllModels,
  MAX_ANSWER_TIMEOUT_MS,
  MAX_CATALOGUE_TOKENS,
  MIN_ANSWER_TIMEOUT_MS,
  upsertModel,
  type CatalogueModel,
} from './catalogue.ts';
import { pricingFromCredits, pricingToAdminCredits, pricingToCredits } from './pricing.ts';
import { defaultImageTokens } from './image-budgets.ts';
import { familyReasons } from './reasoning-support.ts';
import { creditsToMicros, microsToCredits, CREDITS_RULE } from '../platform/money.ts';
import { syncModels } from './sync.ts';
import { MODEL_ID_PATTERN, MODEL_ID_RULE } from './ids.ts';
import { allowsModel } from './allowed.ts';
import { principalOf } from '../platform/http/server.ts';
import { modelPaths } from './id-paths.ts';

/** A public model id: `<vendor>/<model>` (see `ids.ts`). */
export { MODEL_ID_PATTERN, MODEL_ID_RULE };

const Credits = Type.Number({ minimum: 0, description: 'Credits' });
/** A key of `imagePrices`: `<quality>/<size>`, either part `*`. */
const IMAGE_PRICE_KEY = '^[A-Za-z0-9_*-]+/[A-Za-z0-9_*-]+$';

const PLAIN_PRICES = {
  prompt: 'Credits per 1M prompt (input) tokens',
  completion: 'Credits per 1M completion (output) tokens',
  request: 'Credits per call',
  second: 'Credits per second of provider compute',
  image: 'Credits per output image',
  webSearch: 'Credits per web search the provider ran',
} as const;

/** Detailed token prices: unset ones fall back to the prompt (input kinds) or completion (output kinds) price. */
const DETAILED_PRICES = {
  cacheRead: 'Credits per 1M input tokens read from the prompt cache (unset: the prompt price)',
  cacheWrite:
    'Credits per 1M input tokens written to the prompt cache for 5 minutes, the default lifetime (unset: the prompt price)',
  cacheWrite1h:
    'Credits per 1M input tokens written to the prompt cache for 1 hour (`cache_control.ttl: "1h"`; Anthropic bills 2× the input price). Unset (null): the model refuses ttl "1h" with a 400',
  reasoning: 'Credits per 1M reasoning tokens (unset: the completion price)',
  audioInput: 'Credits per 1M audio input tokens (unset: the prompt price)',
  audioOutput: 'Credits per 1M audio output tokens (unset: the completion price)',
} as const;

const ANSWER_TIMEOUT =
  "Milliseconds this model's answer may take to begin (a non-streaming answer's whole body, a stream's first output) before the next of its `fallbacks` is tried, or 504 answered when none is left. Null: `UPSTREAM_TIMEOUT_MS`. Set it on a model known to answer fast, so that a provider that hangs hands over to a fallback in seconds rather than after the global deadline.";

const REASONS =
  'Whether the model takes a reasoning effort: an Anthropic Messages `thinking.budget_tokens` reaches an OpenAI-compatible model as the `reasoning_effort` it amounts to (OpenRouter: `reasoning.max_tokens`) only when true; when false the budget is left out, since such a model cannot think and many answer 400 to `reasoning_effort`. An effort the client names itself is always sent. Omitted or null: the default, from the provider\'s `/models` list (OpenRouter\'s `supported_parameters`) at a sync, else the model family (README "The catalogue").';

const Nullable = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });

/** Prices as `GET /api/v1/models` shows them: every price a number, an unset detailed price shown as the price it falls back to. */
const PricingSchema = Type.Object({
  prompt: Type.Number({ description: PLAIN_PRICES.prompt }),
  completion: Type.Number({ description: PLAIN_PRICES.completion }),
  cacheRead: Type.Number({ description: DETAILED_PRICES.cacheRead }),
  cacheWrite: Type.Number({ description: DETAILED_PRICES.cacheWrite }),
  cacheWrite1h: Nullable(DETAILED_PRICES.cacheWrite1h),
  reasoning: Type.Number({ description: DETAILED_PRICES.reasoning }),
  audioInput: Type.Number({ description: DETAILED_PRICES.audioInput }),
  audioOutput: Type.Number({ description: DETAILED_PRICES.audioOutput }),
  request: Type.Number({ description: PLAIN_PRICES.request }),
  image: Type.Number({ description: PLAIN_PRICES.image }),
  second: Type.Number({ description: PLAIN_PRICES.second }),
  webSearch: Type.Number({ description: PLAIN_PRICES.webSearch }),
});

/** Prices as the operator API shows them: an unset detailed price is null. */
const AdminPricingSchema = Type.Object({
  prompt: Type.Number({ description: PLAIN_PRICES.prompt }),
  completion: Type.Number({ description: PLAIN_PRICES.completion }),
  cacheRead: Nullable(DETAILED_PRICES.cacheRead),
  cacheWrite: Nullable(DETAILED_PRICES.cacheWrite),
  cacheWrite1h: Nullable(DETAILED_PRICES.cacheWrite1h),
  reasoning: Nullable(DETAILED_PRICES.reasoning),
  audioInput: Nullable(DETAILED_PRICES.audioInput),
  audioOutput: Nullable(DETAILED_PRICES.audioOutput),
  request: Type.Number({ description: PLAIN_PRICES.request }),
  image: Type.Number({ description: PLAIN_PRICES.image }),
  second: Type.Number({ description: PLAIN_PRICES.second }),
  webSearch: Type.Number({ description: PLAIN_PRICES.webSearch }),
});

const OptionalDetailed = (description: string) =>
  Type.Optional(Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description }));

/** A model as `GET /api/v1/models` lists it (OpenAI list entry plus OpenRouter-style details). */
export const PublicModelSchema = Type.Object({
  id: Type.String({ examples: ['tollgate/echo'] }),
  object: Type.Literal('model'),
  created: Type.Integer(),
  owned_by: Type.String(),
  name: Type.String(),
  pricing: PricingSchema,
  context_length: Type.Union([Type.Integer(), Type.Null()]),
  modalities: Type.Object({ input: Type.Array(Type.String()), output: Type.Array(Type.String()) }),
  test: Type.Optional(Type.Boolean({ description: 'A built-in test model (no real inference).' })),
  // Anthropic's model object beside OpenAI's, so one answer serves both SDKs' `models.list` / `retrieve`.
  type: Type.Literal('model', { description: "Anthropic's form of `object`." }),
  display_name: Type.String({ description: "Anthropic's form of `name`." }),
  created_at: Type.String({ format: 'date-time', description: "Anthropic's form of `created` (RFC 3339)." }),
});

/** `GET /api/v1/models`: OpenAI's list, with Anthropic's paging fields (one page: nothing more to fetch). */
const ModelListSchema = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(PublicModelSchema),
  has_more: Type.Literal(false, { description: 'Anthropic paging: the list is always whole.' }),
  first_id: Type.Union([Type.String(), Type.Null()]),
  last_id: Type.Union([Type.String(), Type.Null()]),
});

/** A model as the operator API shows it. */
const AdminModelSchema = Type.Object({
  id: Type.String(),
  provider: Type.String(),
  upstreamModel: Type.String(),
  name: Type.String(),
  pricing: AdminPricingSchema,
  contextLength: Type.Union([Type.Integer(), Type.Null()]),
  maxOutputTokens: Type.Union([Type.Integer(), Type.Null()]),
  maxPredictSeconds: Type.Union([Type.Integer(), Type.Null()]),
  imageTokens: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Prompt tokens held per image part in a chat; null: image parts are refused.',
  }),
  imagePrices: Type.Record(Type.String(), Type.Number(), {
    description: 'Images API credits per image by "<quality>/<size>" (`*` for either).',
  }),
  inputModalities: Type.Array(Type.String()),
  outputModalities: Type.Array(Type.String()),
  fallbacks: Type.Array(Type.String()),
  answerTimeoutMs: Type.Union([Type.Integer(), Type.Null()], { description: ANSWER_TIMEOUT }),
  reasons: Type.Boolean({ description: REASONS }),
  reasonsByOperator: Type.Boolean({
    description: '`reasons` was set by the operator (a sync keeps it); false: a default, which a sync refreshes.',
  }),
  isTest: Type.Boolean(),
  enabled: Type.Boolean(),
  updatedAt: Type.String({ format: 'date-time' }),
});

const PutModelBody = Type.Object(
  {
    provider: Type.String({
      pattern: '^[a-z0-9][a-z0-9-]*$',
      description: 'openai, openrouter, anthropic, replicate, echo, or a configured provider name',
    }),
    upstreamModel: Type.String({ minLength: 1, maxLength: 300 }),
    name: Type.Optional(Type.String({ maxLength: 300 })),
    pricing: Type.Object(
      {
        prompt: Type.Optional(Credits),
        completion: Type.Optional(Credits),
        request: Type.Optional(Credits),
        second: Type.Optional(Credits),
        image: Type.Optional(Credits),
        webSearch: Type.Optional(Credits),
        cacheRead: OptionalDetailed(DETAILED_PRICES.cacheRead),
        cacheWrite: OptionalDetailed(DETAILED_PRICES.cacheWrite),
        cacheWrite1h: OptionalDetailed(DETAILED_PRICES.cacheWrite1h),
        reasoning: OptionalDetailed(DETAILED_PRICES.reasoning),
        audioInput: OptionalDetailed(DETAILED_PRICES.audioInput),
        audioOutput: OptionalDetailed(DETAILED_PRICES.audioOutput),
      },
      { additionalProperties: false },
    ),
    contextLength: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1, maximum: MAX_CATALOGUE_TOKENS }), Type.Null()]),
    ),
    maxOutputTokens: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1, maximum: MAX_CATALOGUE_TOKENS }), Type.Null()]),
    ),
    maxPredictSeconds: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 86400 }), Type.Null()])),
    imageTokens: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000 }), Type.Null()], {
        description:
          'Prompt tokens one image part may cost (held per image in a chat). Omitted: the family default when `inputModalities` has `image` (README "The hold\'s worst case per endpoint"); null: image parts are refused.',
      }),
    ),
    imagePrices: Type.Optional(
      Type.Record(Type.String({ pattern: IMAGE_PRICE_KEY, maxLength: 100 }), Credits, {
        maxProperties: 50,
        description:
          'Images API credits per image by `"<quality>/<size>"`, either part `*` (e.g. `{ "hd/1024x1792": 0.12, "*/*": 0.04 }`). Empty: the flat `pricing.image` applies only to requests that name no quality or size.',
      }),
    ),
    inputModalities: Type.Optional(Type.Array(Type.String({ enum: ['text', 'image', 'audio', 'file', 'video'] }))),
    outputModalities: Type.Optional(
      Type.Array(Type.String({ enum: ['text', 'image', 'audio', 'embedding', 'video'] })),
    ),
    fallbacks: Type.Optional(Type.Array(Type.String({ pattern: MODEL_ID_PATTERN }), { maxItems: 5 })),
    answerTimeoutMs: Type.Optional(
      Type.Union([Type.Integer({ minimum: MIN_ANSWER_TIMEOUT_MS, maximum: MAX_ANSWER_TIMEOUT_MS }), Type.Null()], {
        description: ANSWER_TIMEOUT,
      }),
    ),
    reasons: Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { description: REASONS })),
    isTest: Type.Optional(Type.Boolean()),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** The `GET /api/v1/models` entry of a model (also `GET /api/v1/models/:vendor/:model`'s answer). */
export function publicModel(model: CatalogueModel) {
  return {
    id: model.id,
    object: 'model' as const,
    created: Math.floor(model.updatedAt / 1000),
    owned_by: model.id.split('/')[0],
    name: model.name,
    pricing: pricingToCredits(model.pricing),
    context_length: model.contextLength,
    modalities: { input: model.inputModalities, output: model.outputModalities },
    ...(model.isTest ? { test: true } : {}),
    type: 'model' as const,
    display_name: model.name,
    created_at: new Date(Math.floor(model.updatedAt / 1000) * 1000).toISOString(),
  };
}

function adminModel(model: CatalogueModel) {
  const imagePrices = Object.fromEntries(
    Object.entries(model.imagePrices).map(([key, micros]) => [key, microsToCredits(micros)]),
  );
  return {
    ...model,
    pricing: pricingToAdminCredits(model.pricing),
    imagePrices,
    updatedAt: new Date(model.updatedAt).toISOString(),
  };
}

/** `imagePrices` in credits as micro-credits; 400 for a price with more than 6 decimals. */
function imagePricesFromCredits(prices: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(prices).map(([key, credits]) => {
      const micros = creditsToMicros(credits);
      if (micros === null || micros < 0)
        throw new ApiError(
          'INVALID_REQUEST',
          `imagePrices["${key}"] must be a non-negative number of credits ${CREDITS_RULE}.`,
        );
      return [key, micros];
    }),
  );
}

/**
 * `reasons` as a PUT sets it: the operator's value, or (omitted or null) the default: the one a sync found for the
 * same upstream model, else the family's.
 */
function reasonsOf(
  body: { upstreamModel: string; reasons?: boolean | null },
  before: CatalogueModel | null,
): { reasons: boolean; reasonsByOperator: boolean } {
  if (typeof body.reasons === 'boolean') return { reasons: body.reasons, reasonsByOperator: true };
  const found = before && !before.reasonsByOperator && before.upstreamModel === body.upstreamModel;
  return { reasons: found ? before.reasons : familyReasons(body.upstreamModel), reasonsByOperator: false };
}

/** `PUT /api/admin/models/<id>`: creates or replaces the model `id`. */
async function putModel(ctx: CatalogueDeps, id: string, body: Static<typeof PutModelBody>) {
  if (!ctx.providers.knownNames().includes(body.provider)) {
    throw new ApiError(
      'INVALID_REQUEST',
      `Unknown provider "${body.provider}"; use one of ${ctx.providers.knownNames().join(', ')}.`,
    );
  }
  if (body.fallbacks?.includes(id)) throw new ApiError('INVALID_REQUEST', 'A model cannot be its own fallback.');
  const before = await getModel(ctx.db, id);
  const saved = await upsertModel(
    ctx.db,
    {
      id,
      provider: body.provider,
      upstreamModel: body.upstreamModel,
      name: body.name ?? before?.name ?? id,
      pricing: pricingFromCredits(body.pricing),
      contextLength: body.contextLength ?? null,
      maxOutputTokens: body.maxOutputTokens ?? null,
      maxPredictSeconds: body.maxPredictSeconds ?? null,
      imageTokens:
        body.imageTokens !== undefined
          ? body.imageTokens
          : defaultImageTokens(body.upstreamModel, body.inputModalities ?? ['text']),
      imagePrices: imagePricesFromCredits(body.imagePrices ?? {}),
      inputModalities: body.inputModalities ?? ['text'],
      outputModalities: body.outputModalities ?? ['text'],
      fallbacks: body.fallbacks ?? [],
      answerTimeoutMs: body.answerTimeoutMs ?? null,
      ...reasonsOf(body, before),
      isTest: body.isTest ?? false,
      enabled: body.enabled ?? true,
    },
    ctx.clock.now(),
  );
  ctx.models.announceChange();
  return adminModel(saved);
}

const security = [{ admin: [] }];

/** `GET /api/v1/models` and the operator's catalogue routes. */
export function registerModelRoutes(app: App, ctx: CatalogueDeps): void {
  app.get(
    '/api/v1/models',
    {
      schema: {
        tags: ['ai'],
        summary: "List the models (OpenAI format, with prices in credits, and Anthropic's fields)",
        description:
          'Every enabled model of the catalogue; with an API key created with `models`, only the models that key may call (README "API keys").',
        security: [{ bearer: [] }],
        response: { 200: ModelListSchema },
      },
      config: { auth: ['ai:models'] },
    },
    async (request) => {
      // A key limited to some models lists only those: what it may call is what it sees.
      const allowed = principalOf(request).models;
      const data = (await ctx.models.list()).filter((model) => allowsModel(allowed, model.id)).map(publicModel);
      return {
        object: 'list' as const,
        data,
        has_more: false as const,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
      };
    },
  );

  app.get(
    '/api/admin/models',
    {
      schema: {
        tags: ['admin'],
        summary: 'List every model of the catalogue, disabled ones included',
        security,
        response: { 200: Type.Object({ data: Type.Array(AdminModelSchema) }) },
      },
      config: { admin: true },
    },
    async () => ({ data: (await listAllModels(ctx.db)).map(adminModel) }),
  );

  // The model's name may hold slashes (Groq's, Together's and vLLM's ids do): every shape of its path takes it.
  for (const path of modelPaths('/api/admin/models', { checked: true, documentEncoded: false })) {
    app.put(
      path.url,
      {
        schema: {
          tags: ['admin'],
          summary: 'Create or replace a model of the catalogue',
          description:
            'The id is the path after `/api/admin/models/`: `openai/gpt-4o-mini`, or with more slashes `openai/meta-llama/llama-3`, written as they are or URL-encoded (`openai%2Fmeta-llama%2Fllama-3`).',
          hide: path.hide,
          security,
          params: path.params,
          body: PutModelBody,
          response: { 200: AdminModelSchema },
        },
        config: { admin: true },
        ...(path.preValidation ? { preValidation: path.preValidation } : {}),
      },
      async (request) => putModel(ctx, path.idOf(request.params), request.body as Static<typeof PutModelBody>),
    );
  }

  app.post(
    '/api/admin/models/sync',
    {
      schema: {
        tags: ['admin'],
        summary: "Import the configured providers' models and USD prices (converted with CREDITS_PER_USD)",
        security,
        response: {
          200: Type.Object({
            providers: Type.Array(
              Type.Object({
                provider: Type.String(),
                imported: Type.Integer(),
                updated: Type.Integer(),
                needsPricing: Type.Array(Type.String(), {
                  description:
                    'The listed models that still wait for a price: listed without one, and neither priced nor enabled by the operator (imported disabled).',
                }),
                error: Type.Optional(Type.String()),
              }),
            ),
          }),
        },
      },
      config: { admin: true },
    },
    async () => syncModels(ctx),
  );
}
