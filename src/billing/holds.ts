import type { Selectable } from 'kysely';
import { errors } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { microsToCredits } from '../platform/money.ts';
import { accounts, lockWallet, postMovement, type Trx, type Wallet, type BillingContext } from './ledger.ts';
import { applicableLimits, bumpCounters, insufficientCredits, readSpend, spendingLimitExceeded, subjectKey } from './limits.ts';
import { dayStart, monthStart } from './periods.ts';
import type { HoldsTable, MovementType } from './tables.ts';

type HoldRow = Selectable<HoldsTable>;

/** What a caller asks to reserve before a billable call. */
export interface PlaceHoldInput {
  userId: string;
  /** The OAuth app acting for the user (its limits apply), or null for first-party calls. */
  appId: string | null;
  /** The API key used (its limit applies), or null. */
  keyId: string | null;
  /** Micro-credits: the most the call can cost. */
  amount: number;
  /** Lifetime before the sweep releases it; default `HOLD_TTL_SECONDS`. */
  ttlMs?: number;
  description?: string;
}

function assertMicros(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer of micro-credits, got ${value}`);
}

function holdScope(hold: HoldRow) {
  return { userId: hold.user_id, appId: hold.app_id, keyId: hold.key_id, periodDay: hold.period_day, periodMonth: hold.period_month };
}

/**
 * Closes an open hold on a locked wallet: captures `captured` (≤ the hold's amount) into revenue and gives
 * the rest back to the user's available credits, as one balanced movement, and moves the hold's counters
 * from held to spent. Claims the hold with a conditional update first, so a hold is closed exactly once
 * even if two closers reach it.
 */
async function closeHold(trx: Trx, wallet: Wallet, hold: HoldRow, outcome: { status: 'settled' | 'released' | 'expired'; captured: number; type: MovementType; description: string }, now: number): Promise<Wallet | null> {
  const claimed = await trx
    .updateTable('holds')
    .set({ status: outcome.status, captured: outcome.captured, closed_at: now })
    .where('id', '=', hold.id)
    .where('status', '=', 'open')
    .executeTakeFirst();
  if (Number(claimed.numUpdatedRows) !== 1) return null;
  const released = hold.amount - outcome.captured;
  const after = await postMovement(
    trx,
    wallet,
    {
      type: outcome.type,
      description: outcome.description,
      holdId: hold.id,
      entries: [
        { account: accounts.held(hold.user_id), amount: -hold.amount },
        { account: accounts.revenue, amount: outcome.captured },
        { account: accounts.available(hold.user_id), amount: released },
      ],
    },
    now,
  );
  await bumpCounters(trx, holdScope(hold), { held: -hold.amount, spent: outcome.captured });
  return after;
}

/** Expires the user's open holds that are past their expiry, on the locked wallet (placing a hold starts with this). */
async function expireOverdue(trx: Trx, locked: Wallet & { hasOverdueHolds: boolean }, now: number): Promise<Wallet> {
  let wallet: Wallet = locked;
  if (!locked.hasOverdueHolds) return wallet;
  const overdue = await trx.selectFrom('holds').selectAll().where('user_id', '=', wallet.user_id).where('status', '=', 'open').where('expires_at', '<=', now).execute();
  for (const hold of overdue) {
    wallet = (await closeHold(trx, wallet, hold, { status: 'expired', captured: 0, type: 'expiry', description: 'Hold expired' }, now)) ?? wallet;
  }
  return wallet;
}

/**
 * Places a hold: reserves `amount` of the user's available credits for one call.
 *
 * Security invariant: the checks and the hold are one transaction that starts by locking the user's wallet,
 * so no other movement of this user (hold, settlement, grant, in this process or another) runs between
 * reading the limits, the counters and the balance and writing the hold. Check-then-act cannot race.
 * Order (decisions.md "Billing"): each applicable spending limit (app daily, monthly, total, then the key's),
 * `spent + held + amount <= limit` else 429; then the wallet, `balance - reserved >= amount` else 402.
 */
export async function placeHold(ctx: BillingContext, input: PlaceHoldInput): Promise<{ holdId: string; expiresAt: number }> {
  assertMicros('amount', input.amount);
  const ttlMs = input.ttlMs ?? ctx.config.HOLD_TTL_SECONDS * 1000;
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) throw new RangeError(`ttlMs must be a positive integer, got ${ttlMs}`);
  const now = ctx.clock.now();
  const outcome = await ctx.db.transaction().execute(async (trx) => {
    // Stale holds would block credits the user has; they are released first (and stay released even when
    // this hold is refused: the refusal is returned, not thrown, so this transaction still commits).
    const wallet = await expireOverdue(trx, await lockWallet(trx, ctx.dialect, input.userId, now), now);

    const limits = await applicableLimits(trx, input);
    const spendBySubject = new Map<string, Awaited<ReturnType<typeof readSpend>>>();
    for (const limit of limits) {
      const key = subjectKey(limit.subject);
      if (!spendBySubject.has(key)) spendBySubject.set(key, await readSpend(trx, limit.subject, now));
      const spend = spendBySubject.get(key)![limit.period];
      const current = spend.spent + spend.held;
      if (current + input.amount > limit.limit) return { refused: spendingLimitExceeded(limit, current, input.amount, now) };
    }
    const available = wallet.balance - wallet.reserved;
    if (available < input.amount) return { refused: insufficientCredits(available, input.amount) };

    const hold = {
      id: newId('hold'),
      user_id: input.userId,
      app_id: input.appId,
      key_id: input.keyId,
      amount: input.amount,
      captured: 0,
      refunded: 0,
      status: 'open' as const,
      description: input.description ?? 'Hold',
      created_at: now,
      expires_at: now + ttlMs,
      closed_at: null,
      period_day: dayStart(now),
      period_month: monthStart(now),
    };
    await trx.insertInto('holds').values(hold).execute();
    await postMovement(
      trx,
      wallet,
      {
        type: 'hold',
        description: hold.description,
        holdId: hold.id,
        entries: [
          { account: accounts.available(input.userId), amount: -input.amount },
          { account: accounts.held(input.userId), amount: input.amount },
        ],
      },
      now,
    );
    await bumpCounters(trx, holdScope(hold), { held: input.amount, spent: 0 });
    return { hold };
  });
  if ('refused' in outcome) throw outcome.refused;
  return { holdId: outcome.hold.id, expiresAt: outcome.hold.expires_at };
}

/** How a settle or release is recorded, and what must commit with it. */
export interface CloseHoldOptions {
  /** What the user sees on the movement (settle only; default "Charge"). */
  description?: string;
  /**
   * The hold's owner, when the caller knows it: saves the read that finds it. A hold that belongs to
   * someone else is treated as unknown.
   */
  userId?: string;
  /**
   * Writes that must commit with the close or not at all (a usage record, a prediction's settlement): run
   * in the close's transaction, only by the call that closes the hold, so they happen exactly once.
   */
  alongside?: (trx: Trx, closed: { captured: number }) => Promise<void>;
}

/**
 * Runs `close` on the hold under its owner's wallet lock, when the hold is still open. The owner is read
 * first without a lock (it never changes) unless the caller gave it, then the hold is read again after the
 * lock, so its status is the one every other process agrees on.
 */
async function withOpenHold<T>(ctx: BillingContext, holdId: string, knownOwner: string | undefined, close: (trx: Trx, wallet: Wallet, hold: HoldRow, now: number) => Promise<T>): Promise<T | null> {
  const owner = knownOwner ?? (await ctx.db.selectFrom('holds').select('user_id').where('id', '=', holdId).executeTakeFirst())?.user_id;
  if (!owner) return null;
  const now = ctx.clock.now();
  return ctx.db.transaction().execute(async (trx) => {
    const wallet = await lockWallet(trx, ctx.dialect, owner, now);
    const hold = await trx.selectFrom('holds').selectAll().where('id', '=', holdId).executeTakeFirst();
    if (!hold || hold.user_id !== owner || hold.status !== 'open') return null;
    return close(trx, wallet, hold, now);
  });
}

/**
 * Settles a hold: captures `min(actual, amount)` and releases the rest, exactly once. A hold that is no
 * longer open (settled, released, expired), or unknown, answers `{ settled: false, captured: 0 }`.
 * A hold past its expiry that the sweep has not reached yet is still open, and settles normally.
 */
export async function settleHold(ctx: BillingContext, holdId: string, actual: number, options: CloseHoldOptions = {}): Promise<{ settled: boolean; captured: number }> {
  assertMicros('actual', actual);
  const description = options.description ?? 'Charge';
  const result = await withOpenHold(ctx, holdId, options.userId, async (trx, wallet, hold, now) => {
    const captured = Math.min(actual, hold.amount);
    const closed = await closeHold(trx, wallet, hold, { status: 'settled', captured, type: captured > 0 ? 'capture' : 'release', description: captured > 0 ? description : 'Hold released' }, now);
    if (!closed) return null;
    await options.alongside?.(trx, { captured });
    return captured;
  });
  return result === null ? { settled: false, captured: 0 } : { settled: true, captured: result };
}

/**
 * Releases a hold whole (the call cost nothing), exactly once; `released: false` when it was not open.
 * `options.alongside` runs in the release's transaction when this call released it.
 */
export async function releaseHold(ctx: BillingContext, holdId: string, options: Omit<CloseHoldOptions, 'description'> = {}): Promise<{ released: boolean }> {
  const result = await withOpenHold(ctx, holdId, options.userId, async (trx, wallet, hold, now) => {
    const closed = await closeHold(trx, wallet, hold, { status: 'released', captured: 0, type: 'release', description: 'Hold released' }, now);
    if (!closed) return null;
    await options.alongside?.(trx, { captured: 0 });
    return closed;
  });
  return { released: result !== null };
}

/**
 * The sweep: expires every open hold past its expiry, each in its own transaction under its owner's wallet
 * lock and claimed by a conditional update, so processes sweeping at once never expire a hold twice.
 */
export async function releaseExpiredHolds(ctx: BillingContext, batchSize = 500): Promise<{ expired: number }> {
  let expired = 0;
  for (;;) {
    const now = ctx.clock.now();
    const due = await ctx.db.selectFrom('holds').select('id').where('status', '=', 'open').where('expires_at', '<=', now).orderBy('expires_at').limit(batchSize).execute();
    for (const { id } of due) {
      const closed = await withOpenHold(ctx, id, undefined, (trx, wallet, hold, at) =>
        hold.expires_at <= at ? closeHold(trx, wallet, hold, { status: 'expired', captured: 0, type: 'expiry', description: 'Hold expired' }, at) : Promise.resolve(null),
      );
      if (closed) expired += 1;
    }
    if (due.length < batchSize) return { expired };
  }
}

/**
 * Gives back `amount` of what a settled hold captured (for example a prediction the provider failed after
 * billing), as a `refund` movement from revenue to the user's available credits. The hold's spend in its
 * periods goes down by the same amount. 404 for an unknown hold; 400 beyond what is left to refund.
 */
export async function refundHold(ctx: BillingContext, holdId: string, amount: number, reason = 'Refund'): Promise<{ refunded: number; balance: number }> {
  assertMicros('amount', amount);
  if (amount === 0) throw errors.invalid('A refund must be more than zero.');
  const owner = await ctx.db.selectFrom('holds').select('user_id').where('id', '=', holdId).executeTakeFirst();
  if (!owner) throw errors.notFound('Hold');
  const now = ctx.clock.now();
  const outcome = await ctx.db.transaction().execute(async (trx) => {
    const wallet = await lockWallet(trx, ctx.dialect, owner.user_id, now);
    const hold = await trx.selectFrom('holds').selectAll().where('id', '=', holdId).executeTakeFirstOrThrow();
    const refundable = hold.captured - hold.refunded;
    if (amount > refundable) return { refused: errors.invalid(`Only ${microsToCredits(refundable)} credits of this hold can still be refunded.`) };
    await trx.updateTable('holds').set({ refunded: hold.refunded + amount }).where('id', '=', holdId).execute();
    const after = await postMovement(
      trx,
      wallet,
      { type: 'refund', description: reason, holdId, entries: [{ account: accounts.revenue, amount: -amount }, { account: accounts.available(hold.user_id), amount }] },
      now,
    );
    await bumpCounters(trx, holdScope(hold), { held: 0, spent: -amount });
    return { balance: after.balance };
  });
  if ('refused' in outcome) throw outcome.refused;
  return { refunded: amount, balance: outcome.balance };
}
