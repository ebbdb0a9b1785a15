import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import { principalOf } from '../platform/http/server.ts';
import type { ProviderAdapter } from '../providers/types.ts';
import { Meter, type UsageKind } from '../billing/meter.ts';
import { callWithFallbacks, candidatesOf, ClientGone } from './upstream.ts';
import { requireModelAllowed } from '../models/allowed.ts';
import type { Principal } from '../platform/http/principal.ts';

/**
 * The catalogue model of a public id (cached) that `principal` may call: 404 MODEL_NOT_FOUND when it is unknown
 * or disabled, 403 PERMISSION_DENIED when the caller's API key is limited to other models (models/allowed.ts).
 *
 * Security invariant: every call resolves its model here (and its fallbacks in `candidatesOf`) before anything
 * is held or sent upstream, so a key limited to some models can neither call nor be held for another.
 */
export async function resolveModel(ctx: GatewayDeps, id: string, principal: Principal): Promise<CatalogueModel> {
  const model = await ctx.models.get(id);
  if (!model)
    throw new ApiError('MODEL_NOT_FOUND', `The model "${id}" does not exist; GET /api/v1/models lists the models.`);
  requireModelAllowed(principal, model.id);
  return model;
}

/**
 * A signal that aborts when the client closes the connection before its answer was written in full, or when a
 * shutdown cuts the calls still running (`shutdown`, whose reason, an ApiError, becomes this signal's: the call
 * then ends with that error instead of going silent, see {@link callWithFallbacks} and `streamCall`).
 */
export function clientSignal(reply: FastifyReply, shutdown: AbortSignal): AbortSignal {
  const controller = new AbortController();
  const raw = reply.raw;
  const cut = () => controller.abort(shutdown.reason);
  shutdown.addEventListener('abort', cut, { once: true });
  raw.once('close', () => {
    shutdown.removeEventListener('abort', cut);
    if (!raw.writableFinished) controller.abort(new DOMException('The client went away.', 'AbortError'));
  });
  return controller.signal;
}

/** What a one-shot call (embeddings, images, speech…) used, in billing terms. */
export interface OneShotUsage {
  cost: number;
  promptTokens: number;
  completionTokens: number;
}

/**
 * The shape every non-chat endpoint shares: resolve the model and its fallbacks, hold the worst case over
 * them, call upstream (fallbacks on 5xx or timeout), then settle on what the answer says it used — or
 * release the hold when nothing came back. Answers what was used and `charged` (micro-credits captured).
 */
export async function meteredCall<T>(
  ctx: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  options: {
    kind: UsageKind;
    modelId: string;
    /** Refuses a model whose provider lacks the capability (400), before anything is held. */
    supports: (adapter: ProviderAdapter) => boolean;
    /**
     * Why this request cannot be held for on a model (a field it cannot price), or null. The model asked for
     * answers the error (a 400); a fallback that refuses is left out.
     */
    refuses?: (model: CatalogueModel) => ApiError | null;
    worstCase: (model: CatalogueModel) => number;
    call: (adapter: ProviderAdapter, model: CatalogueModel, signal: AbortSignal) => Promise<T>;
    usage: (result: T, model: CatalogueModel) => OneShotUsage;
  },
): Promise<{ result: T; model: CatalogueModel; used: OneShotUsage; charged: number } | null> {
  const principal = principalOf(request);
  const model = await resolveModel(ctx, options.modelId, principal);
  const candidates = (await candidatesOf(ctx, model, principal)).filter((m) => {
    const adapter = ctx.providers.get(m.provider);
    return adapter && options.supports(adapter);
  });
  if (candidates[0]?.id !== model.id)
    throw new ApiError('INVALID_REQUEST', `The model "${model.id}" does not support ${options.kind}.`);
  if (options.refuses) {
    const refusal = options.refuses(model);
    if (refusal) throw refusal;
    // Filtered in place: the hold and the calls below are over the candidates that can take this request.
    candidates.splice(0, candidates.length, ...candidates.filter((m) => options.refuses!(m) === null));
  }
  const meter = await Meter.open(
    ctx,
    principal,
    options.kind,
    model.id,
    Math.max(...candidates.map(options.worstCase)),
  );
  let answered;
  try {
    answered = await callWithFallbacks(ctx, candidates, clientSignal(reply, ctx.shutdown), (m, adapter, signal) =>
      options.call(adapter, m, signal),
    );
  } catch (error) {
    await meter.release(model, error instanceof ClientGone ? 'client_aborted' : 'upstream_error');
    if (error instanceof ClientGone) {
      reply.hijack();
      return null;
    }
    throw error;
  }
  answered.attempt.dispose();
  // Invariant: a call that answered closes its meter. A usage reader that throws (a provider's new shape)
  // would leave the hold open, kept alive by the meter's heartbeat, so the call is charged its hold instead.
  let used: ReturnType<typeof options.usage>;
  try {
    used = options.usage(answered.result, answered.model);
  } catch (error) {
    request.log.error(
      { err: error, model: answered.model.id },
      'reading the upstream usage failed; the call is charged its hold',
    );
    used = { cost: meter.held, promptTokens: 0, completionTokens: 0 };
  }
  const charged = await meter.settle({ model: answered.model, ...used, status: 'ok' });
  return { result: answered.result, model: answered.model, used, charged };
}
