import { sql } from 'kysely';
import type { EventsDeps } from './deps.ts';
import { microsToCredits } from '../platform/money.ts';
import type { NewEvent, RecordedEvent } from './outbox.ts';
import { eventsDb } from './schema.ts';
import { availableCreditsSql } from '../billing/wallets.ts';

/** The user's low-balance alert, micro-credits; `threshold` null when none is set. */
export interface LowBalanceAlert {
  threshold: number | null;
  /** True when `available` was last seen at or above the threshold: the next settle below it fires. */
  armed: boolean;
}

/** Reads the user's alert. */
export async function readAlert(ctx: EventsDeps, userId: string): Promise<LowBalanceAlert> {
  const row = await eventsDb(ctx.db)
    .selectFrom('event_settings')
    .select(['low_balance_threshold', 'low_balance_armed'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return { threshold: row?.low_balance_threshold ?? null, armed: row?.low_balance_armed === 1 };
}

/**
 * Sets (or, with null, removes) the threshold. It is armed when `available` is at or above it now; set above
 * what is available, it fires after the balance has been back above it once (a crossing, not a state).
 */
export async function writeAlert(ctx: EventsDeps, userId: string, threshold: number | null): Promise<LowBalanceAlert> {
  const { available } = await ctx.billing.getBalance(userId);
  const armed = threshold !== null && available >= threshold ? 1 : 0;
  const now = ctx.clock.now();
  await eventsDb(ctx.db)
    .insertInto('event_settings')
    .values({ user_id: userId, low_balance_threshold: threshold, low_balance_armed: armed, updated_at: now })
    .onConflict((oc) =>
      oc.column('user_id').doUpdateSet({ low_balance_threshold: threshold, low_balance_armed: armed, updated_at: now }),
    )
    .execute();
  return { threshold, armed: armed === 1 };
}

/**
 * After a settle (or a top-up, a refund, a dispute) of a user with a threshold (`emit` records and sends, see the service): fires `wallet.low_balance` when `available` went
 * below it while armed, and re-arms it when `available` is back at or above it.
 *
 * Invariant (one event per crossing, whatever runs concurrently in any instance): each transition is one
 * conditional UPDATE that re-reads `available` from the wallet row inside the statement itself, not from a
 * read made before it; so only one of many concurrent settles disarms (and fires, in the same transaction),
 * and a settle that read a higher balance earlier cannot re-arm an alert another settle has just fired.
 */
export async function checkLowBalance(
  ctx: EventsDeps,
  userId: string,
  emit: (event: NewEvent) => Promise<RecordedEvent | null>,
): Promise<'fired' | 'rearmed' | 'unchanged'> {
  const alert = await readAlert(ctx, userId);
  if (alert.threshold === null) return 'unchanged';
  const threshold = alert.threshold;
  const balance = await ctx.billing.getBalance(userId);
  // Billing's wallet row, read inside each statement below: the atomic condition of the transitions.
  const available = availableCreditsSql(userId);
  const now = ctx.clock.now();
  if (balance.available < threshold && alert.armed) {
    const recorded = await emit({
      type: 'wallet.low_balance',
      userId,
      data: {
        userId,
        threshold: microsToCredits(threshold),
        available: microsToCredits(balance.available),
        balance: microsToCredits(balance.balance),
      },
      guard: async (trx) => {
        const result = await trx
          .updateTable('event_settings')
          .set({ low_balance_armed: 0, updated_at: now })
          .where('user_id', '=', userId)
          .where('low_balance_armed', '=', 1)
          .where(sql<boolean>`${available} < low_balance_threshold`)
          .executeTakeFirst();
        return Number(result.numUpdatedRows) === 1;
      },
    });
    return recorded ? 'fired' : 'unchanged';
  }
  if (balance.available >= threshold && !alert.armed) {
    const result = await eventsDb(ctx.db)
      .updateTable('event_settings')
      .set({ low_balance_armed: 1, updated_at: now })
      .where('user_id', '=', userId)
      .where('low_balance_armed', '=', 0)
      .where(sql<boolean>`${available} >= low_balance_threshold`)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1 ? 'rearmed' : 'unchanged';
  }
  return 'unchanged';
}
