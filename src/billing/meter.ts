import type { MeteringDeps } from './deps.ts';
import type { Principal } from '../platform/http/principal.ts';
import { everyOn } from '../platform/clock.ts';
import type { Db } from '../platform/db/connect.ts';
import { isDatabaseFull, isDatabaseUnavailable } from '../platform/db/unavailable.ts';
import { recordUsage, usageOfClose, type UsageDraft } from './usage-records.ts';

/**
 * Waits before each new attempt of a close whose database connection was lost (PostgreSQL restarting or
 * failing over under the call) or whose disk was full: ~14 s in all. Given up at once, the close left the
 * hold to expire, and the sweep then released a call that had produced output for nothing.
 */
const CLOSE_RETRY_DELAYS_MS = [250, 1000, 3000, 10_000];

/** What a metered call is for; stored as the usage record's `kind`. */
export type UsageKind =
  'chat' | 'embeddings' | 'images' | 'speech' | 'transcriptions' | 'translations' | 'realtime' | 'prediction';

/** How a call ended; stored as the usage record's `status`. */
export type UsageStatus = 'ok' | 'client_aborted' | 'upstream_error' | 'failed' | 'canceled';

/** What a finished call used. */
export interface CallOutcome {
  /** The model that answered (a fallback, perhaps); only its id is recorded. */
  model: { id: string };
  /** Micro-credits the call cost; the hold caps what is captured. */
  cost: number;
  promptTokens: number;
  completionTokens: number;
  status: UsageStatus;
  /** The usage breakdown behind `cost` (cached, reasoning, audio tokens…), kept as JSON on the usage record. */
  details?: Record<string, unknown>;
}

/** Who a meter bills: the user, and the app and key whose spending limits apply. */
export type MeterOwner = Pick<Principal, 'userId' | 'appId' | 'keyId'>;

/** Options of {@link Meter.open}. */
export interface OpenMeterOptions {
  /** The hold's lifetime without a heartbeat; default `HOLD_TTL_SECONDS`. */
  ttlMs?: number;
  /**
   * The call runs outside this process (a Replicate prediction): no heartbeat and no shutdown wait; the hold
   * lives `ttlMs`, and the call is closed later, perhaps by another process, through {@link Meter.resume}.
   */
  detached?: boolean;
  /** false: a refusal is left for the caller to announce (see `PlaceHoldOptions`); default true. */
  announceRefusal?: boolean;
}

/** Options of a close: what the user sees on the movement, and writes that commit with it. */
export interface CloseOptions {
  /** Description of the charge movement (default "Charge"). */
  description?: string;
  /** Writes that commit with the close, run only by the close that happened (a prediction's settled mark). */
  companionWrites?: (trx: Db, closed: { captured: number; afterExpiry: boolean }) => Promise<void>;
}

/** A meter closed elsewhere: {@link Meter.resume}'s input. */
export interface ResumedMeter {
  owner: MeterOwner;
  kind: UsageKind;
  holdId: string;
  /** Micro-credits the hold reserved. */
  held: number;
  /** The call's duration, for its usage record. */
  latencyMs: number;
}

/**
 * One billable call, and billing's only API for it: `open` places the hold for the worst case, a heartbeat
 * keeps it alive while the call runs, and exactly one close — `settle` for what it used, or `release` when
 * it produced nothing billable — charges it and writes its usage record in the same transaction. Nothing
 * outside billing places, extends or settles holds.
 *
 * Invariants:
 * - A meter closes once. The hold is placed before any upstream byte is sent, and closing is idempotent here
 *   and in billing, so a retry or a late abort can neither charge twice nor leave the hold open.
 * - A live meter never expires: every third of its TTL (on the context clock) it moves its hold's expiry a
 *   full TTL ahead, so neither the sweep nor the user's next call expires it, and its credits and spending
 *   limits stay reserved however long the call runs.
 * - A call that produced output is never free: if its hold expired anyway (a crash, a stall past the TTL),
 *   the settle charges the cost from the user's available credits, down to zero and never below, and the
 *   usage record says `charged_after_expiry`.
 */
export class Meter {
  readonly #ctx: MeteringDeps;
  readonly #owner: MeterOwner;
  /** The caller's principal, for the token rate limit; null on a resumed meter. */
  readonly #principal: Principal | null;
  readonly #kind: UsageKind;
  readonly #holdId: string | null;
  readonly #startedAt: number;
  readonly #latencyMs: number | null;
  /** Micro-credits held: the most this call can capture. */
  readonly held: number;
  #closed = false;
  /** Milliseconds the gateway itself spent on this call's money: placing and settling the hold. */
  #ownMs: number;
  /** Stops the heartbeat; null when there is none. */
  #stopHeartbeat: (() => void) | null = null;
  /** Resolves when the meter closes; a graceful shutdown waits for it before closing the database. */
  readonly #done: { promise: Promise<void>; resolve: () => void } | null;

