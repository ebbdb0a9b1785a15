import type { AppContext } from '../platform/context.ts';
import { ApiError } from '../platform/errors.ts';
import {
  extendHold,
  placeHold,
  refundHold,
  releaseExpiredHolds,
  releaseHold,
  settleHold,
  type CloseHoldOptions,
  type PlaceHoldInput,
  type SettleResult,
} from './holds.ts';
import { creditWallet, getBalance, type BalanceMicros, type Idempotency } from './wallets.ts';
import { listTransactions, type TransactionView } from './transactions.ts';
import { verifyLedger, type LedgerReport } from './verify.ts';
import type { BillingContext } from './ledger.ts';
import type { Db } from '../platform/db/connect.ts';
import { billingDb } from './schema.ts';
import { readLimits, readSpends, SpendingLimitError, subjectKey, writeLimits, type LimitsByPeriod } from './limits.ts';
import { LIMIT_PERIODS, periodAt, type LimitPeriod } from './periods.ts';
import { spendable, type Payer, type Spendable } from './headroom.ts';
import {
  creditFromProcessor,
  debitFromProcessor,
  type ProcessorHooks,
  type ProcessorMovement,
  type ProcessorOutcome,
} from './debt.ts';

export type { ProcessorHooks, ProcessorMovement, ProcessorOutcome };
export type { CloseHoldOptions };

/**
 * The money core (the billing feature's `billing`). Every amount is integer micro-credits. Other features meter
 * billable calls through {@link Meter} (./meter.ts), never through the hold methods here: placing, extending,
 * settling and releasing holds is billing's own business (a test keeps it so).
 * Every method that moves credits is one database transaction that first locks the user's wallet row, so
 * credits are never lost, created or overspent, whatever runs concurrently in this or another process.
 */
export interface Billing {
  /**
   * Reserves `amount` for a call, after checking atomically with placing the hold, in decisions.md's order:
   * each spending limit that applies (the app's daily, weekly, monthly, total limits for this user when `appId` is
   * set, then the key's limit when `keyId` is set): `spent + held + amount <= limit`, else ApiError
   * SPENDING_LIMIT_EXCEEDED (429, details `{ limitType, limit, current, requested, resetsAt }` in credits,
   * `resetsAt` omitted for total); then the wallet: `balance - reserved >= amount`, else
   * INSUFFICIENT_CREDITS (402, `{ available, required }`). The hold counts in the day and month it is placed.
   */
  placeHold(input: PlaceHoldInput, options?: PlaceHoldOptions): Promise<{ holdId: string; expiresAt: number }>;
  /**
   * Tells the observers that a refusal `placeHold` kept quiet (`announceRefusal: false`) is the call's answer
   * after all. Does nothing for an error that is not a restriction.
   */
  announceRefusal(payer: Pick<PlaceHoldInput, 'userId' | 'appId' | 'keyId'>, error: unknown): void;
  /**
   * Captures `min(actual, held)` and releases the rest, exactly once: `{ settled: true, captured }` the
   * first time, `{ settled: false, captured: 0 }` when the hold is no longer open (or unknown).
   * `options.companion` (an INSERT, such as a usage record) or `options.companionWrites` (anything else) writes what
   * must commit with the charge, in the same transaction.
   */
  settleHold(holdId: string, actual: number, options?: CloseHoldOptions): Promise<SettleResult>;
  /**
   * Moves an open hold's expiry forward to `expiresAt` (never back), in one statement: the meter's heartbeat.
   * False when the hold is no longer open.
   */
  extendHold(holdId: string, userId: string, expiresAt: number): Promise<boolean>;
  /** Releases the whole hold, exactly once; `released: false` when it was no longer open. */
  releaseHold(holdId: string, options?: Omit<CloseHoldOptions, 'description'>): Promise<{ released: boolean }>;
  /**
   * Operator grant (positive). 404 when the user does not exist. With an idempotency key, a retry of the same
   * grant answers the first one's balance (`replayed`) and moves nothing (see {@link Idempotency}).
   */
  grant(
    userId: string,
    amount: number,
    reason: string,
    idempotency?: Idempotency,
  ): Promise<{ balance: number; replayed?: true }>;
  /** Purchased credits (positive); they repay the wallet's debt first. */
  topUp(userId: string, amount: number, reason: string): Promise<{ balance: number }>;
  /**
   * A payment processor's credits in (a paid top-up, a won dispute), repaying the debt first; the hooks'
   * claim and writes commit in the same transaction (see debt.ts). `{ applied: false }` when the claim refused.
   */
  creditPayment(
    type: 'topup' | 'dispute',
    movement: ProcessorMovement,
    hooks?: ProcessorHooks,
  ): Promise<ProcessorOutcome>;
  /** A payment processor's credits out (a refund, a dispute): at most what is available, the rest becomes debt. */
  debitPayment(
    type: 'refund' | 'dispute',
    movement: ProcessorMovement,
    hooks?: ProcessorHooks,
  ): Promise<ProcessorOutcome>;
  /** Operator correction, either sign; never takes more than is available (400). Idempotency as `grant`'s. */
  adjust(
    userId: string,
    amount: number,
    reason: string,
    idempotency?: Idempotency,
  ): Promise<{ balance: number; replayed?: true }>;
  /** Gives back part or all of what a settled hold captured; 400 beyond what is left, 404 for an unknown hold. */
  refund(holdId: string, amount: number, reason?: string): Promise<{ refunded: number; balance: number }>;
  /** What the user owns, what open holds reserve, and what is available. */
  getBalance(userId: string): Promise<BalanceMicros>;
  /** What the user owes (micro-credits; see debt.ts): any debt refuses new calls until a top-up repays it. */
  debtOf(userId: string): Promise<number>;
  /**
   * What `payer` can spend now: the wallet's available credits lowered to each applicable spending limit's
   * headroom. A read for sizing a call; the hold placed after it still checks atomically.
   */
  spendable(payer: Payer): Promise<Spendable>;
  /** The sweep: expires every open hold past its expiry; safe in several processes at once. */
  releaseExpiredHolds(): Promise<{ expired: number }>;
  /** The user's movements, newest first (credits, for the dashboard). */
  listTransactions(
    userId: string,
    page?: { limit?: number; cursor?: string; appId?: string | null },
  ): Promise<{ transactions: TransactionView[]; nextCursor: string | null }>;
  /** Recomputes balances from the ledger and reports every difference (all users, or one). */
  verify(options?: { userId?: string }): Promise<LedgerReport>;

