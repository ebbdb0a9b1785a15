import { sql } from 'kysely';
import { withoutQueryTimeout } from '../platform/db/connect.ts';
import { microsToCredits } from '../platform/money.ts';
import { billingDb, OPEN } from './schema.ts';
import type { Trx, BillingContext } from './ledger.ts';
import { subjectKey, subjectsOf } from './limits.ts';

/**
 * What a difference of the verification is about: `wallet_balance` / `wallet_reserved`: the wallet's cached
 * numbers against the sums of its accounts; `open_holds`: the wallet's reserve against its open holds;
 * `spend_counter`: a limit counter against its holds; `wallet_debt`: the wallet's debt against minus its `debt`
 * account (or a negative debt); `unbalanced_transaction`: a movement whose entries do not sum to zero;
 * `ledger_total`: all entries together do not sum to zero; `foreign_entry`: an entry on a user's account in
 * another user's movement (subject: the movement's id and the account). The admin route's schema lists them.
 */
export const LEDGER_DIFFERENCE_KINDS = [
  'wallet_balance',
  'wallet_reserved',
  'wallet_debt',
  'open_holds',
  'spend_counter',
  'unbalanced_transaction',
  'ledger_total',
  'foreign_entry',
] as const;

/** One place where what is recorded disagrees with what the ledger (or the holds) say; amounts in credits. */
export interface LedgerDifference {
  kind: (typeof LEDGER_DIFFERENCE_KINDS)[number];
  /** The user id, counter key or transaction id concerned. */
  subject: string;
  recorded: number;
  computed: number;
}

/** The report of `GET /api/admin/ledger/verify`. */
export interface LedgerReport {
  ok: boolean;
  /** Wallets checked. */
  wallets: number;
  /** Ledger entries summed. */
  entries: number;
  differences: LedgerDifference[];
  negativeAvailable: Array<{ userId: string; available: number }>;
  expiredOpenHolds: Array<{ holdId: string; userId: string; amount: number; expiresAt: string }>;
}

const num = (value: unknown): number => Number(value ?? 0);

/** Holds one query of the counters' check reads, unless told (tests make it small): what its GROUP BY sorts at most. */
const HOLDS_PER_READ = 50_000;

/**
 * Recomputes every balance from the ledger entries and compares: wallets (balance and reserve), open holds,
 * spend counters, and that every movement and the whole ledger sum to zero. Also lists negative available
 * balances and open holds past their expiry. `userId` narrows the check to one user (tests use it after
 * every step); the operator route checks everything. Reads only: safe while money moves, though a
 * movement committing between two of its reads can show a transient difference on a busy system.
 */
export function verifyLedger(
  ctx: BillingContext,
  options: { userId?: string; holdsPerRead?: number } = {},
): Promise<LedgerReport> {
  // Its sums read every entry of a big ledger: an operator's check, not a request's statement to be cut at
  // DATABASE_QUERY_TIMEOUT_SECONDS.
  return withoutQueryTimeout(() => readLedgerReport(ctx, options));
}

