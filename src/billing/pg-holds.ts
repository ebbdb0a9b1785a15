import { sql, type Kysely } from 'kysely';
import { preparedQuery } from '../platform/db/prepared.ts';
import type { ApiError } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import type { BillingContext } from './ledger.ts';
import { insufficientCredits, spendingLimitExceeded, subjectKey, subjectsOf } from './limits.ts';
import type { LimitPeriod } from './periods.ts';
import { usageDraftRow, type UsageDraft } from './usage-records.ts';

/*
 * PostgreSQL's one-statement billing: each function of pg-functions.ts called as one named prepared
 * statement, outside any explicit transaction (a single statement commits atomically on its own).
 */

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
}

const placeStatement = preparedQuery((db: Kysely<any>, p: Record<string, unknown>) =>
  db
    .selectFrom(
      sql<PlaceRow>`tollgate_place_hold(${p.id}, ${p.txnId}, ${p.user_id}, ${p.app_id}, ${p.key_id}, ${p.amount}, ${p.description}, ${p.created_at}, ${p.expires_at}, ${p.period_day}, ${p.period_month})`.as('r'),
    )
    .selectAll(),
);

/**
 * Places `hold` in one statement. `placed` when it is; `overdue` when the user has holds to expire first
 * (nothing was written: the caller takes the transaction path, which expires them); otherwise the refusal.
 */
export async function placeHoldInOneStatement(ctx: BillingContext, hold: NewHold): Promise<'placed' | 'overdue' | { refused: ApiError }> {
  const row = (await placeStatement(ctx.db, { ...hold, txnId: newId('txn') })).rows[0] as PlaceRow;
  if (row.refusal === null) return 'placed';
  if (row.refusal === 'overdue') return 'overdue';
  if (row.refusal === 'credits') return { refused: walletRefusal(row.wallet_available!, hold.amount) };
  const subject = subjectsOf({ userId: hold.user_id, appId: hold.app_id, keyId: hold.key_id }).find((s) => subjectKey(s) === row.limit_subject);
  if (!subject) throw new Error(`tollgate_place_hold refused on an unknown subject ${row.limit_subject}`);
  return { refused: spendingLimitExceeded({ subject, period: row.limit_period!, limit: row.limit_amount! }, row.limit_current!, hold.amount, hold.created_at) };
}

/** The 402 of a wallet that cannot pay `amount` (the WALLET CHECK of `tollgate_place_hold`). */
export function walletRefusal(available: number, amount: number): ApiError {
  return insufficientCredits(available, amount);
}

const closeStatement = preparedQuery((db: Kysely<any>, p: Record<string, unknown>) =>
  db
    .selectFrom(
      sql<{ closed: boolean; captured: number }>`tollgate_close_hold(${p.holdId}, ${p.userId}, ${p.status}, ${p.capture}, ${p.now}, ${p.txnId}, ${p.description}, ${p.usage}, ${p.billed})`.as('r'),
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

/** Closes an open hold in one statement; null when no open hold of `userId` had that id (nothing written). */
export async function closeHoldInOneStatement(ctx: BillingContext, close: OneStatementClose): Promise<{ captured: number } | null> {
  const row = (
    await closeStatement(ctx.db, {
      holdId: close.holdId,
      userId: close.userId,
      status: close.status,
      capture: close.capture,
      now: close.now,
      txnId: newId('txn'),
      description: close.description,
      usage: close.usage ? usageDraftRow(close.usage) : null,
      billed: close.usage?.billed ?? 0,
    })
  ).rows[0] as { closed: boolean; captured: number };
  return row.closed ? { captured: row.captured } : null;
}
