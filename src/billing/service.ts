import { placeHold, refundHold, releaseExpiredHolds, releaseHold, settleHold, type CloseHoldOptions, type PlaceHoldInput } from './holds.ts';
import { creditWallet, getBalance, type BalanceMicros } from './wallets.ts';
import { listTransactions, type TransactionView } from './transactions.ts';
import { verifyLedger, type LedgerReport } from './verify.ts';
import type { BillingContext } from './ledger.ts';

export type { CloseHoldOptions };

/**
 * The money core other features call (`ctx.services.billing`). Every amount is integer micro-credits.
 * Every method that moves credits is one database transaction that first locks the user's wallet row, so
 * credits are never lost, created or overspent, whatever runs concurrently in this or another process.
 */
export interface Billing {
  /**
   * Reserves `amount` for a call, after checking atomically with placing the hold, in decisions.md's order:
   * each spending limit that applies (the app's daily, monthly, total limits for this user when `appId` is
   * set, then the key's limit when `keyId` is set): `spent + held + amount <= limit`, else ApiError
   * SPENDING_LIMIT_EXCEEDED (429, details `{ limitType, limit, current, requested, resetsAt }` in credits,
   * `resetsAt` omitted for total); then the wallet: `balance - reserved >= amount`, else
   * INSUFFICIENT_CREDITS (402, `{ available, required }`). The hold counts in the day and month it is placed.
   */
  placeHold(input: PlaceHoldInput): Promise<{ holdId: string; expiresAt: number }>;
  /**
   * Captures `min(actual, held)` and releases the rest, exactly once: `{ settled: true, captured }` the
   * first time, `{ settled: false, captured: 0 }` when the hold is no longer open (or unknown).
   * `options.companion` (an INSERT, such as a usage record) or `options.alongside` (anything else) writes what
   * must commit with the charge, in the same transaction.
   */
  settleHold(holdId: string, actual: number, options?: CloseHoldOptions): Promise<{ settled: boolean; captured: number }>;
  /** Releases the whole hold, exactly once; `released: false` when it was no longer open. */
  releaseHold(holdId: string, options?: Omit<CloseHoldOptions, 'description'>): Promise<{ released: boolean }>;
  /** Operator grant (positive). 404 when the user does not exist. */
  grant(userId: string, amount: number, reason: string): Promise<{ balance: number }>;
  /** Purchased credits (positive). */
  topUp(userId: string, amount: number, reason: string): Promise<{ balance: number }>;
  /** Operator correction, either sign; never takes more than is available (400). */
  adjust(userId: string, amount: number, reason: string): Promise<{ balance: number }>;
  /** Gives back part or all of what a settled hold captured; 400 beyond what is left, 404 for an unknown hold. */
  refund(holdId: string, amount: number, reason?: string): Promise<{ refunded: number; balance: number }>;
  /** What the user owns, what open holds reserve, and what is available. */
  getBalance(userId: string): Promise<BalanceMicros>;
  /** The sweep: expires every open hold past its expiry; safe in several processes at once. */
  releaseExpiredHolds(): Promise<{ expired: number }>;
  /** The user's movements, newest first (credits, for the dashboard). */
  listTransactions(userId: string, page?: { limit?: number; cursor?: string; appId?: string | null }): Promise<{ transactions: TransactionView[]; nextCursor: string | null }>;
  /** Recomputes balances from the ledger and reports every difference (all users, or one). */
  verify(options?: { userId?: string }): Promise<LedgerReport>;
}

declare module '../platform/context.ts' {
  interface Services {
    billing: Billing;
  }
}

/** Builds the billing service over the context's database and clock. */
export function createBilling(ctx: BillingContext): Billing {
  return {
    placeHold: (input) => placeHold(ctx, input),
    settleHold: (holdId, actual, options) => settleHold(ctx, holdId, actual, options),
    releaseHold: (holdId, options) => releaseHold(ctx, holdId, options),
    grant: (userId, amount, reason) => creditWallet(ctx, userId, amount, 'grant', reason),
    topUp: (userId, amount, reason) => creditWallet(ctx, userId, amount, 'topup', reason),
    adjust: (userId, amount, reason) => creditWallet(ctx, userId, amount, 'adjustment', reason),
    refund: (holdId, amount, reason) => refundHold(ctx, holdId, amount, reason),
    getBalance: (userId) => getBalance(ctx.db, userId),
    releaseExpiredHolds: () => releaseExpiredHolds(ctx),
    listTransactions: (userId, page) => listTransactions(ctx.db, userId, page),
    verify: (options) => verifyLedger(ctx, options),
  };
}
