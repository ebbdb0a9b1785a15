import type { GatewayDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import { isAbortError, UpstreamError, type ProviderAdapter } from '../providers/types.ts';
import type { Principal } from '../platform/http/principal.ts';
import { allowsModel } from '../models/allowed.ts';

/** The client went away: nothing is answered, the call is settled for what was produced. */
export class ClientGone extends Error {
  override name = 'ClientGone';
}

/**
 * One try against one upstream: an abort signal shared by the client's disconnect and the upstream
 * deadline (the time allowed for the answer to begin: {@link answerDeadlineOf}). `began()` stops the deadline
 * once output flows; the client's disconnect still aborts until `dispose()`.
 */
export class UpstreamAttempt {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #client: AbortSignal;
  readonly #onClientAbort = () => this.#controller.abort(new DOMException('The client went away.', 'AbortError'));
  timedOut = false;
  /** The deadline this attempt was given, for the message of its timeout. */
  readonly timeoutMs: number;

  constructor(client: AbortSignal, timeoutMs: number) {
    this.#client = client;
    this.timeoutMs = timeoutMs;
    this.#timer = setTimeout(() => {
      this.timedOut = true;
      this.#controller.abort(new DOMException('The upstream deadline passed.', 'TimeoutError'));
    }, timeoutMs);
    if (client.aborted) this.#onClientAbort();
    else client.addEventListener('abort', this.#onClientAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Output began: from here only the client's disconnect aborts. */
  began(): void {
    clearTimeout(this.#timer);
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#client.removeEventListener('abort', this.#onClientAbort);
  }
}

/**
 * The time `model`'s answer may take to begin before its attempt is abandoned: the model's own
 * `answerTimeoutMs` when the operator set one (a model known to answer fast hands over to its fallback in
 * seconds when its provider hangs), else `UPSTREAM_TIMEOUT_MS`.
 */
export function answerDeadlineOf(ctx: Pick<GatewayDeps, 'config'>, model: CatalogueModel): number {
  return model.answerTimeoutMs ?? ctx.config.UPSTREAM_TIMEOUT_MS;
}

/** Maps an upstream failure to the error the client gets (decisions.md "Errors the contract leaves open"). */
export function upstreamFailure(error: unknown, attempt: UpstreamAttempt): ApiError {
  if (attempt.timedOut)
    return new ApiError('UPSTREAM_ERROR', `The upstream provider did not answer within ${attempt.timeoutMs} ms.`, {
      status: 504,
    });
  if (error instanceof UpstreamError) {
    // The provider refusing *our* credentials is our fault, not the client's: a 502, and its text is not echoed.
    if (error.status === 401 || error.status === 403)
      return new ApiError('UPSTREAM_ERROR', "The upstream provider refused the gateway's credentials.", {
        cause: error,
      });
    if (error.status === 429)
      return new ApiError('RATE_LIMITED', 'The upstream provider is rate limiting; retry later.', {
        headers: { 'retry-after': '1' },
        cause: error,
      });
    if (error.status >= 400 && error.status < 500)
      return new ApiError(
        'INVALID_REQUEST',
        `The upstream provider rejected the request (${error.status})${error.detail ? `: ${error.detail}` : '.'}`,
        { cause: error },
      );
    return new ApiError('UPSTREAM_ERROR', error.message, { cause: error });
  }
  return new ApiError('UPSTREAM_ERROR', 'The upstream call failed.', { cause: error });
}

/** True when trying a fallback model may help: a 5xx, a network failure or a timeout. */
function retryable(error: unknown, attempt: UpstreamAttempt): boolean {
  return attempt.timedOut || (error instanceof UpstreamError && error.retryable);
}

/**
 * The model and its fallbacks (those still in the catalogue, enabled, and that `principal` may call), in the order
 * they are tried. Security invariant: a fallback that the caller's API key may not call (models/allowed.ts) is
 * left out, so it is neither held for nor tried; `model` itself was checked by `resolveModel`.
 */
export async function candidatesOf(
  ctx: GatewayDeps,
  model: CatalogueModel,
  principal: Principal,
): Promise<CatalogueModel[]> {
  const candidates = [model];
  for (const id of model.fallbacks) {
    const fallback = await ctx.models.get(id);
    if (fallback && allowsModel(principal.models, fallback.id) && !candidates.some((c) => c.id === fallback.id))
      candidates.push(fallback);
  }
  return candidates;
}

/** The adapter of a model's provider; a model whose provider is not configured here is a 502. */
export function adapterOf(ctx: GatewayDeps, model: CatalogueModel): ProviderAdapter {
  const adapter = ctx.providers.get(model.provider);
  if (!adapter)
    throw new ApiError('UPSTREAM_ERROR', `The provider "${model.provider}" of ${model.id} is not configured.`);
  return adapter;
}

/** The result of the first candidate that answered, with the attempt that is still live (a stream's). */
export interface Answered<T> {
  result: T;
  model: CatalogueModel;
  attempt: UpstreamAttempt;
}

/**
 * Runs `call` on the model, then on each fallback while the failure is a 5xx, a network failure or a
 * timeout — all before any output reached the client, since `call` resolves only when output is ready.
 * Each attempt's deadline is its own model's ({@link answerDeadlineOf}), so a fast model that hangs hands
 * over to its fallback at its own deadline, and a slow fallback still gets its full time.
 * The caller disposes the returned attempt. Throws {@link ClientGone} when the client left, the shutdown's
 * error when a shutdown cut the call (`ctx.shutdown`), or the mapped ApiError of the last failure.
 */
export async function callWithFallbacks<T>(
  ctx: GatewayDeps,
  candidates: CatalogueModel[],
  client: AbortSignal,
  call: (model: CatalogueModel, adapter: ProviderAdapter, signal: AbortSignal) => Promise<T>,
): Promise<Answered<T>> {
  for (let i = 0; ; i++) {
    const model = candidates[i];
    const attempt = new UpstreamAttempt(client, answerDeadlineOf(ctx, model));
    const startedAt = performance.now();
    try {
      const result = await call(model, adapterOf(ctx, model), attempt.signal);
      // Time until the provider began answering (a stream's first output, or a whole JSON answer).
      ctx.gatewayMetrics.upstreamDuration.observe(
        { provider: model.provider, kind: 'answer' },
        (performance.now() - startedAt) / 1000,
      );
      return { result, model, attempt };
    } catch (error) {
      attempt.dispose();
      // A shutdown's cut is an answer (its 503), not a client gone: the client is still there to read it.
      if (client.aborted)
        throw client.reason instanceof ApiError
          ? client.reason
          : new ClientGone('The client went away before the answer.');
      if (error instanceof ApiError) throw error;
      if (isAbortError(error) && !attempt.timedOut) throw new ClientGone('The call was aborted.');
      const last = i === candidates.length - 1;
      if (!last && retryable(error, attempt)) {
        ctx.log.warn(
          { model: model.id, next: candidates[i + 1].id, err: error },
          'upstream failed before output; trying the fallback',
        );
        continue;
      }
      throw upstreamFailure(error, attempt);
    }
  }
}