async function readLedgerReport(
  ctx: BillingContext,
  options: { userId?: string; holdsPerRead?: number },
): Promise<LedgerReport> {
  const db = billingDb(ctx.db);
  const userId = options.userId;
  const now = ctx.clock.now();

  // Everything is read in one transaction so the reads agree with one another (a snapshot on PostgreSQL
  // under REPEATABLE READ; SQLite's transaction holds the write lock, so nothing moves meanwhile).
  const transaction =
    ctx.dialect === 'postgres' ? db.transaction().setIsolationLevel('repeatable read') : db.transaction();
  return transaction.execute(async (trx) => {
    // Each user's accounts are summed over that user's movements, walked in the order of
    // `ledger_transactions_user` with each movement's entries read by primary key: an aggregate that needs no
    // sort, so its memory does not grow with the ledger (grouping the entries by account, which has no index,
    // made SQLite sort every entry in memory). A movement touches only its own user's accounts and system
    // ones (postMovement's invariant, and the PostgreSQL functions'); an entry on another user's account is
    // counted here and reported as `foreign_entry` below.
    // The movement's user's own accounts, named as `accounts` in ledger.ts names them.
    const own = (suffix: string) => sql<string>`'user:' || ledger_transactions.user_id || ${suffix}`;
    const amountOn = (suffix: string) =>
      sql<
        string | number
      >`sum(case when ledger_entries.account = ${own(suffix)} then ledger_entries.amount else 0 end)`;
    const ownAccount = sql<boolean>`ledger_entries.account in (${own(':available')}, ${own(':held')}, ${own(':debt')})`;
    const foreign = sql<boolean>`substr(ledger_entries.account, 1, 5) = 'user:' and not ${ownAccount}`;
    let userQuery = trx
      .selectFrom('ledger_transactions')
      .innerJoin('ledger_entries', 'ledger_entries.transaction_id', 'ledger_transactions.id')
      .select([
        'ledger_transactions.user_id',
        amountOn(':available').as('available'),
        amountOn(':held').as('held'),
        amountOn(':debt').as('debt'),
        sql<string | number>`sum(ledger_entries.amount)`.as('total'),
        sql<string | number>`count(*)`.as('entries'),
        sql<string | number>`sum(case when ${ownAccount} then 1 else 0 end)`.as('own_entries'),
        sql<string | number>`sum(case when ${foreign} then 1 else 0 end)`.as('foreign_entries'),
      ])
      .groupBy('ledger_transactions.user_id');
    if (userId) userQuery = userQuery.where('ledger_transactions.user_id', '=', userId);
    const userRows = await userQuery.execute();
    const usersWithForeign = userRows.filter((row) => num(row.foreign_entries) > 0).map((row) => row.user_id);
    const foreignRows =
      usersWithForeign.length > 0
        ? await trx
            .selectFrom('ledger_transactions')
            .innerJoin('ledger_entries', 'ledger_entries.transaction_id', 'ledger_transactions.id')
            .select(['ledger_entries.transaction_id', 'ledger_entries.account', 'ledger_entries.amount'])
            .where('ledger_transactions.user_id', 'in', usersWithForeign)
            .where(foreign)
            .execute()
        : [];

    let walletQuery = trx.selectFrom('wallets').select(['user_id', 'balance', 'reserved', 'debt']);
    if (userId) walletQuery = walletQuery.where('user_id', '=', userId);
    const walletRows = await walletQuery.execute();

    let openQuery = trx
      .selectFrom('holds')
      .select(['user_id', (eb) => eb.fn.sum<string | number>('amount').as('total')])
      .where('status', '=', 'open')
      .groupBy('user_id');
    if (userId) openQuery = openQuery.where('user_id', '=', userId);
    const openRows = await openQuery.execute();

    let unbalancedQuery = trx
      .selectFrom('ledger_entries')
      .innerJoin('ledger_transactions', 'ledger_transactions.id', 'ledger_entries.transaction_id')
      .select([
        'ledger_entries.transaction_id',
        (eb) => eb.fn.sum<string | number>('ledger_entries.amount').as('total'),
      ])
      .groupBy('ledger_entries.transaction_id')
      .having(sql`sum(ledger_entries.amount)`, '<>', 0);
    if (userId) unbalancedQuery = unbalancedQuery.where('ledger_transactions.user_id', '=', userId);
    const unbalancedRows = await unbalancedQuery.execute();

    const differences: LedgerDifference[] = [];
    let entries = 0;
    let total = 0;
    const perUser = new Map<string, { available: number; held: number; debt: number }>();
    for (const row of userRows) {
      // The whole check counts every entry; one user's, the entries on that user's accounts.
      entries += num(userId ? row.own_entries : row.entries);
      total += num(row.total);
      perUser.set(row.user_id, { available: num(row.available), held: num(row.held), debt: num(row.debt) });
    }
    for (const row of foreignRows) {
      differences.push({
        kind: 'foreign_entry',
        subject: `${row.transaction_id} ${row.account}`,
        recorded: microsToCredits(num(row.amount)),
        computed: 0,
      });
    }
    if (!userId && total !== 0)
      differences.push({ kind: 'ledger_total', subject: 'ledger', recorded: microsToCredits(total), computed: 0 });
    for (const row of unbalancedRows) {
      differences.push({
        kind: 'unbalanced_transaction',
        subject: row.transaction_id,
        recorded: microsToCredits(num(row.total)),
        computed: 0,
      });
    }

    const wallets = new Map(walletRows.map((row) => [row.user_id, row]));
    const openByUser = new Map(openRows.map((row) => [row.user_id, num(row.total)]));
    const negativeAvailable: LedgerReport['negativeAvailable'] = [];
    for (const user of new Set([...wallets.keys(), ...perUser.keys(), ...openByUser.keys()])) {
      const wallet = wallets.get(user) ?? { balance: 0, reserved: 0, debt: 0 };
      const ledger = perUser.get(user) ?? { available: 0, held: 0, debt: 0 };
      const open = openByUser.get(user) ?? 0;
      if (wallet.balance !== ledger.available + ledger.held) {
        differences.push({
          kind: 'wallet_balance',
          subject: user,
          recorded: microsToCredits(wallet.balance),
          computed: microsToCredits(ledger.available + ledger.held),
        });
      }
      if (wallet.reserved !== ledger.held)
        differences.push({
          kind: 'wallet_reserved',
          subject: user,
          recorded: microsToCredits(wallet.reserved),
          computed: microsToCredits(ledger.held),
        });
      // The debt account holds minus what is owed; a debt is never negative.
      const debt = num(wallet.debt);
      if (debt !== -ledger.debt || debt < 0)
        differences.push({
          kind: 'wallet_debt',
          subject: user,
          recorded: microsToCredits(debt),
          computed: microsToCredits(-ledger.debt),
        });
      if (wallet.reserved !== open)
        differences.push({
          kind: 'open_holds',
          subject: user,
          recorded: microsToCredits(wallet.reserved),
          computed: microsToCredits(open),
        });
      const available = Math.min(wallet.balance - wallet.reserved, ledger.available);
      if (available < 0 || ledger.held < 0)
        negativeAvailable.push({ userId: user, available: microsToCredits(available) });
    }

    differences.push(...(await counterDifferences(trx, userId, options.holdsPerRead ?? HOLDS_PER_READ)));

    let expiredQuery = trx
      .selectFrom('holds')
      .select(['id', 'user_id', 'amount', 'expires_at'])
      .where('status', '=', OPEN)
      .where('expires_at', '<=', now)
      .orderBy('expires_at');
    if (userId) expiredQuery = expiredQuery.where('user_id', '=', userId);
    const expiredOpenHolds = (await expiredQuery.execute()).map((hold) => ({
      holdId: hold.id,
      userId: hold.user_id,
      amount: microsToCredits(hold.amount),
      expiresAt: new Date(hold.expires_at).toISOString(),
    }));

    return {
      ok: differences.length === 0 && negativeAvailable.length === 0 && expiredOpenHolds.length === 0,
      wallets: userId ? Math.min(walletRows.length, 1) : walletRows.length,
      entries,
      differences,
      negativeAvailable,
      expiredOpenHolds,
    };
  });
}

