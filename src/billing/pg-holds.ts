import { sql, type Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { preparedQuery } from '../platform/db/prepared.ts';
import { StatementBatcher } from '../platform/db/statement-batch.ts';
import type { ApiError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import type { BillingContext } from './ledger.ts';
import { insufficientCredits, spendingLimitExceeded, subjectKey, subjectsOf } from './limits.ts';
import type { LimitPeriod } from './periods.ts';
import { usageDraftRow, type UsageDraft } from './usage-records.ts';
import { debtOwed } from './debt.ts';

/*
 * PostgreSQL's one-statement billing: each function of pg-functions.ts called as one named prepared
 * statement, outside any explicit transaction (a single statement commits atomically on its own).
 * Concurrent calls share statements: placements go out together through `tollgate_place_holds`, closes
 * through `tollgate_close_holds` (see StatementBatcher for when, and what a failed batch does).
 */

/** Most calls one batch statement carries. */
export const MAX_BATCH = 64;

/** A hold as placement writes it. */
export interface NewHold {
  id: string;
  user_id: string;
  app_id: string | null;
  key_id: string | null;
  amount: number;
  description: string;
  created_at: number;
  expires_at: number;
  period_day: number;
  period_month: number;
}

interface PlaceRow {
  refusal: 'overdue' | 'limit' | 'credits' | null;
  limit_subject: string | null;
  limit_period: LimitPeriod | null;
  limit_amount: number | null;
  limit_current: number | null;
  wallet_available: number | null;
  wallet_debt: number | null;
}

const placeStatement = preparedQuery((db: Kysely<any>, p: Record<string, unknown>) =>
  db
    .selectFrom(
      sql<PlaceRow>`tollgate_place_hold(${p.id}, ${p.txnId}, ${p.user_id}, ${p.app_id}, ${p.key_id}, ${p.amount}, ${p.description}, ${p.created_at}, ${p.expires_at}, ${p.period_day}, ${p.period_month})`.as(
        'r',
      ),
    )
    .selectAll(),
);

/**
 * Places `hold` in one statement. `placed` when it is; `transaction` when the user has holds to expire
 * first, or the functions are not there (nothing was written: the caller takes the transaction path, which
 * expires them); otherwise the refusal.
 */
export async function placeHoldInOneStatement(
  ctx: BillingContext,
  hold: NewHold,
): Promise<'placed' | 'transaction' | { refused: ApiError }> {
  const row = await orWithoutFunctions(laneOf(ctx, hold.user_id).place.run({ ...hold, txnId: newId('txn') }));
  if (row === WITHOUT_FUNCTIONS) return 'transaction';
  if (row.refusal === null) return 'placed';
  if (row.refusal === 'overdue') return 'transaction';
  if (row.refusal === 'credits')
    return { refused: walletRefusal({ available: row.wallet_available!, debt: row.wallet_debt! }, hold.amount)! };
  const subject = subjectsOf({ userId: hold.user_id, appId: hold.app_id, keyId: hold.key_id }).find(
    (s) => subjectKey(s) === row.limit_subject,
  );
  if (!subject) throw new Error(`tollgate_place_hold refused on an unknown subject ${row.limit_subject}`);
  return {
    refused: spendingLimitExceeded(
      { subject, period: row.limit_period!, limit: row.limit_amount! },
      row.limit_current!,
      hold.amount,
      hold.created_at,
    ),
  };
}

/**
 * The wallet's refusal of a hold of `amount`, or null when it can pay: the one wallet check of placement
 * (the transaction path calls it; `tollgate_place_hold`'s WALLET CHECK block does the same in SQL). A wallet
 * that owes credits (debt.ts) places no hold until a top-up repays it: 402 with `required` what is owed.
 */
export function walletRefusal(wallet: { available: number; debt: number }, amount: number): ApiError | null {
  if (wallet.debt > 0) return debtOwed(wallet.available, wallet.debt);
  if (wallet.available < amount) return insufficientCredits(wallet.available, amount);
  return null;
}

const closeStatement = preparedQuery((db: Kysely<any>, p: Record<string, unknown>) =>
  db
    .selectFrom(
      sql<{
        closed: boolean;
        captured: number;
      }>`tollgate_close_hold(${p.holdId}, ${p.userId}, ${p.status}, ${p.capture}, ${p.now}, ${p.txnId}, ${p.description}, ${p.usage}, ${p.billed})`.as(
        'r',
      ),
    )
    .selectAll(),
);

/** What a one-statement close is asked to do. */
export interface OneStatementClose {
  holdId: string;
  userId: string;
  status: 'settled' | 'released';
  /** Micro-credits to capture (the hold's amount caps it). */
  capture: number;
  description: string;
  usage: UsageDraft | null;
  now: number;
}

/**
 * Closes an open hold in one statement; null when no open hold of `userId` had that id, `transaction` when
 * the functions are not there (nothing written either way).
 */
export async function closeHoldInOneStatement(
  ctx: BillingContext,
  close: OneStatementClose,
): Promise<{ captured: number } | null | 'transaction'> {
  const row = await orWithoutFunctions(
    laneOf(ctx, close.userId).close.run({
      holdId: close.holdId,
      userId: close.userId,
      status: close.status,
      capture: close.capture,
      now: close.now,
      txnId: newId('txn'),
      description: close.description,
      usage: close.usage ? usageDraftRow(close.usage) : null,
      billed: close.usage?.billed ?? 0,
    }),
  );
  if (row === WITHOUT_FUNCTIONS) return 'transaction';
  return row.closed ? { captured: row.captured } : null;
}

const WITHOUT_FUNCTIONS = Symbol('without functions');

/**
 * The statement's row, or WITHOUT_FUNCTIONS when the database has not got billing's functions (a schema
 * migrated only up to an older version, as the upgrade tests build): billing then works as it did then.
 */
async function orWithoutFunctions<R>(running: Promise<R>): Promise<R | typeof WITHOUT_FUNCTIONS> {
  try {
    return await running;
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    if (code === '42883' && message?.includes('tollgate_')) return WITHOUT_FUNCTIONS;
    throw error;
  }
}

type PlaceInput = NewHold & { txnId: string } & Record<string, unknown>;
type CloseInput = Record<string, unknown> & {
  holdId: string;
  userId: string;
  status: string;
  capture: number;
  now: number;
  txnId: string;
  description: string;
  usage: string | null;
  billed: number;
};
type CloseRow = { closed: boolean; captured: number };

const placeManyStatement = preparedQuery((db: Kysely<any>, p: Record<string, unknown>) =>
  db
    .selectFrom(
      sql<
        PlaceRow & { n: number }
      >`tollgate_place_holds(${p.id}, ${p.txnId}, ${p.user_id}, ${p.app_id}, ${p.key_id}, ${p.amount}, ${p.description}, ${p.created_at}, ${p.expires_at}, ${p.period_day}, ${p.period_month})`.as(
        'r',
      ),
    )
    .selectAll(),
);

const closeManyStatement = preparedQuery((db: Kysely<any>, p: Record<string, unknown>) =>
  db
    .selectFrom(
      sql<
        CloseRow & { n: number }
      >`tollgate_close_holds(${p.holdId}, ${p.userId}, ${p.status}, ${p.capture}, ${p.now}, ${p.txnId}, ${p.description}, ${p.usage}, ${p.billed})`.as(
        'r',
      ),
    )
    .selectAll(),
);

/** The inputs as one array per field (the batch functions' parameters). */
function columns<I extends Record<string, unknown>>(inputs: I[]): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const key of Object.keys(inputs[0]!)) out[key] = inputs.map((input) => input[key]);
  return out;
}

