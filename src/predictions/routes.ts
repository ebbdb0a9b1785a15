import Type from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiErrorSchema } from '#wire/errors.ts';
import type { App } from '../platform/http/server.ts';
import { principalOf } from '../platform/http/server.ts';
import type { PredictionsDeps } from './deps.ts';
import { requireScope } from '../platform/http/principal.ts';
import { ApiError, errors } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { getModel, modelsPinnedToVersion } from '../models/catalogue.ts';
import { requireModelAllowed } from '../models/allowed.ts';
import { Meter } from '../billing/meter.ts';
import { applyPredictionUpdate, settlePrediction } from './finalize.ts';
import {
  DEFAULT_MAX_PREDICT_SECONDS,
  outputsAsked,
  predictTimeMicros,
  TERMINAL_STATUSES,
  worstCaseCost,
} from './pricing.ts';
import { ReplicateClient, type ReplicatePrediction } from './replicate-client.ts';
import { findCallerPrediction, findPrediction, predictionResource } from './store.ts';
import { predictionsDb } from './schema.ts';

/** The path Replicate calls back; `webhook` of every prediction is `${PUBLIC_BASE_URL}` + this. */
export const REPLICATE_WEBHOOK_PATH = '/api/webhooks/replicate';

/** The scopes that may create predictions at all; the model's output then narrows it to one. */
const PREDICTION_SCOPES = ['ai:images', 'ai:audio'] as const;

/** The permission a model's predictions need: `ai:audio` for audio output, `ai:images` for images and anything else. */
export function permissionForOutputs(outputModalities: readonly string[]): 'ai:images' | 'ai:audio' {
  return outputModalities.includes('audio') && !outputModalities.includes('image') ? 'ai:audio' : 'ai:images';
}

/** The Replicate adapter, or null when `REPLICATE_API_TOKEN` is not set. */
export function replicateClientOf(ctx: PredictionsDeps): ReplicateClient | null {
  const token = ctx.config.REPLICATE_API_TOKEN;
  return token
    ? new ReplicateClient({
        baseUrl: ctx.config.REPLICATE_BASE_URL,
        token,
        timeoutMs: ctx.config.UPSTREAM_TIMEOUT_MS,
        idleTimeoutMs: ctx.config.UPSTREAM_IDLE_TIMEOUT_MS,
      })
    : null;
}

const Prediction = Type.Object({
  id: Type.String({ examples: ['pred_3kT9xQ2mN7pR4sV8wY1z'] }),
  replicate_id: Type.String({ description: "Replicate's id of the prediction (the one its webhooks carry)" }),
  model: Type.String(),
  status: Type.String({ description: '`starting`, `processing`, `succeeded`, `failed` or `canceled`' }),
  output: Type.Unknown(),
  error: Type.Union([Type.String(), Type.Null()]),
  metrics: Type.Object({ predict_time: Type.Optional(Type.Number()) }),
  created_at: Type.String({ format: 'date-time' }),
  completed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  held: Type.Number({ description: 'Credits held for the worst case' }),
  cost: Type.Union([Type.Number(), Type.Null()], { description: 'Credits charged; null until billing is final' }),
  urls: Type.Object({ get: Type.String() }),
});

const CreateBody = Type.Object({
  model: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Model id `<vendor>/<model>`' })),
  version: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'Alias of `model` (Replicate clients send `version`)' }),
  ),
  input: Type.Record(Type.String(), Type.Unknown(), { description: "The model's input, passed to Replicate as is" }),
});

const security = [{ bearer: [] }];

/** What both create paths answer. */
const CREATED_RESPONSES = {
  201: Prediction,
  400: ApiErrorSchema,
  402: ApiErrorSchema,
  403: ApiErrorSchema,
  404: ApiErrorSchema,
  429: ApiErrorSchema,
  502: ApiErrorSchema,
  503: ApiErrorSchema,
};

/**
 * Applies what Replicate said (on creation, or on a read) and settles when it was final. Used where no
 * webhook delivery is involved; the exactly-once claim is the same as the webhook's.
 */
