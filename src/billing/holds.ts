import type { Kysely, Selectable } from 'kysely';
import { preparedInsert, preparedQuery } from '../platform/db/prepared.ts';
import { asDb } from '../platform/db/own-tables.ts';
import type { Db } from '../platform/db/connect.ts';
import { errors } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { microsToCredits } from '../platform/money.ts';
import {
  accounts,
  insertCompanion,
  lockWallet,
  postMovement,
  type CompanionWrite,
  type Trx,
  type Wallet,
  type BillingContext,
} from './ledger.ts';
import { applicableLimitsWithSpend, counterWrite, spendingLimitExceeded } from './limits.ts';
import { dayStart, monthStart } from './periods.ts';
import { closeHoldInOneStatement, placeHoldInOneStatement, walletRefusal, type NewHold } from './pg-holds.ts';
import { usageOfClose, usageRecordWrite, type UsageDraft } from './usage-records.ts';
import {
  billingDb,
  OPEN,
  type BillingTables as Tables,
  type HoldsTable,
  type HoldStatus,
  type MovementType,
} from './schema.ts';

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
  if (!Number.isSafeInteger(value) || value < 0)
    throw new RangeError(`${name} must be a non-negative integer of micro-credits, got ${value}`);
}

function holdScope(hold: HoldRow) {
  return {
    userId: hold.user_id,
    appId: hold.app_id,
    keyId: hold.key_id,
    periodDay: hold.period_day,
    periodMonth: hold.period_month,
  };
}

const insertHold = preparedInsert<HoldRow>('holds', [
  'id',
  'user_id',
  'app_id',
  'key_id',
  'amount',
  'captured',
  'refunded',
  'status',
  'description',
  'created_at',
  'expires_at',
  'closed_at',
  'period_day',
  'period_month',
]);

/** How a hold ends: its status, the most it may capture, and the movement that records it. */
interface HoldEnding {
  status: 'settled' | 'released' | 'expired';
  /** Micro-credits the caller wants captured; the hold's amount caps it. */
  capture: number;
  /** The movement's type and description, given what was actually captured. */
  movement: (captured: number) => { type: MovementType; description: string };
}

/**
 * Claims open holds for closing, in one statement: marks them closed with what they capture (at most
 * their amount) and returns them as they are now. A hold that is not open, or not `userId`'s, is not
 * returned, so a hold is closed exactly once even if two closers reach it (the wallet lock makes them
 * take turns; the `status = 'open'` condition makes the second find nothing).
 */
async function claimHolds(
  trx: Trx,
  userId: string,
  which: { holdId: string } | { expiredAt: number },
  ending: HoldEnding,
  now: number,
): Promise<HoldRow[]> {
  const values = { status: ending.status, capture: ending.capture, now, userId };
  const { rows } =
    'holdId' in which
      ? await claimHold(trx, { ...values, holdId: which.holdId })
      : await claimOverdueHolds(trx, { ...values, expiredAt: which.expiredAt });
  return rows;
}

type ClaimValues = { status: HoldStatus; capture: number; now: number; userId: string };

/** The claim's update, with the capture computed in SQL: at most the hold's amount. */
function claimUpdate(db: Kysely<Tables>, p: ClaimValues) {
  return db
    .updateTable('holds')
    .set((eb) => ({
      status: p.status,
      captured: eb.case().when('amount', '<', p.capture).then(eb.ref('amount')).else(eb.val(p.capture)).end(),
      closed_at: p.now,
    }))
    .where('user_id', '=', p.userId)
    .where('status', '=', OPEN);
}
const claimHold = preparedQuery((db: Kysely<Tables>, p: ClaimValues & { holdId: string }) =>
  claimUpdate(db, p).where('id', '=', p.holdId).returningAll(),
);
const claimOverdueHolds = preparedQuery((db: Kysely<Tables>, p: ClaimValues & { expiredAt: number }) =>
  claimUpdate(db, p).where('expires_at', '<=', p.expiredAt).returningAll(),
);

/**
 * Records the close of a claimed hold on the locked wallet: its capture goes to revenue and the rest back
 * to the user's available credits, as one balanced movement, and the hold's counters move from held to
 * spent. Returns the wallet after it.
 */