  private constructor(
    ctx: MeteringDeps,
    init: {
      owner: MeterOwner;
      principal: Principal | null;
      kind: UsageKind;
      holdId: string | null;
      held: number;
      ownMs: number;
      latencyMs: number | null;
      inflight: boolean;
    },
  ) {
    this.#ctx = ctx;
    this.#owner = init.owner;
    this.#principal = init.principal;
    this.#kind = init.kind;
    this.#holdId = init.holdId;
    this.held = init.held;
    this.#startedAt = performance.now();
    this.#ownMs = init.ownMs;
    this.#latencyMs = init.latencyMs;
    this.#done = init.inflight ? Promise.withResolvers<void>() : null;
    if (this.#done) {
      const done = this.#done.promise;
      ctx.inflight.add(done);
      void done.then(() => ctx.inflight.delete(done));
    }
  }

  /** The hold's id (null for a free call, which holds nothing); a detached call stores it to resume later. */
  get holdId(): string | null {
    return this.#holdId;
  }

  /**
   * Opens a meter: places the hold for `worstCase` micro-credits and starts its heartbeat. A call whose
   * worst case is zero (a free model) places none: there is nothing to reserve, and its usage is still
   * recorded. Restriction errors (429 SPENDING_LIMIT_EXCEEDED, 402 INSUFFICIENT_CREDITS, the token rate
   * limit's 429) are thrown before any money moves.
   */
  static async open(
    ctx: MeteringDeps,
    principal: Principal,
    kind: UsageKind,
    modelId: string,
    worstCase: number,
    options: OpenMeterOptions = {},
  ): Promise<Meter> {
    const detached = options.detached ?? false;
    // Tokens-per-minute limit (429 RATE_LIMITED) before any money moves; a detached call counts no tokens.
    if (!detached) await ctx.rateLimits.checkTokens(principal);
    const owner = { userId: principal.userId, appId: principal.appId, keyId: principal.keyId };
    const init = { owner, principal, kind, latencyMs: null, inflight: !detached };
    // A detached call always holds, even nothing: its hold is what its later close claims exactly once.
    if (worstCase <= 0 && !detached) return new Meter(ctx, { ...init, holdId: null, held: 0, ownMs: 0 });
    const ttlMs = options.ttlMs ?? ctx.config.HOLD_TTL_SECONDS * 1000;
    const startedAt = performance.now();
    const hold = await ctx.billing.placeHold(
      {
        ...owner,
        amount: worstCase,
        ttlMs,
        description: `${kind} ${modelId}`,
      },
      { announceRefusal: options.announceRefusal ?? true },
    );
    const meter = new Meter(ctx, {
      ...init,
      holdId: hold.holdId,
      held: worstCase,
      ownMs: performance.now() - startedAt,
    });
    if (!detached) meter.#startHeartbeat(hold.holdId, ttlMs);
    return meter;
  }

  /**
   * The meter of a detached call, to close it (in any process): a settle or release acts only if no other
   * close did (billing's exactly-once claim), and only the one that acts writes the usage record.
   */
  static resume(ctx: MeteringDeps, call: ResumedMeter): Meter {
    return new Meter(ctx, {
      owner: call.owner,
      principal: null,
      kind: call.kind,
      holdId: call.holdId,
      held: call.held,
      ownMs: 0,
      latencyMs: call.latencyMs,
      inflight: false,
    });
  }

