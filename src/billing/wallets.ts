import { sql, type RawBuilder } from 'kysely';
import { billingDb, type BillingDb } from './schema.ts';
import { errors } from '../platform/errors.ts';
import { userExists } from '../accounts/users.ts';
import { microsToCredits, CREDITS_RULE } from '../platform/money.ts';
import { accounts, lockWallet, postMovement, type BillingContext } from './ledger.ts';

/**
 * The user's available credits (micro-credits: balance − reserved) as an SQL expression, read from the wallet
 * row by the statement that embeds it: for another feature's conditional write that must see the balance at
 * that instant (events' low-balance alert), not one read before it.
 */
export function availableCreditsSql(userId: string): RawBuilder<number> {
  return sql<number>`(select balance - reserved from wallets where wallets.user_id = ${userId})`;
}

/** A wallet as callers see it, in micro-credits: what the user owns, what open holds reserve, and the rest. */
export interface BalanceMicros {
  balance: number;
  reserved: number;
  available: number;
}

/** The user's balance (zeros when the user has never had credits). */
export async function getBalance(db: BillingDb, userId: string): Promise<BalanceMicros> {
  const wallet = await db
    .selectFrom('wallets')
    .select(['balance', 'reserved'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  const balance = wallet?.balance ?? 0;
  const reserved = wallet?.reserved ?? 0;
  return { balance, reserved, available: balance - reserved };
}

/** Where credits that enter or leave a wallet come from, by kind of movement. */
const SOURCES = { grant: accounts.grants, topup: accounts.topups, adjustment: accounts.adjustments } as const;

/**
 * Adds (or, for an adjustment, possibly removes) credits: a grant from the operator, a purchased top-up,
 * or a correction. Grants and top-ups must be positive; an adjustment may be negative but never takes more
 * than the user has available (credits held for calls in flight are not taken back): that is a 400 naming
 * what is available. A positive amount repays the wallet's debt first. 404 when the user does not exist.
 */
export async function creditWallet(
  ctx: BillingContext,
  userId: string,
  amount: number,
  kind: keyof typeof SOURCES,
  reason: string,
): Promise<{ balance: number }> {
  if (!Number.isSafeInteger(amount) || amount === 0 || (kind !== 'adjustment' && amount < 0)) {
    throw errors.invalid(
      `A ${kind} must be a ${kind === 'adjustment' ? 'non-zero' : 'positive'} amount of credits ${CREDITS_RULE}.`,
    );
  }
  if (!(await userExists(ctx.db, userId))) throw errors.notFound('User');
  const now = ctx.clock.now();
  const outcome = await billingDb(ctx.db)
    .transaction()
    .execute(async (trx) => {
      const wallet = await lockWallet(trx, userId, now);
      const available = wallet.balance - wallet.reserved;
      if (available + amount < 0) {
        return {
          refused: errors.invalid(
            `The adjustment would make the available credits negative: ${microsToCredits(available)} credits are available.`,
            { available: microsToCredits(available) },
          ),
        };
      }
      // Credits that come in repay a debt first (see debt.ts): an operator's grant can clear one.
      const repaid = amount > 0 ? Math.min(amount, wallet.debt) : 0;
      const after = await postMovement(
        trx,
        wallet,
        {
          type: kind,
          description: reason,
          entries: [
            { account: SOURCES[kind], amount: -amount },
            { account: accounts.debt(userId), amount: repaid },
            { account: accounts.available(userId), amount: amount - repaid },
          ],
        },
        now,
      );
      return { balance: after.balance };
    });
  if ('refused' in outcome) throw outcome.refused;
  return outcome;
}