  // Spending limits are billing's: only these write them (micro-credits; null means no limit).
  /** The user's limits for an app, per period. */
  appLimits(userId: string, clientId: string): Promise<LimitsByPeriod>;
  /**
   * Sets the user's limits for an app (consent sets the daily one; the dashboard any, through
   * `PATCH /api/user/authorized-apps/:clientId`): a number sets, null removes, a period left out keeps its
   * limit. On `db` (the caller's transaction, handed over with `asDb`) when given.
   */
  setAppLimits(userId: string, clientId: string, changes: Partial<LimitsByPeriod>, db?: Db): Promise<void>;
  /**
   * The limits of API keys, by key id: the one period a key's limit has, with what the key's current period has
   * spent (captured, net of refunds) and holds, in micro-credits, and when that period ends (null: `total`); or
   * null when the key has no limit. One read for any number of keys.
   */
  keyLimits(keyIds: string[]): Promise<Map<string, KeyLimit | null>>;
  /** Sets (or, with null, removes) a key's one limit; on `db` (the caller's transaction, handed over with `asDb`) when given. */
  setKeyLimit(keyId: string, limit: { amount: number; period: LimitPeriod } | null, db?: Db): Promise<void>;
  /**
   * Listens to billing's moments that other features act on (auto top-up, outbound events): a settle that
   * committed, a restriction refused. Listeners run after the commit, are never awaited by the call, and a
   * listener's error is logged, never the caller's.
   */
  observe(listener: BillingObserver): void;
}

/** An API key's one spending limit and its current period's spend (micro-credits; `resetsAt` epoch ms or null). */
export interface KeyLimit {
  amount: number;
  period: LimitPeriod;
  spent: number;
  held: number;
  resetsAt: number | null;
}

/** How {@link Billing.placeHold} reports a refusal. */
export interface PlaceHoldOptions {
  /**
   * false: a refusal is not announced to the observers (no `restricted` event), because the caller may still
   * serve the call another way (a lowered output cap); it calls {@link Billing.announceRefusal} when it cannot.
   * Default true.
   */
  announceRefusal?: boolean;
}

/** What happened, for {@link Billing.observe}: amounts in micro-credits. */
export type BillingEvent =
  | { type: 'settled'; userId: string; captured: number }
  | {
      type: 'restricted';
      userId: string;
      code: 'INSUFFICIENT_CREDITS' | 'SPENDING_LIMIT_EXCEEDED';
      /** What refused: the wallet (402), or the app's or the key's spending limit (429). */
      subject: 'wallet' | 'app' | 'key';
      appId: string | null;
      keyId: string | null;
      details: Record<string, unknown>;
    };

/** A listener of {@link BillingEvent}s. */
export type BillingObserver = (event: BillingEvent) => void;