  /**
   * The heartbeat: every third of the TTL, the hold's expiry moves to a full TTL from now. A beat that
   * fails (the database busy) is logged; the next one tries again, two-thirds of the TTL before expiry.
   */
  #startHeartbeat(holdId: string, ttlMs: number): void {
    const billing = this.#ctx.billing;
    const beat = () =>
      billing.extendHold(holdId, this.#owner.userId, this.#ctx.clock.now() + ttlMs).then(
        () => undefined,
        (error: unknown) => this.#ctx.log.warn({ err: error, holdId }, 'could not extend the hold of a running call'),
      );
    this.#stopHeartbeat = everyOn(this.#ctx.clock, Math.max(1, Math.floor(ttlMs / 3)), () =>
      this.#closed ? undefined : beat(),
    );
  }

  /**
   * Settles the hold on the call's cost (capped at the hold) and records the usage in the settle's own
   * transaction, so the charge and its usage row commit together; returns the micro-credits captured.
   * A hold that expired is charged from the available credits (see the class's invariants).
   */
  async settle(outcome: CallOutcome, options: CloseOptions = {}): Promise<number> {
    if (!this.#beginClose()) return 0;
    try {
      const holdId = this.#holdId;
      const charge = Math.min(outcome.cost, this.held);
      const captured = await this.#closeRecording(
        outcome,
        holdId
          ? async (usage) => {
              const startedAt = performance.now();
              const result = await this.#ctx.billing.settleHold(holdId, charge, {
                userId: this.#owner.userId,
                description: options.description,
                afterExpiry: true,
                usage,
                companionWrites: options.companionWrites,
              });
              this.#ownMs += performance.now() - startedAt;
              return result.settled ? result.captured : null;
            }
          : null,
      );
      const metrics = this.#ctx.billingMetrics;
      metrics.tokens.inc({ model: outcome.model.id, direction: 'prompt' }, outcome.promptTokens);
      metrics.tokens.inc({ model: outcome.model.id, direction: 'completion' }, outcome.completionTokens);
      metrics.creditsChargedMicros.inc({ kind: this.#kind }, captured);
      if (this.#principal) {
        metrics.gatewayOverhead.observe({ kind: this.#kind }, this.#ownMs / 1000);
        await this.#ctx.rateLimits.addTokens(this.#principal, outcome.promptTokens + outcome.completionTokens);
      }
      return captured;
    } finally {
      this.#done?.resolve();
    }
  }

  /** Releases the hold of a call that produced nothing billable, and records it with cost 0 in the same transaction. */
  /**
   * Moves the hold's expiry to `ttlMs` from now (a detached call once it is handed over, say a prediction once
   * stored). False when there is no open hold to extend: it was already closed or had expired.
   */
  async extend(ttlMs: number): Promise<boolean> {
    if (!this.#holdId) return false;
    return this.#ctx.billing.extendHold(this.#holdId, this.#owner.userId, this.#ctx.clock.now() + ttlMs);
  }

  async release(
    model: { id: string },
    status: UsageStatus,
    options: Pick<CloseOptions, 'companionWrites'> = {},
  ): Promise<void> {
    if (!this.#beginClose()) return;
    try {
      const holdId = this.#holdId;
      await this.#closeRecording(
        { model, cost: 0, promptTokens: 0, completionTokens: 0, status },
        holdId
          ? async (usage) => {
              return (
                await this.#ctx.billing.releaseHold(holdId, {
                  userId: this.#owner.userId,
                  usage,
                  companionWrites: options.companionWrites,
                })
              ).released
                ? 0
                : null;
            }
          : null,
      );
    } finally {
      this.#done?.resolve();
    }
  }

  /** Marks the meter closed and stops its heartbeat; false when it was closed already. */
  #beginClose(): boolean {
    if (this.#closed) return false;
    this.#closed = true;
    this.#stopHeartbeat?.();
    return true;
  }

  /**
   * Closes the hold with `close` (settle or release), which writes the usage record with the close (one
   * statement on PostgreSQL, the same transaction on SQLite) and answers what it captured, or null when it
   * found the hold no longer open; returns what was captured. A free call has no hold and is recorded on its
   * own. When the close found the hold no longer open (released by the sweep after a failed call, or closed
   * by another process for a resumed meter), a meter of this process still records its call, at nothing
   * charged; a resumed one does not, as the close that happened recorded it.
   */
  async #closeRecording(
    outcome: CallOutcome,
    close: ((usage: UsageDraft) => Promise<number | null>) | null,
  ): Promise<number> {
    const draft = this.#draftOf(outcome);
    let retried = false;
    let captured: number | null = null;
    for (let attempt = 0; close; attempt++) {
      try {
        captured = await close(draft);
        break;
      } catch (error) {
        // Security invariant: trying again cannot charge twice, as billing closes an open hold once.
        const delay = CLOSE_RETRY_DELAYS_MS[attempt];
        if (delay === undefined || !isDatabaseUnavailable(error)) throw error;
        this.#ctx.log.warn(
          { err: error, holdId: this.#holdId, attempt: attempt + 1, retryInMs: delay },
          isDatabaseFull(error)
            ? 'the database disk is full: closing a hold failed; trying again'
            : 'the database connection was lost while closing a hold; trying again',
        );
        retried = true;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
    if (captured !== null) return captured;
    // After a lost connection, a hold no longer open was closed by an earlier attempt whose commit landed
    // unanswered, with its usage record: a second record would count the call twice.
    if (this.#latencyMs === null && !retried)
      await recordUsage(this.#ctx.db, usageOfClose(draft, { captured: 0, afterExpiry: false }));
    return 0;
  }

  /** The usage record of this call, but for what its close decides (see {@link UsageDraft}). */
  #draftOf(outcome: CallOutcome): UsageDraft {
    return {
      billed: outcome.cost,
      record: {
        user_id: this.#owner.userId,
        app_id: this.#owner.appId,
        key_id: this.#owner.keyId,
        model: outcome.model.id,
        kind: this.#kind,
        prompt_tokens: outcome.promptTokens,
        completion_tokens: outcome.completionTokens,
        latency_ms: this.#latencyMs ?? Math.round(performance.now() - this.#startedAt),
        status: outcome.status,
        hold_id: this.#holdId,
        created_at: this.#ctx.clock.now(),
        details: outcome.details ? JSON.stringify(outcome.details) : null,
      },
    };
  }
}