async function applyFromUpstream(ctx: PredictionsDeps, upstream: ReplicatePrediction): Promise<void> {
  const applied = await ctx.db.transaction().execute((trx) => applyPredictionUpdate(trx, upstream, ctx.clock.now()));
  if (applied.finalized && applied.predictionId) await settlePrediction(ctx, applied.predictionId);
}

/** The fields of Replicate's create body that ask Replicate to call the caller back. */
const CALLBACK_FIELDS = ['webhook', 'webhook_events_filter'] as const;

/**
 * Refuses a caller's own `webhook` (400 naming it) rather than drop it: Replicate's callbacks come to Tollgate,
 * which finalizes billing on them, and a caller waiting for its own callback would wait forever.
 */
function refuseCallerWebhook(body: Record<string, unknown>): void {
  const field = CALLBACK_FIELDS.find((name) => body[name] !== undefined);
  if (field)
    throw new ApiError(
      'UNSUPPORTED_PARAMETER',
      `The field "${field}" is not supported: Replicate's webhooks come to Tollgate, which bills on them, and Tollgate does not call a prediction's own webhook. Read the prediction instead (GET /api/v1/predictions/:id, or the replicate client's wait).`,
      { details: { param: field } },
    );
}

/**
 * The catalogue id a `version` names: a catalogue id as it is, or a bare Replicate version id (what the
 * `replicate` client sends for `run("owner/name:<version>")`) as the one model pinned to it. A version pinned by
 * several models cannot choose between them (400); one pinned by none is left to be not found.
 */
async function modelOfVersion(ctx: PredictionsDeps, version: string): Promise<string> {
  if (!/^[0-9a-f]{16,}$/i.test(version)) return version;
  const pinned = await modelsPinnedToVersion(ctx.db, version);
  if (pinned.length > 1)
    throw errors.invalid(
      `The version ${version} is pinned by several models (${pinned.map((model) => model.id).join(', ')}); send one of them as model.`,
    );
  return pinned[0]?.id ?? version;
}

/**
 * Starts a prediction of `modelId` (a catalogue id) with `input`: holds its worst case, asks Replicate, stores
 * it and answers 201 with it. Shared by `POST /api/v1/predictions` and Replicate's per-model path.
 */
