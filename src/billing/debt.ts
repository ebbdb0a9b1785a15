import type { InsufficientCreditsDetails } from '#wire/restrictions.ts';
import { ApiError } from '../platform/errors.ts';
import { microsToCredits } from '../platform/money.ts';
import { accounts, lockWallet, postMovement, type BillingContext } from './ledger.ts';
import type { Db } from '../platform/db/connect.ts';
import { asDb } from '../platform/db/own-tables.ts';

/**
 * Money that a payment processor moves (top-ups in; refunds and disputes out, a won dispute back in), and
 * the debt it can leave. A refund or dispute takes back at most what the user has available; the rest is
 * a debt: `wallets.debt` (what blocks new holds, read under the wallet lock where holds are placed) and
 * the `user:<id>:debt` ledger account, which holds minus the debt, so the ledger still balances and its
 * verify recomputes the debt. Credits that come in pay the debt first.
 */

/** The 402 of a wallet that owes credits: `required` is what is owed (contract's INSUFFICIENT_CREDITS). */
export function debtOwed(available: number, debt: number): ApiError {
  return new ApiError(
    'INSUFFICIENT_CREDITS',
    `Insufficient credits: your wallet owes ${microsToCredits(debt)} credits (a refunded or disputed top-up whose credits were already spent); ` +
      'add credits to repay it.',
    {
      details: {
        available: microsToCredits(Math.max(0, available)),
        required: microsToCredits(debt),
        owed: microsToCredits(debt),
      } satisfies InsufficientCreditsDetails,
    },
  );
}

/** One processor movement: micro-credits (positive, or set by the claim), what the user sees, and the processor's ids. */
export interface ProcessorMovement {
  userId: string;
  amount: number;
  description: string;
  /** The processor's ids, kept on the ledger transaction (for example `stripe:evt_…:pi_…`). */
  reference: string;
}

/** What a processor movement did, in micro-credits. */
export type ProcessorOutcome =
  | { applied: false }
  | {
      applied: true;
      /** Change of the available credits (negative for refunds and disputes). */
      available: number;
      /** Change of the debt (negative when credits repaid it). */
      debt: number;
      balance: number;
      debtAfter: number;
      transactionId: string;
    };

/** What must commit with a processor movement (the event's claim, the payment's row). */
export interface ProcessorHooks {
  /**
   * Runs first in the movement's transaction, before the wallet lock: the idempotency claim of the event.
   * False (or 0): nothing moves, and the transaction (with what the claim wrote) still commits. A number
   * replaces the movement's amount (what is left to refund, read under the claim's lock).
   */
  claim?: (trx: Db) => Promise<boolean | number>;
  /** Runs after the movement, in its transaction. */
  companionWrites?: (trx: Db, outcome: ProcessorOutcome & { applied: true }) => Promise<void>;
}

/** Where each kind of processor movement comes from or goes to. */
const COUNTERPART = { topup: accounts.topups, refund: accounts.topups, dispute: accounts.disputes } as const;

/**
 * Credits in: a paid top-up (`topup`) or a won dispute giving back what it took (`dispute`). The debt is
 * repaid first, the rest becomes available.
 */
export function creditFromProcessor(
  ctx: BillingContext,
  type: 'topup' | 'dispute',
  movement: ProcessorMovement,
  hooks: ProcessorHooks = {},
): Promise<ProcessorOutcome> {
  return move(ctx, movement, hooks, (wallet, amount) => {
    const repaid = Math.min(amount, wallet.debt);
    return {
      type,
      entries: [
        { account: COUNTERPART[type], amount: -amount },
        { account: accounts.debt(movement.userId), amount: repaid },
        { account: accounts.available(movement.userId), amount: amount - repaid },
      ],
      available: amount - repaid,
      debt: -repaid,
    };
  });
}

/**
 * Credits out: a refund or a dispute of a top-up. Takes at most what is available (credits held for calls
 * in flight stay theirs); what cannot be taken becomes debt.
 */
export function debitFromProcessor(
  ctx: BillingContext,
  type: 'refund' | 'dispute',
  movement: ProcessorMovement,
  hooks: ProcessorHooks = {},
): Promise<ProcessorOutcome> {
  return move(ctx, movement, hooks, (wallet, amount) => {
    const taken = Math.min(amount, Math.max(0, wallet.balance - wallet.reserved));
    const owed = amount - taken;
    return {
      type,
      entries: [
        { account: accounts.available(movement.userId), amount: -taken },
        { account: accounts.debt(movement.userId), amount: -owed },
        { account: COUNTERPART[type], amount },
      ],
      available: -taken,
      debt: owed,
    };
  });
}

type Plan = {
  type: 'topup' | 'refund' | 'dispute';
  entries: Array<{ account: string; amount: number }>;
  available: number;
  debt: number;
};

/**
 * One processor movement, in one transaction: the claim, then the user's wallet lock, then the entries
 * computed from the locked wallet (so no other movement of the user runs between reading and writing),
 * then the hooks' writes.
 */
async function move(
  ctx: BillingContext,
  movement: ProcessorMovement,
  hooks: ProcessorHooks,
  plan: (wallet: { balance: number; reserved: number; debt: number }, amount: number) => Plan,
): Promise<ProcessorOutcome> {
  const now = ctx.clock.now();
  return ctx.db.transaction().execute(async (trx) => {
    let amount = movement.amount;
    if (hooks.claim) {
      const claimed = await hooks.claim(asDb(trx));
      if (claimed === false || claimed === 0) return { applied: false as const };
      if (typeof claimed === 'number') amount = claimed;
    }
    if (!Number.isSafeInteger(amount) || amount <= 0)
      throw new RangeError(`a processor movement must be positive micro-credits, got ${amount}`);
    const wallet = await lockWallet(trx, movement.userId, now);
    const planned = plan(wallet, amount);
    const entries = planned.entries;
    const after = await postMovement(
      trx,
      wallet,
      { type: planned.type, description: movement.description, reference: movement.reference, entries },
      now,
    );
    const outcome = {
      applied: true as const,
      available: planned.available,
      debt: planned.debt,
      balance: after.balance,
      debtAfter: wallet.debt + planned.debt,
      transactionId: after.transactionId,
    };
    await hooks.companionWrites?.(asDb(trx), outcome);
    return outcome;
  });
}