/** A batch's rows, back in the inputs' order (the functions run, and answer, in the order of their users). */
function inInputOrder<R extends { n: number }>(rows: R[], count: number): R[] {
  const ordered = new Array<R>(count);
  for (const row of rows) ordered[Number(row.n) - 1] = row;
  if (ordered.some((row) => row === undefined) || rows.length !== count)
    throw new Error(`a billing batch of ${count} answered ${rows.length} rows`);
  return ordered;
}

/** One lane: the batchers of the users whose id hashes to it (see {@link lanesOf}). */
interface Lane {
  place: StatementBatcher<PlaceInput, PlaceRow>;
  close: StatementBatcher<CloseInput, CloseRow>;
}

const lanes = new WeakMap<Db, Lane[]>();

/**
 * The batching lanes of this database handle; a user's calls always take the lane their id hashes to.
 *
 * Why lanes: every batch statement locks the wallets of its users until its commit (the WAL flush). When
 * several statements of one process ran at once over the same users (the batchers took any queued calls), they
 * queued on each other's wallet locks, each waiting for the previous commit: PostgreSQL spent its CPU
 * waking and sleeping backends, and the batches stayed small (server CPU per call at concurrency 64 over
 * 10 users: see docs/scaling.md). In a lane, one placement and one close statement run at a time, so this
 * process's statements never wait on each other across lanes, and the calls that arrive meanwhile form the
 * lane's next batch.
 *
 * At most half the pool runs billing statements at once (two per lane), so the rest of a call's queries
 * (key lookups, reads) always find a connection.
 */