async function recordClose(
  trx: Trx,
  wallet: Wallet,
  hold: HoldRow,
  ending: HoldEnding,
  now: number,
  companion: CompanionWrite | null = null,
): Promise<Wallet> {
  const released = hold.amount - hold.captured;
  return postMovement(
    trx,
    wallet,
    {
      ...ending.movement(hold.captured),
      holdId: hold.id,
      entries: [
        { account: accounts.held(hold.user_id), amount: -hold.amount },
        { account: accounts.revenue, amount: hold.captured },
        { account: accounts.available(hold.user_id), amount: released },
      ],
    },
    now,
    [counterWrite(holdScope(hold), { held: -hold.amount, spent: hold.captured }), companion],
  );
}

const EXPIRY: HoldEnding = {
  status: 'expired',
  capture: 0,
  movement: () => ({ type: 'expiry', description: 'Hold expired' }),
};
const RELEASE: HoldEnding = {
  status: 'released',
  capture: 0,
  movement: () => ({ type: 'release', description: 'Hold released' }),
};

/**
 * Expires the user's open holds that are past their expiry, on the locked wallet (placing a hold starts
 * with this; the sweep is made of it). Returns the wallet after them and how many expired.
 */
async function expireOverdue(
  trx: Trx,
  locked: Wallet & { hasOverdueHolds: boolean },
  now: number,
): Promise<{ wallet: Wallet; expired: number }> {
  let wallet: Wallet = locked;
  if (!locked.hasOverdueHolds) return { wallet, expired: 0 };
  const holds = await claimHolds(trx, wallet.user_id, { expiredAt: now }, EXPIRY, now);
  for (const hold of holds) wallet = await recordClose(trx, wallet, hold, EXPIRY, now);
  return { wallet, expired: holds.length };
}

/**
 * Places a hold: reserves `amount` of the user's available credits for one call.
 *
 * Security invariant: the checks and the hold are one transaction that starts by locking the user's wallet,
 * so no other movement of this user (hold, settlement, grant, in this process or another) runs between
 * reading the limits, the counters and the balance and writing the hold. Check-then-act cannot race.
 * Order (decisions.md "Billing"): each applicable spending limit (app daily, weekly, monthly, total, then the
 * key's; a weekly limit's spend is its days' counters summed), `spent + held + amount <= limit` else 429; then
 * the wallet, `balance - reserved >= amount` else 402.
 */
export async function placeHold(
  ctx: BillingContext,
  input: PlaceHoldInput,
): Promise<{ holdId: string; expiresAt: number }> {
  assertMicros('amount', input.amount);
  const ttlMs = input.ttlMs ?? ctx.config.HOLD_TTL_SECONDS * 1000;
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0)
    throw new RangeError(`ttlMs must be a positive integer, got ${ttlMs}`);
  const now = ctx.clock.now();
  // What both paths write, under one id: nothing is written under it when the one statement hands over.
  const placing: NewHold = {
    id: newId('hold'),
    user_id: input.userId,
    app_id: input.appId,
    key_id: input.keyId,
    amount: input.amount,
    description: input.description ?? 'Hold',
    created_at: now,
    expires_at: now + ttlMs,
    period_day: dayStart(now),
    period_month: monthStart(now),
  };
  if (ctx.dialect === 'postgres') {
    // One statement (pg-functions.ts), unless overdue holds must be expired first (or the schema predates
    // the functions): then the transaction below.
    const placed = await placeHoldInOneStatement(ctx, placing);
    if (placed === 'placed') return { holdId: placing.id, expiresAt: placing.expires_at };
    if (placed !== 'transaction') throw placed.refused;
  }
  const outcome = await billingDb(ctx.db)
    .transaction()
    .execute(async (trx) => {
      // Stale holds would block credits the user has; they are released first (and stay released even when
      // this hold is refused: the refusal is returned, not thrown, so this transaction still commits).
      const locked = await lockWallet(trx, input.userId, now);
      const { wallet } = await expireOverdue(trx, locked, now);

      for (const limit of await applicableLimitsWithSpend(trx, input, now)) {
        if (limit.current + input.amount > limit.limit)
          return { refused: spendingLimitExceeded(limit, limit.current, input.amount, now) };
      }
      const available = wallet.balance - wallet.reserved;
      // Debt (see debt.ts) is read from the locked wallet row, so it is as atomic as the balance check.
      const refused = walletRefusal({ available, debt: locked.debt }, input.amount);
      if (refused) return { refused };

      const hold = { ...placing, captured: 0, refunded: 0, status: 'open' as const, closed_at: null };
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
        [insertCompanion('holds', insertHold, hold), counterWrite(holdScope(hold), { held: input.amount, spent: 0 })],
      );
      return { placed: true as const };
    });
  if ('refused' in outcome) throw outcome.refused;
  return { holdId: placing.id, expiresAt: placing.expires_at };
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
   * Companion writes: what must commit with the close or not at all (a usage record, a prediction's
   * settlement), run in the close's transaction, only by the call that closes the hold, so they happen
   * exactly once.
   */
  companionWrites?: (trx: Db, closed: { captured: number; afterExpiry: boolean }) => Promise<void>;
  /**
   * A companion write that is one INSERT (a usage record), built once the capture is known. Unlike
   * `companionWrites` it joins the movement's own statement on PostgreSQL: one round trip less.
   */
  companion?: (closed: { captured: number; afterExpiry: boolean }) => CompanionWrite;
  /**
   * The call's usage record, written with the close by the call that closes the hold (its cost, uncollected
   * part and settlement filled in from what was captured). On PostgreSQL it lets the close be one statement.
   */
  usage?: UsageDraft;
  /**
   * Settle only: when the hold expired before this settle, charge the cost anyway from the user's available
   * credits (down to zero, never below) instead of answering `settled: false`. The meter sets it: a call
   * that produced output is never free because its hold lapsed.
   */
  afterExpiry?: boolean;
}

