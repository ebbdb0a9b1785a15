import { applicableLimitsWithSpend } from './limits.ts';
import { getBalance } from './wallets.ts';
import type { LimitPeriod } from './periods.ts';
import type { BillingContext } from './ledger.ts';

/** Who would pay for a call: the user, and the app and key whose limits apply. */
export interface Payer {
  userId: string;
  appId: string | null;
  keyId: string | null;
}

/** What a payer can still spend now, in micro-credits, and what bounds it. */
export interface Spendable {
  /** The least of the wallet's available credits and every applicable limit's headroom (never below 0). */
  amount: number;
  /** `wallet` when the wallet is the bound, else the limit period that is (`daily`, `weekly`, `monthly`, `total`). */
  boundBy: 'wallet' | LimitPeriod;
}

/**
 * What `payer` can spend right now: the wallet's available credits, lowered to the headroom
 * (`limit - spent - held`) of each spending limit that applies, in the order holds check them.
 *
 * This is a read, not a reservation: a call sizes itself with it (a chat's affordable output cap) and then
 * places its hold, which checks the same things atomically; if another call spent in between, the hold is
 * refused with the contract's error as usual. So nothing here needs the wallet lock.
 */
export async function spendable(ctx: BillingContext, payer: Payer): Promise<Spendable> {
  const wallet = await getBalance(ctx.db, payer.userId);
  let result: Spendable = { amount: Math.max(0, wallet.available), boundBy: 'wallet' };
  for (const limit of await applicableLimitsWithSpend(ctx.db, payer, ctx.clock.now())) {
    const headroom = Math.max(0, limit.limit - limit.current);
    if (headroom < result.amount) result = { amount: headroom, boundBy: limit.period };
  }
  return result;
}
