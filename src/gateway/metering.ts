import type { AppContext } from '../platform/context.ts';
import type { Principal } from '../platform/http/principal.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import { recordUsage, usageRecordWrite } from '../usage/records.ts';
import type { Billing, CloseHoldOptions } from '../billing/service.ts';

/** What a metered call is for; stored as the usage record's `kind`. */
export type UsageKind = 'chat' | 'embeddings' | 'images' | 'speech' | 'transcriptions' | 'realtime';

/** How a call ended; stored as the usage record's `status`. */
export type UsageStatus = 'ok' | 'client_aborted' | 'upstream_error';

/** What a finished call used. */
export interface CallOutcome {
  /** The model that answered (a fallback, perhaps). */
  model: CatalogueModel;
  /** Micro-credits the call cost; the hold caps what is captured. */
  cost: number;
  promptTokens: number;
  completionTokens: number;
  status: UsageStatus;
}

/**
 * One billable call: the hold placed for its worst case, then exactly one close — a settle for what it used
 * or a release when it failed — that writes its usage record in the same transaction.
 *
 * Invariant: a meter closes once. The hold is placed before any upstream byte is sent, and closing is
 * idempotent here and in billing, so a retry or a late abort can neither charge twice nor leave the hold
 * open (the billing sweep releases any hold this process never got to close).
 */
export class Meter {
  readonly #ctx: AppContext;
  readonly #principal: Principal;
  readonly #kind: UsageKind;
  readonly #holdId: string | null;
  readonly #startedAt: number;
  /** Micro-credits held: the most this call can capture. */
  readonly held: number;
  #closed = false;
  /** Milliseconds the gateway itself spent on this call's money: placing and settling the hold. */
  #ownMs: number;
  /** Resolves when the meter closes; a graceful shutdown waits for it before closing the database. */
  readonly #done: { promise: Promise<void>; resolve: () => void };

  private constructor(ctx: AppContext, principal: Principal, kind: UsageKind, holdId: string | null, held: number, holdMs: number) {
    this.#ctx = ctx;
    this.#principal = principal;
    this.#kind = kind;
    this.#holdId = holdId;
    this.held = held;
    this.#startedAt = performance.now();
    this.#ownMs = holdMs;
    this.#done = Promise.withResolvers<void>();
    ctx.inflight.add(this.#done.promise);
    void this.#done.promise.then(() => ctx.inflight.delete(this.#done.promise));
  }

  /**
   * Places the hold for `worstCase` micro-credits. A call whose worst case is zero (a free model) places
   * none: there is nothing to reserve, and its usage is still recorded.
   */
  static async open(ctx: AppContext, principal: Principal, kind: UsageKind, modelId: string, worstCase: number): Promise<Meter> {
    // Tokens-per-minute limit (429 RATE_LIMITED) before any money moves.
    await ctx.services.rateLimits?.checkTokens(principal);
    if (worstCase <= 0) return new Meter(ctx, principal, kind, null, 0, 0);
    const startedAt = performance.now();
    const hold = await billingOf(ctx).placeHold({
      userId: principal.userId,
      appId: principal.appId,
      keyId: principal.keyId,
      amount: worstCase,
      ttlMs: ctx.config.HOLD_TTL_SECONDS * 1000,
      description: `${kind} ${modelId}`,
    });
    return new Meter(ctx, principal, kind, hold.holdId, worstCase, performance.now() - startedAt);
  }

  /**
   * Settles the hold on the call's cost (capped at the hold) and records the usage in the settle's own
   * transaction, so the charge and its usage row commit together; returns the micro-credits captured.
   */
  async settle(outcome: CallOutcome): Promise<number> {
    if (this.#closed) return 0;
    this.#closed = true;
    try {
      const holdId = this.#holdId;
      const captured = await this.#closeRecording(outcome, holdId ? async (options) => {
        const startedAt = performance.now();
        const result = await billingOf(this.#ctx).settleHold(holdId, Math.min(outcome.cost, this.held), options);
        this.#ownMs += performance.now() - startedAt;
        return result.captured;
      } : null);
      const metrics = this.#ctx.metrics;
      metrics.tokens.inc({ model: outcome.model.id, direction: 'prompt' }, outcome.promptTokens);
      metrics.tokens.inc({ model: outcome.model.id, direction: 'completion' }, outcome.completionTokens);
      metrics.creditsCharged.inc({ kind: this.#kind }, captured / 1_000_000);
      metrics.gatewayOverhead.observe({ kind: this.#kind }, this.#ownMs / 1000);
      await this.#ctx.services.rateLimits?.addTokens(this.#principal, outcome.promptTokens + outcome.completionTokens);
      return captured;
    } finally {
      this.#done.resolve();
    }
  }

  /** Releases the hold of a call that produced nothing billable, and records it with cost 0 in the same transaction. */
  async release(model: CatalogueModel, status: UsageStatus): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      const holdId = this.#holdId;
      await this.#closeRecording({ model, cost: 0, promptTokens: 0, completionTokens: 0, status }, holdId ? async (options) => {
        await billingOf(this.#ctx).releaseHold(holdId, options);
        return 0;
      } : null);
    } finally {
      this.#done.resolve();
    }
  }

  /**
   * Closes the hold with `close` (settle or release), whose movement writes the usage record in the same
   * statement on PostgreSQL, the same transaction on SQLite; returns what it captured. A free call has no
   * hold, and a hold the sweep expired during a very long call cannot be closed: the call is still
   * recorded, at what it was charged (nothing).
   */
  async #closeRecording(outcome: CallOutcome, close: ((options: Pick<CloseHoldOptions, 'userId' | 'companion'>) => Promise<number>) | null): Promise<number> {
    let recorded = false;
    const captured = close
      ? await close({
          userId: this.#principal.userId,
          companion: (closed) => {
            recorded = true;
            return usageRecordWrite(this.#recordOf(outcome, closed.captured));
          },
        })
      : 0;
    if (!recorded) await recordUsage(this.#ctx.db, this.#recordOf(outcome, captured));
    return captured;
  }

  /** The usage record of this call. */
  #recordOf(outcome: CallOutcome, captured: number) {
    return {
      user_id: this.#principal.userId,
      app_id: this.#principal.appId,
      key_id: this.#principal.keyId,
      model: outcome.model.id,
      kind: this.#kind,
      prompt_tokens: outcome.promptTokens,
      completion_tokens: outcome.completionTokens,
      cost: captured,
      latency_ms: Math.round(performance.now() - this.#startedAt),
      status: outcome.status,
      hold_id: this.#holdId,
      created_at: this.#ctx.clock.now(),
    };
  }
}

/** Billing's hold API; restriction errors (429 SPENDING_LIMIT_EXCEEDED, 402 INSUFFICIENT_CREDITS) propagate from `placeHold`. */
function billingOf(ctx: AppContext): Billing {
  return ctx.services.billing;
}