/** Recomputes each spend counter from the holds (open amounts held, captures net of refunds spent) and compares. */
async function counterDifferences(
  trx: Trx,
  userId: string | undefined,
  holdsPerRead: number,
): Promise<LedgerDifference[]> {
  const computed = new Map<string, { spent: number; held: number }>();
  // The holds are read in slices of their primary key, each summed by subject and period in SQL and the sums
  // added up here: a GROUP BY over all of them sorted every hold at once, in memory on SQLite
  // (`temp_store = MEMORY`), so the check's memory grew with the history (~16 MiB for 300,000 holds).
  let after = '';
  for (let more = true; more;) {
    // The slice ends at its last hold, found by the database (ids compare in its collation, not by JS).
    let ofSlice = trx
      .selectFrom('holds')
      .where('id', '>', after)
      .where((eb) => eb.or([eb('app_id', 'is not', null), eb('key_id', 'is not', null)]));
    if (userId) ofSlice = ofSlice.where('user_id', '=', userId);
    const end: { id: string } | undefined = await ofSlice
      .select('id')
      .orderBy('id')
      .offset(holdsPerRead - 1)
      .limit(1)
      .executeTakeFirst();
    let slice = ofSlice.select([
      'user_id',
      'app_id',
      'key_id',
      'period_day',
      'period_month',
      sql<string | number>`sum(case when status = 'open' then amount else 0 end)`.as('held'),
      sql<string | number>`sum(captured - refunded)`.as('spent'),
    ]);
    if (end) slice = slice.where('id', '<=', end.id);
    const rows = await slice.groupBy(['user_id', 'app_id', 'key_id', 'period_day', 'period_month']).execute();
    if (end) after = end.id;
    else more = false;
    for (const row of rows) {
      for (const subject of subjectsOf({ userId: row.user_id, appId: row.app_id, keyId: row.key_id })) {
        for (const [period, start] of [
          ['daily', row.period_day],
          ['monthly', row.period_month],
          ['total', 0],
        ] as const) {
          const key = `${subjectKey(subject)}|${period}|${num(start)}`;
          const sums = computed.get(key) ?? { spent: 0, held: 0 };
          sums.spent += num(row.spent);
          sums.held += num(row.held);
          computed.set(key, sums);
        }
      }
    }
  }
  let counterQuery = trx.selectFrom('spend_counters').select(['subject', 'period', 'period_start', 'spent', 'held']);
  if (userId) {
    // Counters only ever come from holds, so the user's holds name every counter of theirs.
    const subjects = trx
      .selectFrom('holds')
      .select(sql<string>`'app:' || user_id || ':' || app_id`.as('subject'))
      .where('user_id', '=', userId)
      .where('app_id', 'is not', null)
      .union(
        trx
          .selectFrom('holds')
          .select(sql<string>`'key:' || key_id`.as('subject'))
          .where('user_id', '=', userId)
          .where('key_id', 'is not', null),
      );
    counterQuery = counterQuery.where('subject', 'in', subjects);
  }
  const recorded = new Map<string, { spent: number; held: number }>();
  for (const row of await counterQuery.execute())
    recorded.set(`${row.subject}|${row.period}|${num(row.period_start)}`, {
      spent: num(row.spent),
      held: num(row.held),
    });

  const differences: LedgerDifference[] = [];
  for (const key of new Set([...computed.keys(), ...recorded.keys()])) {
    const want = computed.get(key) ?? { spent: 0, held: 0 };
    const have = recorded.get(key) ?? { spent: 0, held: 0 };
    if (want.spent !== have.spent)
      differences.push({
        kind: 'spend_counter',
        subject: `${key}|spent`,
        recorded: microsToCredits(have.spent),
        computed: microsToCredits(want.spent),
      });
    if (want.held !== have.held)
      differences.push({
        kind: 'spend_counter',
        subject: `${key}|held`,
        recorded: microsToCredits(have.held),
        computed: microsToCredits(want.held),
      });
  }
  return differences;
}