/** Builds the billing service over the context's database and clock. */
export function createBilling(ctx: BillingContext & { log?: Pick<AppContext['log'], 'error'> }): Billing {
  const observers: BillingObserver[] = [];
  const notify = (event: BillingEvent) => {
    for (const observer of observers) {
      try {
        observer(event);
      } catch (error) {
        ctx.log?.error({ err: error, event: event.type }, 'a billing observer failed');
      }
    }
  };
  const announceRefusal = (payer: Pick<PlaceHoldInput, 'userId' | 'appId' | 'keyId'>, error: unknown) => {
    if (
      !observers.length ||
      !(error instanceof SpendingLimitError || (error instanceof ApiError && error.code === 'INSUFFICIENT_CREDITS'))
    )
      return;
    notify({
      type: 'restricted',
      userId: payer.userId,
      code: error.code as 'INSUFFICIENT_CREDITS' | 'SPENDING_LIMIT_EXCEEDED',
      subject: error instanceof SpendingLimitError ? error.subject : 'wallet',
      appId: payer.appId,
      keyId: payer.keyId,
      details: error.details,
    });
  };
  return {
    observe: (listener) => void observers.push(listener),
    placeHold: async (input, options) => {
      try {
        return await placeHold(ctx, input);
      } catch (error) {
        if (options?.announceRefusal !== false) announceRefusal(input, error);
        throw error;
      }
    },
    announceRefusal: (payer, error) => announceRefusal(payer, error),
    settleHold: async (holdId, actual, options) => {
      const result = await settleHold(ctx, holdId, actual, options);
      // The meter always names the owner; a settle without one (an operator's) has no one to tell.
      if (result.settled && options?.userId && observers.length)
        notify({ type: 'settled', userId: options.userId, captured: result.captured });
      return result;
    },
    extendHold: (holdId, userId, expiresAt) => extendHold(ctx, holdId, userId, expiresAt),
    releaseHold: (holdId, options) => releaseHold(ctx, holdId, options),
    grant: (userId, amount, reason, idempotency) => creditWallet(ctx, userId, amount, 'grant', reason, idempotency),
    topUp: (userId, amount, reason) => creditWallet(ctx, userId, amount, 'topup', reason),
    creditPayment: (type, movement, hooks) => creditFromProcessor(ctx, type, movement, hooks),
    debitPayment: (type, movement, hooks) => debitFromProcessor(ctx, type, movement, hooks),
    adjust: (userId, amount, reason, idempotency) =>
      creditWallet(ctx, userId, amount, 'adjustment', reason, idempotency),
    refund: (holdId, amount, reason) => refundHold(ctx, holdId, amount, reason),
    getBalance: (userId) => getBalance(ctx.db, userId),
    debtOf: async (userId) =>
      Number(
        (await billingDb(ctx.db).selectFrom('wallets').select('debt').where('user_id', '=', userId).executeTakeFirst())
          ?.debt ?? 0,
      ),
    spendable: (payer) => spendable(ctx, payer),
    releaseExpiredHolds: () => releaseExpiredHolds(ctx),
    listTransactions: (userId, page) => listTransactions(ctx.db, userId, page),
    verify: (options) => verifyLedger(ctx, options),
    appLimits: async (userId, clientId) =>
      (await readLimits(ctx.db, [{ kind: 'app', userId, appId: clientId }])).values().next().value!,
    setAppLimits: (userId, clientId, changes, db) =>
      writeLimits(billingDb(db ?? ctx.db), { kind: 'app', userId, appId: clientId }, changes),
    keyLimits: async (keyIds) => {
      const subjects = keyIds.map((keyId) => ({ kind: 'key' as const, keyId }));
      const limits = await readLimits(ctx.db, subjects);
      const limited = subjects.filter((subject) =>
        LIMIT_PERIODS.some((p) => limits.get(subjectKey(subject))![p] !== null),
      );
      const now = ctx.clock.now();
      const spends = await readSpends(billingDb(ctx.db), limited, now);
      return new Map(
        subjects.map((subject): [string, KeyLimit | null] => {
          const periods = limits.get(subjectKey(subject))!;
          const period = LIMIT_PERIODS.find((p) => periods[p] !== null);
          if (!period) return [subject.keyId, null];
          const spend = spends.get(subjectKey(subject))![period];
          const { resetsAt } = periodAt(period, now);
          return [subject.keyId, { amount: periods[period]!, period, ...spend, resetsAt }];
        }),
      );
    },
    setKeyLimit: (keyId, limit, db) => {
      // A key has one limit: setting one period clears the others.
      const changes: Partial<LimitsByPeriod> = { daily: null, weekly: null, monthly: null, total: null };
      if (limit) changes[limit.period] = limit.amount;
      return writeLimits(billingDb(db ?? ctx.db), { kind: 'key', keyId }, changes);
    },
  };
}