/**
 * Closes the hold `ending` says, under its owner's wallet lock, when it is still open; then runs
 * `companionWrites` in the same transaction. The owner is read first without a lock (it never changes) unless
 * the caller gave it. Null when the hold was unknown, someone else's, or no longer open.
 */
async function closeOpenHold(
  ctx: BillingContext,
  holdId: string,
  knownOwner: string | undefined,
  ending: HoldEnding,
  closeOptions: Pick<CloseHoldOptions, 'companionWrites' | 'companion' | 'usage' | 'afterExpiry'>,
): Promise<{ captured: number; afterExpiry: boolean } | null> {
  const { usage, ...rest } = closeOptions;
  const options =
    usage && !rest.companion
      ? {
          ...rest,
          companion: (closed: { captured: number; afterExpiry: boolean }) =>
            usageRecordWrite(usageOfClose(usage, closed)),
        }
      : rest;
  const owner =
    knownOwner ??
    (await billingDb(ctx.db).selectFrom('holds').select('user_id').where('id', '=', holdId).executeTakeFirst())
      ?.user_id;
  if (!owner) return null;
  const now = ctx.clock.now();
  if (ctx.dialect === 'postgres' && !options.companionWrites && !rest.companion && ending.status !== 'expired') {
    // One statement (pg-functions.ts). A hold it did not find open may have expired: the settle that
    // charges after expiry takes the transaction below, off the hot path.
    const description = ending.status === 'settled' ? ending.movement(1).description : 'Hold released';
    const closed = await closeHoldInOneStatement(ctx, {
      holdId,
      userId: owner,
      status: ending.status,
      capture: ending.capture,
      description,
      usage: usage ?? null,
      now,
    });
    if (closed !== 'transaction') {
      if (closed) return { captured: closed.captured, afterExpiry: false };
      if (ending.status !== 'settled' || !options.afterExpiry || ending.capture === 0) return null;
    }
  }
  return billingDb(ctx.db)
    .transaction()
    .execute(async (trx) => {
      const wallet = await lockWallet(trx, owner, now, { overdue: false });
      const [hold] = await claimHolds(trx, owner, { holdId }, ending, now);
      if (!hold) {
        // Off the hot path: only a hold that was no longer open gets here.
        if (ending.status !== 'settled' || !options.afterExpiry || ending.capture === 0) return null;
        return chargeAfterExpiry(trx, wallet, holdId, ending.capture, now, options);
      }
      await recordClose(
        trx,
        wallet,
        hold,
        ending,
        now,
        options.companion?.({ captured: hold.captured, afterExpiry: false }) ?? null,
      );
      await options.companionWrites?.(asDb(trx), { captured: hold.captured, afterExpiry: false });
      return { captured: hold.captured, afterExpiry: false };
    });
}

