import { sql, type RawBuilder } from 'kysely';
import { billingDb, type BillingDb } from './schema.ts';
import { ApiError, errors } from '../platform/errors.ts';
import { sha256Hex } from '../platform/crypto.ts';
import { userExists } from '../accounts/users.ts';
import { microsToCredits, CREDITS_RULE, groupThousands, MAX_CREDITS, MAX_MICROS } from '../platform/money.ts';
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

/**
 * The most micro-credits a wallet holds: {@link MAX_CREDITS}, up to which every balance the API shows is exact.
 * A balance stored above it (none can be made through the API) is shown as it reads; only movements that would
 * take a balance past it are refused.
 */
const MAX_BALANCE_MICROS = MAX_MICROS;

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
  idempotency?: Idempotency,
): Promise<{ balance: number; replayed?: true }> {
  if (!Number.isSafeInteger(amount) || amount === 0 || (kind !== 'adjustment' && amount < 0)) {
    throw errors.invalid(
      `A ${kind} must be a ${kind === 'adjustment' ? 'non-zero' : 'positive'} amount of credits ${CREDITS_RULE}.`,
    );
  }
  if (!(await userExists(ctx.db, userId))) throw errors.notFound('User');
  const now = ctx.clock.now();
  const fingerprint = idempotency && sha256Hex(JSON.stringify([userId, kind, amount, reason]));
  const attempt = () =>
    billingDb(ctx.db)
      .transaction()
      .execute(async (trx) => {
        const wallet = await lockWallet(trx, userId, now);
        if (idempotency) {
          const first = await trx
            .selectFrom('operator_credit_requests')
            .select(['fingerprint', 'balance'])
            .where('idempotency_key', '=', idempotency.key)
            .executeTakeFirst();
          if (first && first.fingerprint === fingerprint)
            return { balance: Number(first.balance), replayed: true as const };
          if (first) return { refused: keyReused() };
        }
        const available = wallet.balance - wallet.reserved;
        if (available + amount < 0) {
          return {
            refused: errors.invalid(
              `The adjustment would make the available credits negative: ${microsToCredits(available)} credits are available.`,
              { available: microsToCredits(available) },
            ),
          };
        }
        if (amount > 0 && wallet.balance + amount > MAX_BALANCE_MICROS) {
          // Past 2^33 credits a balance no longer has a JSON number of its own (money.ts, MAX_CREDITS).
          return {
            refused: errors.invalid(
              `The ${kind} would take the balance past ${groupThousands(MAX_CREDITS)} credits, the most a wallet holds: it holds ${microsToCredits(wallet.balance)} credits.`,
              { balance: microsToCredits(wallet.balance) },
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
        if (idempotency) {
          // The same key for another user's wallet (another lock) raced this one: the later commit finds the
          // key taken here, rolls its movement back and runs again, to be refused as a reuse.
          const claimed = await trx
            .insertInto('operator_credit_requests')
            .values({
              idempotency_key: idempotency.key,
              fingerprint: fingerprint!,
              user_id: userId,
              balance: after.balance,
              created_at: now,
            })
            .onConflict((oc) => oc.column('idempotency_key').doNothing())
            .returning('idempotency_key')
            .executeTakeFirst();
          if (!claimed) throw new KeyTaken();
        }
        return { balance: after.balance };
      });
  let outcome;
  try {
    outcome = await attempt();
  } catch (error) {
    if (!(error instanceof KeyTaken)) throw error;
    outcome = await attempt();
  }
  if ('refused' in outcome) throw outcome.refused;
  return outcome;
}

/**
 * An operator request's `Idempotency-Key`: a retry of the same request (same user, amount and reason) gets the
 * first one's answer and moves nothing; the same key with another request is refused (422).
 *
 * Invariant: the key is recorded in the movement's own transaction, after the wallet's lock, so a request and
 * its retry never both move credits, in one process or several: the retry waits on the lock and then reads
 * the key; a request on another wallet that raced for the key finds it taken when it commits, and rolls back.
 */
export interface Idempotency {
  key: string;
}

/** Raised inside the transaction to roll it back: another request took the key first. */
class KeyTaken extends Error {}

function keyReused() {
  return new ApiError(
    'IDEMPOTENCY_KEY_REUSED',
    'This Idempotency-Key was used for another request (another user, amount or reason); that request stands and this one did nothing. Use a new key for a new request.',
  );
}
