import { PostgresAdapter, sql, type InsertQueryBuilder, type Transaction } from 'kysely';
import type { Tables } from '../tables.ts';
import type { DialectName } from '../platform/db/connect.ts';
import type { AppContext } from '../platform/context.ts';
import { newId } from '../platform/ids.ts';
import { OPEN, type MovementType, type WalletsTable } from './tables.ts';

/** What billing needs of the application context: the database, its dialect, the clock and the config. */
export type BillingContext = Pick<AppContext, 'db' | 'dialect' | 'clock' | 'config'>;

/** A Kysely transaction over the whole schema; every movement runs inside one. */
export type Trx = Transaction<Tables>;

/** Ledger account names: each user has an `available` and a `held` account; the system has the others. */
export const accounts = {
  available: (userId: string) => `user:${userId}:available`,
  held: (userId: string) => `user:${userId}:held`,
  /** Where operator grants come from. */
  grants: 'system:grants',
  /** Where purchased credits come from. */
  topups: 'system:topups',
  /** The counterpart of operator corrections, positive or negative. */
  adjustments: 'system:adjustments',
  /** Where captured spend goes, and refunds come from. */
  revenue: 'system:revenue',
} as const;

/** The wallet row as locked for a movement. */
export type Wallet = Pick<WalletsTable, 'user_id' | 'balance' | 'reserved'>;

/**
 * Locks the user's wallet row until `trx` ends, creating the wallet at zero first when the user has none.
 * Every movement of a user's credits takes this lock before it reads anything it decides on, so two
 * movements of one user never interleave, in one process or several.
 * PostgreSQL: `SELECT … FOR UPDATE` on the row. SQLite: the transaction began IMMEDIATE and already holds
 * the database's write lock (and the driver runs one transaction at a time), so a plain read is enough.
 * The same read says whether the user has open holds past their expiry at `now` (one round trip less on
 * the path of every hold).
 */
export async function lockWallet(trx: Trx, dialect: DialectName, userId: string, now: number): Promise<Wallet & { hasOverdueHolds: boolean }> {
  const select = async () => {
    const query = trx
      .selectFrom('wallets')
      .select((eb) => [
        'user_id',
        'balance',
        'reserved',
        eb.exists(eb.selectFrom('holds').select('holds.id').where('holds.user_id', '=', userId).where('holds.status', '=', OPEN).where('holds.expires_at', '<=', now)).as('overdue'),
      ])
      .where('wallets.user_id', '=', userId);
    const row = await (dialect === 'postgres' ? query.forUpdate('wallets') : query).executeTakeFirst();
    return row && { user_id: row.user_id, balance: row.balance, reserved: row.reserved, hasOverdueHolds: Boolean(Number(row.overdue)) };
  };
  const existing = await select();
  if (existing) return existing;
  await trx
    .insertInto('wallets')
    .values({ user_id: userId, balance: 0, reserved: 0, created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('user_id').doNothing())
    .execute();
  const created = await select();
  if (!created) throw new Error(`wallet of ${userId} could not be created`);
  return created;
}

/** One side of a movement: signed micro-credits on an account. */
export interface Entry {
  account: string;
  amount: number;
}

/** A movement to post: its kind, its entries (which must sum to zero) and what the user sees. */
export interface Movement {
  type: MovementType;
  description: string;
  holdId?: string | null;
  entries: Entry[];
}

/**
 * A write that belongs with a movement (the hold it reserves for, the limit counters it moves): an INSERT
 * built on the movement's transaction. PostgreSQL runs it inside the movement's statement; SQLite right
 * before it, in the same transaction. Either way it commits with the movement or not at all.
 */
export type CompanionWrite = InsertQueryBuilder<Tables, any, any>;

/**
 * Posts a movement on a locked wallet: the transaction header, its entries, the wallet's cached balance
 * and reserved amount, and the companion writes (nulls are skipped), all in `trx`. Returns the wallet as it is
 * after the movement.
 *
 * Invariants kept here, whatever the caller computed: the entries are integers that sum to zero (credits are
 * neither created nor lost), they touch only this wallet's user accounts and system accounts, and the wallet
 * never ends with a negative reserve or a negative available amount. Breaking one is a bug: it throws and
 * the transaction rolls back.
 */
export async function postMovement(trx: Trx, wallet: Wallet, movement: Movement, now: number, companionWrites: Array<CompanionWrite | null> = []): Promise<Wallet & { transactionId: string }> {
  const companions = companionWrites.filter((write) => write !== null);
  const entries = movement.entries.filter((entry) => entry.amount !== 0);
  let sum = 0;
  let balanceDelta = 0;
  let reservedDelta = 0;
  for (const entry of entries) {
    if (!Number.isSafeInteger(entry.amount)) throw new Error(`ledger entry ${entry.account} is not an integer: ${entry.amount}`);
    sum += entry.amount;
    if (entry.account === accounts.available(wallet.user_id)) balanceDelta += entry.amount;
    else if (entry.account === accounts.held(wallet.user_id)) {
      balanceDelta += entry.amount;
      reservedDelta += entry.amount;
    } else if (!entry.account.startsWith('system:')) throw new Error(`movement on ${wallet.user_id}'s wallet touches ${entry.account}`);
  }
  if (sum !== 0) throw new Error(`unbalanced ${movement.type} movement: entries sum to ${sum}`);
  const after = { user_id: wallet.user_id, balance: wallet.balance + balanceDelta, reserved: wallet.reserved + reservedDelta };
  if (after.reserved < 0 || after.balance - after.reserved < 0) {
    throw new Error(`${movement.type} would leave ${wallet.user_id} with reserved ${after.reserved} and available ${after.balance - after.reserved}`);
  }

  const transactionId = newId('txn');
  const header = {
    id: transactionId,
    type: movement.type,
    user_id: wallet.user_id,
    hold_id: movement.holdId ?? null,
    description: movement.description,
    balance_after: after.balance,
    reserved_after: after.reserved,
    created_at: now,
  };
  const rows = entries.map((entry) => ({ transaction_id: transactionId, account: entry.account, amount: entry.amount, created_at: now }));
  const walletChange = { balance: after.balance, reserved: after.reserved, updated_at: now };
  const walletMoves = balanceDelta !== 0 || reservedDelta !== 0;
  if (walletMoves && rows.length > 0 && trx.getExecutor().adapter instanceof PostgresAdapter) {
    // One round trip instead of three or more: PostgreSQL runs data-modifying CTEs as one statement (the
    // entries' foreign key is checked at its end, when the header exists). Under load, the socket writes of
    // separate statements were a quarter of the process's CPU. SQLite has no such CTEs, and no round trips.
    let statement = trx
      .with('header', (db) => db.insertInto('ledger_transactions').values(header).returning('id'))
      .with('entries', (db) => db.insertInto('ledger_entries').values(rows).returning('transaction_id'));
    // Kysely types each CTE by name; the companions' names are made up here and nothing reads their output.
    companions.forEach((companion, i) => {
      statement = statement.with(`companion_${i}` as 'entries', () => companion.returning(sql<string>`1`.as('transaction_id')) as any);
    });
    await statement.updateTable('wallets').set(walletChange).where('user_id', '=', wallet.user_id).execute();
    return { ...after, transactionId };
  }
  for (const companion of companions) await companion.execute();
  await trx.insertInto('ledger_transactions').values(header).execute();
  if (rows.length > 0) await trx.insertInto('ledger_entries').values(rows).execute();
  if (walletMoves) await trx.updateTable('wallets').set(walletChange).where('user_id', '=', wallet.user_id).execute();
  return { ...after, transactionId };
}