/**
 * Charges a call whose hold expired before it was settled (a crash, a stalled heartbeat): the cost, capped
 * at what was held, comes from the user's available credits, down to zero and never below, as a `capture`
 * movement; the hold is marked settled with that capture and counts as spent in its periods, as any settle.
 *
 * Exactly-once invariant: the claim is `status = 'expired'` → `'settled'` under the wallet lock, so a hold
 * is charged after its expiry at most once, and never if it was settled or released. Null when the hold
 * was not an expired one.
 */
async function chargeAfterExpiry(
  trx: Trx,
  wallet: Wallet,
  holdId: string,
  cost: number,
  now: number,
  options: Pick<CloseHoldOptions, 'companionWrites' | 'companion'>,
): Promise<{ captured: number; afterExpiry: true } | null> {
  const available = Math.max(0, wallet.balance - wallet.reserved);
  const [hold] = (
    await claimExpiredHold(trx, { holdId, userId: wallet.user_id, capture: Math.min(cost, available), now })
  ).rows;
  if (!hold) return null;
  await postMovement(
    trx,
    wallet,
    {
      type: hold.captured > 0 ? 'capture' : 'release',
      description: hold.captured > 0 ? 'Charge (hold had expired)' : 'Hold had expired; nothing available to charge',
      holdId: hold.id,
      entries: [
        { account: accounts.available(hold.user_id), amount: -hold.captured },
        { account: accounts.revenue, amount: hold.captured },
      ],
    },
    now,
    [
      counterWrite(holdScope(hold), { held: 0, spent: hold.captured }),
      options.companion?.({ captured: hold.captured, afterExpiry: true }) ?? null,
    ],
  );
  await options.companionWrites?.(asDb(trx), { captured: hold.captured, afterExpiry: true });
  return { captured: hold.captured, afterExpiry: true };
}

const claimExpiredHold = preparedQuery(
  (db: Kysely<Tables>, p: { holdId: string; userId: string; capture: number; now: number }) =>
    db
      .updateTable('holds')
      .set((eb) => ({
        status: 'settled',
        captured: eb.case().when('amount', '<', p.capture).then(eb.ref('amount')).else(eb.val(p.capture)).end(),
        closed_at: p.now,
      }))
      .where('id', '=', p.holdId)
      .where('user_id', '=', p.userId)
      .where('status', '=', 'expired')
      .returningAll(),
);

/**
 * Moves an open hold's expiry forward to `expiresAt` (never back), in one statement, without the wallet
 * lock: the meter's heartbeat, so a call still running is never expired by the sweep or by the user's next
 * hold. False when the hold is no longer open (closed, or expired already: then the settle charges after
 * expiry). A sweep that claims the hold first wins; one that comes after sees the new expiry (PostgreSQL
 * re-checks its condition on the updated row; SQLite runs one writer at a time).
 */
export async function extendHold(
  ctx: BillingContext,
  holdId: string,
  userId: string,
  expiresAt: number,
): Promise<boolean> {
  return (await extendOpenHold(ctx.db, { holdId, userId, expiresAt })).rows.length > 0;
}

const extendOpenHold = preparedQuery((db: Kysely<Tables>, p: { holdId: string; userId: string; expiresAt: number }) =>
  db
    .updateTable('holds')
    .set({ expires_at: p.expiresAt })
    .where('id', '=', p.holdId)
    .where('user_id', '=', p.userId)
    .where('status', '=', OPEN)
    .where('expires_at', '<', p.expiresAt)
    .returning('id'),
);

/** What a settle did: `afterExpiry` is set when the hold had expired and the cost was charged from available credits. */
export interface SettleResult {
  settled: boolean;
  captured: number;
  afterExpiry?: true;
}