function lanesOf(ctx: BillingContext): Lane[] {
  let found = lanes.get(ctx.db);
  if (!found) {
    const count = Math.max(1, Math.floor(ctx.config.DATABASE_POOL_SIZE / 4));
    found = Array.from({ length: count }, () => ({
      place: new StatementBatcher<PlaceInput, PlaceRow>({
        maxInFlight: 1,
        maxBatch: MAX_BATCH,
        one: async (input) => (await placeStatement(ctx.db, input)).rows[0] as PlaceRow,
        many: async (inputs) =>
          inInputOrder(
            (await placeManyStatement(ctx.db, columns(inputs))).rows as Array<PlaceRow & { n: number }>,
            inputs.length,
          ),
      }),
      close: new StatementBatcher<CloseInput, CloseRow>({
        maxInFlight: 1,
        maxBatch: MAX_BATCH,
        one: async (input) => (await closeStatement(ctx.db, input)).rows[0] as CloseRow,
        many: async (inputs) =>
          inInputOrder(
            (await closeManyStatement(ctx.db, columns(inputs))).rows as Array<CloseRow & { n: number }>,
            inputs.length,
          ),
      }),
    }));
    lanes.set(ctx.db, found);
  }
  return found;
}

/** The lane of `userId`'s calls (FNV-1a of the id: the same lane for every call of a user). */
function laneOf(ctx: BillingContext, userId: string): Lane {
  const all = lanesOf(ctx);
  if (all.length === 1) return all[0]!;
  let hash = 0x811c9dc5;
  for (let i = 0; i < userId.length; i++) hash = Math.imul(hash ^ userId.charCodeAt(i), 0x01000193);
  return all[(hash >>> 0) % all.length]!;
}

/** Calls and statements of this database handle's billing batches so far (tests and benchmarks read them). */
export function batchStats(
  db: Db,
): { place: { calls: number; statements: number }; close: { calls: number; statements: number } } | null {
  const found = lanes.get(db);
  if (!found) return null;
  const sum = (pick: (lane: Lane) => { calls: number; statements: number }) => ({
    calls: found.reduce((total, lane) => total + pick(lane).calls, 0),
    statements: found.reduce((total, lane) => total + pick(lane).statements, 0),
  });
  return { place: sum((lane) => lane.place.stats), close: sum((lane) => lane.close.stats) };
}