async function createPrediction(
  ctx: PredictionsDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  modelId: string,
  input: Record<string, unknown>,
): Promise<FastifyReply> {
  const principal = principalOf(request);
  const model = await getModel(ctx.db, modelId);
  if (!model || !model.enabled) throw new ApiError('MODEL_NOT_FOUND', `The model ${modelId} does not exist.`);
  // Security invariant: an API key limited to some models starts no prediction of another (before any hold).
  requireModelAllowed(principal, model.id);
  if (model.provider !== 'replicate')
    throw errors.invalid(`The model ${modelId} is not a Replicate model; predictions run only on Replicate models.`);
  requireScope(principal, [permissionForOutputs(model.outputModalities)]);
  const client = replicateClientOf(ctx);
  if (!client)
    throw new ApiError('SERVICE_UNAVAILABLE', 'Replicate is not configured (REPLICATE_API_TOKEN).', {
      missingSetting: 'REPLICATE_API_TOKEN',
    });

  const pricing = { request: model.pricing.request, second: model.pricing.second, image: model.pricing.image };
  const heldSeconds = model.maxPredictSeconds ?? DEFAULT_MAX_PREDICT_SECONDS;
  const asked = outputsAsked(input);
  const held = worstCaseCost(pricing, heldSeconds, asked);
  // The prediction runs at Replicate, not here: a detached meter, resumed by whoever finalizes it.
  // Invariant: until the prediction is stored, nothing but this request knows the hold, so it lives only a
  // synchronous call's lifetime: a process that dies while Replicate answers the create leaves credits reserved
  // for HOLD_TTL_SECONDS, not PREDICTION_HOLD_TTL_SECONDS (an outside check found 24 h that nothing freed).
  // The stored prediction's hold is extended to the prediction's lifetime below.
  const meter = await Meter.open(ctx, principal, 'prediction', model.id, held, { detached: true });

  // From here the hold is open: every way out that does not store the prediction releases it, so a failed
  // start never leaves credits reserved until the hold's expiry.
  let id: string;
  let upstream: ReplicatePrediction;
  try {
    // The prediction exists from the moment Replicate is asked: a create answered already final ran within the
    // call, and the time Tollgate measures for it (when its predict_time is unusable) starts here.
    const askedAt = ctx.clock.now();
    upstream = await client.create(
      model.upstreamModel,
      input,
      `${ctx.config.PUBLIC_BASE_URL}${REPLICATE_WEBHOOK_PATH}`,
    );
    id = newId('pred');
    const now = ctx.clock.now();
    await predictionsDb(ctx.db)
      .insertInto('predictions')
      .values({
        id,
        replicate_id: upstream.id,
        user_id: principal.userId,
        app_id: principal.appId,
        key_id: principal.keyId,
        model: model.id,
        upstream_model: model.upstreamModel,
        hold_id: meter.holdId!,
        held,
        price_request: pricing.request,
        price_second: pricing.second,
        price_image: pricing.image,
        held_seconds: heldSeconds,
        outputs_asked: asked,
        // `starting` whatever Replicate answered: Tollgate does not wait (`Prefer: wait`), and the replicate
        // client's run() polls only a `starting` prediction (it took `processing` for done and returned a null
        // output). A final answer is applied just below, through the exactly-once claim.
        status: 'starting',
        output: upstream.output === undefined || upstream.output === null ? null : JSON.stringify(upstream.output),
        error: null,
        predict_time_us: predictTimeMicros(upstream.metrics),
        charge: null,
        captured: null,
        created_at: askedAt,
        updated_at: now,
        checked_at: null,
        finalized_at: null,
        settled_at: null,
        cancel_requested_at: null,
      })
      .execute();
  } catch (error) {
    await meter
      .release(model, 'failed')
      .catch((releaseError) =>
        request.log.error(
          { err: releaseError, holdId: meter.holdId },
          'could not release the hold of a failed prediction',
        ),
      );
    throw error;
  }
  // Stored: the webhook or reconciliation finalizes it now, in any process. Should this extension fail (or the
  // short hold have expired meanwhile), the prediction is still charged when it ends, after its hold's expiry.
  const extended = await meter.extend(ctx.config.PREDICTION_HOLD_TTL_SECONDS * 1000).catch((error) => {
    request.log.error({ err: error, holdId: meter.holdId }, "could not extend a started prediction's hold");
    return false;
  });
  if (!extended)
    request.log.warn({ predictionId: id, holdId: meter.holdId }, "a started prediction's hold was not extended");
  request.log.info({ predictionId: id, replicateId: upstream.id, model: model.id, held }, 'prediction started');
  // A model fast enough to be done already is finalized now, through the same exactly-once claim.
  if (TERMINAL_STATUSES.has(upstream.status)) await applyFromUpstream(ctx, upstream);
  return reply.code(201).send(predictionResource((await findPrediction(ctx.db, id))!, ctx.config.PUBLIC_BASE_URL));
}

/**
 * `POST /api/v1/predictions` (and Replicate's per-model path), `GET /api/v1/predictions/:id` and
 * `POST /api/v1/predictions/:id/cancel` (Replicate-style asynchronous predictions).
 */