/**
 * Settles a hold: captures `min(actual, amount)` and releases the rest, exactly once. A hold that is no
 * longer open (settled, released, expired), or unknown, answers `{ settled: false, captured: 0 }`.
 * A hold past its expiry that the sweep has not reached yet is still open, and settles normally.
 */
export async function settleHold(
  ctx: BillingContext,
  holdId: string,
  actual: number,
  options: CloseHoldOptions = {},
): Promise<SettleResult> {
  assertMicros('actual', actual);
  const description = options.description ?? 'Charge';
  const ending: HoldEnding = {
    status: 'settled',
    capture: actual,
    movement: (captured) =>
      captured > 0 ? { type: 'capture', description } : { type: 'release', description: 'Hold released' },
  };
  const closed = await closeOpenHold(ctx, holdId, options.userId, ending, options);
  return closed === null
    ? { settled: false, captured: 0 }
    : { settled: true, captured: closed.captured, ...(closed.afterExpiry ? { afterExpiry: true } : {}) };
}

/**
 * Releases a hold whole (the call cost nothing), exactly once; `released: false` when it was not open.
 * `options.companionWrites` runs in the release's transaction when this call released it.
 */
export async function releaseHold(
  ctx: BillingContext,
  holdId: string,
  options: Omit<CloseHoldOptions, 'description'> = {},
): Promise<{ released: boolean }> {
  return { released: (await closeOpenHold(ctx, holdId, options.userId, RELEASE, options)) !== null };
}

/**
 * The sweep: expires every open hold past its expiry, each user's under that user's wallet lock in a
 * transaction of its own, claimed by a conditional update, so processes sweeping at once never expire a
 * hold twice.
 */
export async function releaseExpiredHolds(ctx: BillingContext, batchSize = 500): Promise<{ expired: number }> {
  let expired = 0;
  for (;;) {
    const now = ctx.clock.now();
    const due = await billingDb(ctx.db)
      .selectFrom('holds')
      .select('user_id')
      .distinct()
      .where('status', '=', OPEN)
      .where('expires_at', '<=', now)
      .limit(batchSize)
      .execute();
    for (const { user_id: userId } of due) {
      expired += await billingDb(ctx.db)
        .transaction()
        .execute(async (trx) => (await expireOverdue(trx, await lockWallet(trx, userId, now), now)).expired);
    }
    if (due.length < batchSize) return { expired };
  }
}

/**
 * Gives back `amount` of what a settled hold captured (for example a prediction the provider failed after
 * billing), as a `refund` movement from revenue to the user's available credits. The hold's spend in its
 * periods goes down by the same amount. 404 for an unknown hold; 400 beyond what is left to refund.
 */
export async function refundHold(
  ctx: BillingContext,
  holdId: string,
  amount: number,
  reason = 'Refund',
): Promise<{ refunded: number; balance: number }> {
  assertMicros('amount', amount);
  if (amount === 0) throw errors.invalid('A refund must be more than zero.');
  const owner = await billingDb(ctx.db)
    .selectFrom('holds')
    .select('user_id')
    .where('id', '=', holdId)
    .executeTakeFirst();
  if (!owner) throw errors.notFound('Hold');
  const now = ctx.clock.now();
  const outcome = await billingDb(ctx.db)
    .transaction()
    .execute(async (trx) => {
      const wallet = await lockWallet(trx, owner.user_id, now);
      const hold = await trx.selectFrom('holds').selectAll().where('id', '=', holdId).executeTakeFirstOrThrow();
      const refundable = hold.captured - hold.refunded;
      if (amount > refundable)
        return {
          refused: errors.invalid(`Only ${microsToCredits(refundable)} credits of this hold can still be refunded.`),
        };
      await trx
        .updateTable('holds')
        .set({ refunded: hold.refunded + amount })
        .where('id', '=', holdId)
        .execute();
      const after = await postMovement(
        trx,
        wallet,
        {
          type: 'refund',
          description: reason,
          holdId,
          entries: [
            { account: accounts.revenue, amount: -amount },
            { account: accounts.available(hold.user_id), amount },
          ],
        },
        now,
        [counterWrite(holdScope(hold), { held: 0, spent: -amount })],
      );
      return { balance: after.balance };
    });
  if ('refused' in outcome) throw outcome.refused;
  return { refunded: amount, balance: outcome.balance };
}
