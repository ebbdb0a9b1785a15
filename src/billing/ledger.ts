import { PostgresAdapter, sql, type Insertable, type InsertQueryBuilder, type Kysely, type Transaction } from 'kysely';
import { preparedByShape, preparedInsert, preparedQuery, type PreparedQuery } from '../platform/db/prepared.ts';
import type { BillingTables as Tables } from './schema.ts';
import type { AppContext } from '../platform/context.ts';
import { newId } from '../platform/ids.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { BillingConfig } from './config.ts';
import { OPEN, type LedgerTransactionsTable, type MovementType, type WalletsTable } from './schema.ts';

/** What billing needs of the application context: the database, its dialect, the clock and the config. */
export type BillingContext = Pick<AppContext, 'db' | 'dialect' | 'clock'> & { config: PlatformConfig & BillingConfig };

/** A Kysely transaction over the whole schema; every movement runs inside one. */
export type Trx = Transaction<Tables>;

/** Ledger account names: each user has an `available` and a `held` account; the system has the others. */
export const accounts = {
  available: (userId: string) => `user:${userId}:available`,
  held: (userId: string) => `user:${userId}:held`,
  /** What the user owes, as a negative balance (refunds and disputes of credits already spent). */
  debt: (userId: string) => `user:${userId}:debt`,
  /** Where operator grants come from. */
  grants: 'system:grants',
  /** Where purchased credits come from. */
  topups: 'system:topups',
  /** Where disputed payments' credits go (and come back from when a dispute is won). */
  disputes: 'system:disputes',
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
export async function lockWallet(
  trx: Trx,
  userId: string,
  now: number,
  /** false: the caller never looks at `hasOverdueHolds` (a close), so the holds are not searched (it reads false). */
  options: { overdue?: boolean } = {},
): Promise<Wallet & { hasOverdueHolds: boolean; debt: number }> {
  const read = options.overdue === false ? walletOnly : walletForMovement;
  const select = async () => {
    const row = (await read(trx, { userId, now })).rows[0];
    return (
      row && {
        user_id: row.user_id,
        balance: row.balance,
        reserved: row.reserved,
        debt: Number(row.debt),
        hasOverdueHolds: Boolean(Number(row.overdue)),
      }
    );
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

/** The read of {@link lockWallet}: the wallet, locked on PostgreSQL, and whether the user has overdue open holds. */
const walletForMovement = preparedQuery((db: Kysely<Tables>, p: { userId: string; now: number }) => {
  const query = db
    .selectFrom('wallets')
    .select((eb) => [
      'user_id',
      'balance',
      'reserved',
      'debt',
      eb
        .exists(
          eb
            .selectFrom('holds')
            .select('holds.id')
            .where('holds.user_id', '=', p.userId)
            .where('holds.status', '=', OPEN)
            .where('holds.expires_at', '<=', p.now),
        )
        .as('overdue'),
    ])
    .where('wallets.user_id', '=', p.userId);
  return db.getExecutor().adapter instanceof PostgresAdapter ? query.forUpdate('wallets') : query;
});

/** The read of {@link lockWallet} without the overdue-holds search (`overdue` is always 0). */
const walletOnly = preparedQuery((db: Kysely<Tables>, p: { userId: string; now: number }) => {
  const query = db
    .selectFrom('wallets')
    .select((eb) => ['user_id', 'balance', 'reserved', 'debt', eb.lit(0).as('overdue')])
    .where('wallets.user_id', '=', p.userId);
  return db.getExecutor().adapter instanceof PostgresAdapter ? query.forUpdate('wallets') : query;
});

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
  /** The payment processor's ids behind it (top-ups, refunds, disputes). */
  reference?: string;
  entries: Entry[];
}

/**
 * A write that belongs with a movement (the hold it reserves for, the limit counters it moves). PostgreSQL
 * runs it inside the movement's statement (`build`); SQLite right before it, in the same transaction
 * (`run`, a prepared query). Either way it commits with the movement or not at all.
 */
export interface CompanionWrite {
  /** The INSERT as a builder on the movement's transaction, to fold into one statement. */
  build(trx: Trx): InsertQueryBuilder<Tables, any, any>;
  /** The same INSERT, run on its own. */
  run(trx: Trx): Promise<unknown>;
}

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
export async function postMovement(
  trx: Trx,
  wallet: Wallet,
  movement: Movement,
  now: number,
  companionWrites: Array<CompanionWrite | null> = [],
): Promise<Wallet & { transactionId: string }> {
  const companions = companionWrites.filter((write) => write !== null);
  const entries = movement.entries.filter((entry) => entry.amount !== 0);
  let sum = 0;
  let balanceDelta = 0;
  let reservedDelta = 0;
  let debtDelta = 0;
  for (const entry of entries) {
    if (!Number.isSafeInteger(entry.amount))
      throw new Error(`ledger entry ${entry.account} is not an integer: ${entry.amount}`);
    sum += entry.amount;
    if (entry.account === accounts.available(wallet.user_id)) balanceDelta += entry.amount;
    else if (entry.account === accounts.held(wallet.user_id)) {
      balanceDelta += entry.amount;
      reservedDelta += entry.amount;
    } else if (entry.account === accounts.debt(wallet.user_id)) {
      debtDelta -= entry.amount;
    } else if (!entry.account.startsWith('system:'))
      throw new Error(`movement on ${wallet.user_id}'s wallet touches ${entry.account}`);
  }
  if (sum !== 0) throw new Error(`unbalanced ${movement.type} movement: entries sum to ${sum}`);
  const after = {
    user_id: wallet.user_id,
    balance: wallet.balance + balanceDelta,
    reserved: wallet.reserved + reservedDelta,
  };
  if (after.reserved < 0 || after.balance - after.reserved < 0) {
    throw new Error(
      `${movement.type} would leave ${wallet.user_id} with reserved ${after.reserved} and available ${after.balance - after.reserved}`,
    );
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
    ...(movement.reference ? { reference: movement.reference } : {}),
  };
  const rows = entries.map((entry) => ({
    transaction_id: transactionId,
    account: entry.account,
    amount: entry.amount,
    created_at: now,
  }));
  // A debt moves only with processor refunds, disputes and top-ups, never on the path of a call.
  if (debtDelta !== 0)
    await trx
      .updateTable('wallets')
      .set((eb) => ({ debt: eb('debt', '+', debtDelta) }))
      .where('user_id', '=', wallet.user_id)
      .execute();
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
      statement = statement.with(
        `companion_${i}` as 'entries',
        () => companion.build(trx).returning(sql<string>`1`.as('transaction_id')) as any,
      );
    });
    await statement.updateTable('wallets').set(walletChange).where('user_id', '=', wallet.user_id).execute();
    return { ...after, transactionId };
  }
  for (const companion of companions) await companion.run(trx);
  if (movement.reference) await trx.insertInto('ledger_transactions').values(header).execute();
  else await insertHeader(trx, header);
  if (entries.length > 0) await insertEntries(trx, transactionId, entries, now);
  if (walletMoves) await updateWallet(trx, { userId: wallet.user_id, ...walletChange });
  return { ...after, transactionId };
}