export function registerPredictionRoutes(app: App, ctx: PredictionsDeps): void {
  app.post(
    '/api/v1/predictions',
    {
      schema: {
        tags: ['predictions'],
        summary: 'Start a Replicate prediction',
        description:
          'Holds the worst-case cost (`request + second × maxPredictSeconds + image × num_outputs`), starts the prediction on Replicate and returns at once; the webhook (or reconciliation) finalizes the charge. Needs `ai:images`, or `ai:audio` for audio models.',
        security,
        body: CreateBody,
        response: CREATED_RESPONSES,
      },
      config: { auth: PREDICTION_SCOPES },
    },
    async (request, reply) => {
      const body = request.body as { model?: string; version?: string; input: Record<string, unknown> };
      refuseCallerWebhook(body);
      const modelId = body.model ?? (body.version ? await modelOfVersion(ctx, body.version) : undefined);
      if (!modelId) throw errors.invalid('model is required.');
      return createPrediction(ctx, request, reply, modelId, body.input);
    },
  );

  app.post(
    '/api/v1/models/:vendor/:model/predictions',
    {
      schema: {
        tags: ['predictions'],
        summary: 'Start a Replicate prediction of a model named in the path',
        description:
          'Replicate\'s own path for a model\'s predictions, which the official `replicate` client calls for `predictions.create({ model })` and `run("<vendor>/<model>")`: the same as `POST /api/v1/predictions` with `model` `<vendor>/<model>`.',
        security,
        params: Type.Object({
          vendor: Type.String({ maxLength: 100 }),
          model: Type.String({ maxLength: 200 }),
        }),
        body: Type.Object({
          input: Type.Record(Type.String(), Type.Unknown(), {
            description: "The model's input, passed to Replicate as is",
          }),
        }),
        response: CREATED_RESPONSES,
      },
      config: { auth: PREDICTION_SCOPES },
    },
    async (request, reply) => {
      const { vendor, model } = request.params as { vendor: string; model: string };
      refuseCallerWebhook(request.body as Record<string, unknown>);
      return createPrediction(
        ctx,
        request,
        reply,
        `${vendor}/${model}`,
        (request.body as { input: Record<string, unknown> }).input,
      );
    },
  );

  app.get(
    '/api/v1/predictions/:id',
    {
      schema: {
        tags: ['predictions'],
        summary: 'Read one of your predictions',
        description:
          'While the prediction is not final, its state is refreshed from Replicate (and finalized when Replicate says it is done).',
        security,
        params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
        response: { 200: Prediction, 401: ApiErrorSchema, 403: ApiErrorSchema, 404: ApiErrorSchema },
      },
      config: { auth: PREDICTION_SCOPES },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      let row = await findCallerPrediction(ctx.db, principalOf(request), id);
      if (!row) throw errors.notFound('Prediction');
      const client = replicateClientOf(ctx);
      if (row.finalized_at === null && client) {
        // Best effort: a Replicate hiccup still answers with what is stored.
        try {
          await applyFromUpstream(ctx, await client.get(row.replicate_id));
          row = (await findPrediction(ctx.db, id))!;
        } catch (error) {
          request.log.warn({ err: error, predictionId: id }, 'could not refresh the prediction from Replicate');
        }
      }
      return predictionResource(row, ctx.config.PUBLIC_BASE_URL);
    },
  );

  app.post(
    '/api/v1/predictions/:id/cancel',
    {
      schema: {
        tags: ['predictions'],
        summary: 'Cancel one of your predictions',
        description:
          "Asks Replicate to stop the prediction (the official `replicate` client's `predictions.cancel`). A prediction the caller cancels is charged for what it used (`request + second × predict_time + image × outputs produced`), as a stream the client cuts is; one already final is answered as it is.",
        security,
        params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
        response: {
          200: Prediction,
          401: ApiErrorSchema,
          403: ApiErrorSchema,
          404: ApiErrorSchema,
          502: ApiErrorSchema,
          503: ApiErrorSchema,
        },
      },
      config: { auth: PREDICTION_SCOPES },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const row = await findCallerPrediction(ctx.db, principalOf(request), id);
      if (!row) throw errors.notFound('Prediction');
      if (row.finalized_at !== null) return predictionResource(row, ctx.config.PUBLIC_BASE_URL);
      const client = replicateClientOf(ctx);
      if (!client)
        throw new ApiError('SERVICE_UNAVAILABLE', 'Replicate is not configured (REPLICATE_API_TOKEN).', {
          missingSetting: 'REPLICATE_API_TOKEN',
        });
      // Invariant: the request is recorded before Replicate is asked, so that whichever update finalizes the
      // prediction (this answer, its webhook, a read, reconciliation) knows the caller stopped it.
      await predictionsDb(ctx.db)
        .updateTable('predictions')
        .set({ cancel_requested_at: ctx.clock.now() })
        .where('id', '=', row.id)
        .where('cancel_requested_at', 'is', null)
        .execute();
      await applyFromUpstream(ctx, await client.cancel(row.replicate_id));
      return predictionResource((await findPrediction(ctx.db, id))!, ctx.config.PUBLIC_BASE_URL);
    },
  );
}
