import type { BillingDb } from './schema.ts';
import { decodePageCursor, encodePageCursor } from '../platform/page-cursor.ts';
import { microsToCredits } from '../platform/money.ts';
import { accounts } from './ledger.ts';
import type { MovementType } from './schema.ts';

/** One movement as the dashboard lists it; amounts in credits. */
export interface TransactionView {
  id: string;
  type: MovementType;
  /** Change of the wallet's balance (what the user owns): + for grants, top-ups and refunds, − for captures. */
  amount: number;
  /** Change of the credits reserved by holds: + when a hold is placed, − when it is settled, released or expires. */
  held: number;
  /** The wallet's balance just after this movement. */
  balanceAfter: number;
  description: string;
  createdAt: string;
  holdId?: string;
}

/** The cursor of the next page: the position of the last movement shown. */
const encodeCursor = (seq: number): string => encodePageCursor(`seq:${seq}`);

const decodeCursor = (cursor: string): number => Number(decodePageCursor(cursor, /^seq:(\d{1,15})$/)[1]);

/**
 * A page of the user's movements, newest first, and the cursor of the next page (null on the last). With
 * `page.appId`, only the movements of that app's holds (placed, captured, released, expired, refunded).
 */
export async function listTransactions(
  db: BillingDb,
  userId: string,
  page: { limit?: number; cursor?: string; appId?: string | null } = {},
): Promise<{ transactions: TransactionView[]; nextCursor: string | null }> {
  const limit = page.limit ?? 50;
  let query = db
    .selectFrom('ledger_transactions')
    .select(['seq', 'id', 'type', 'hold_id', 'description', 'balance_after', 'created_at'])
    .where('user_id', '=', userId)
    .orderBy('seq', 'desc')
    .limit(limit + 1);
  if (page.cursor) query = query.where('seq', '<', decodeCursor(page.cursor));
  if (page.appId) {
    const appId = page.appId;
    query = query.where('hold_id', 'in', (eb) =>
      eb.selectFrom('holds').select('holds.id').where('holds.user_id', '=', userId).where('holds.app_id', '=', appId),
    );
  }
  const rows = await query.execute();
  const shown = rows.slice(0, limit);

  const available = accounts.available(userId);
  const held = accounts.held(userId);
  const entries = shown.length
    ? await db
        .selectFrom('ledger_entries')
        .select(['transaction_id', 'account', 'amount'])
        .where(
          'transaction_id',
          'in',
          shown.map((row) => row.id),
        )
        .where('account', 'in', [available, held])
        .execute()
    : [];
  const deltas = new Map<string, { amount: number; held: number }>();
  for (const entry of entries) {
    const delta = deltas.get(entry.transaction_id) ?? { amount: 0, held: 0 };
    delta.amount += entry.amount;
    if (entry.account === held) delta.held += entry.amount;
    deltas.set(entry.transaction_id, delta);
  }

  return {
    transactions: shown.map((row) => {
      const delta = deltas.get(row.id) ?? { amount: 0, held: 0 };
      return {
        id: row.id,
        type: row.type,
        amount: microsToCredits(delta.amount),
        held: microsToCredits(delta.held),
        balanceAfter: microsToCredits(row.balance_after),
        description: row.description,
        createdAt: new Date(row.created_at).toISOString(),
        ...(row.hold_id ? { holdId: row.hold_id } : {}),
      };
    }),
    nextCursor: rows.length > limit ? encodeCursor(shown[shown.length - 1].seq) : null,
  };
}