const insertHeader = preparedInsert<Insertable<LedgerTransactionsTable>>('ledger_transactions', [
  'id',
  'type',
  'user_id',
  'hold_id',
  'description',
  'balance_after',
  'reserved_after',
  'created_at',
]);

/** Inserts a movement's entries (two or three), with one prepared query per count. */
function insertEntries(trx: Trx, transactionId: string, entries: Entry[], now: number): Promise<unknown> {
  const values: Record<string, string | number> = { transactionId, now };
  entries.forEach((entry, i) => {
    values[`account${i}`] = entry.account;
    values[`amount${i}`] = entry.amount;
  });
  return entriesInsert(entries.length)(trx, values);
}
const entriesInsert = preparedByShape(
  (count: number) => (db: Kysely<Tables>, p: Record<string, any>) =>
    db.insertInto('ledger_entries').values(
      Array.from({ length: count }, (_, i) => ({
        transaction_id: p.transactionId,
        account: p[`account${i}`],
        amount: p[`amount${i}`],
        created_at: p.now,
      })),
    ),
);

const updateWallet = preparedQuery(
  (db: Kysely<Tables>, p: { userId: string; balance: number; reserved: number; updated_at: number }) =>
    db
      .updateTable('wallets')
      .set({ balance: p.balance, reserved: p.reserved, updated_at: p.updated_at })
      .where('user_id', '=', p.userId),
);

/** A row insert as a companion write: folded into the movement's statement, or run as the prepared `insert`. */
export function insertCompanion<R extends Record<string, unknown>>(
  table: keyof Tables,
  insert: PreparedQuery<R, unknown>,
  row: R,
): CompanionWrite {
  return { build: (trx) => trx.insertInto(table).values(row as any), run: (trx) => insert(trx, row) };
}
