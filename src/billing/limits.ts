import { sql, type Kysely } from 'kysely';
import type { BillingDb } from './schema.ts';
import { preparedByShape } from '../platform/db/prepared.ts';
import type { BillingTables as Tables } from './schema.ts';
import type { InsufficientCreditsDetails, SpendingLimitDetails } from '#wire/restrictions.ts';
import { ApiError } from '../platform/errors.ts';
import { microsToCredits } from '../platform/money.ts';
import type { CompanionWrite, Trx } from './ledger.ts';
import { COUNTER_PERIODS, LIMIT_PERIODS, periodAt, weekDays, type CounterPeriod, type LimitPeriod } from './periods.ts';

/** Whose limit: an app's limit for one user, or an API key's own limit. */
export type LimitSubject = { kind: 'app'; userId: string; appId: string } | { kind: 'key'; keyId: string };

/** The counter key of a subject. */
export function subjectKey(subject: LimitSubject): string {
  return subject.kind === 'app' ? `app:${subject.userId}:${subject.appId}` : `key:${subject.keyId}`;
}

/** The subjects a hold counts against, in the order decisions.md checks them: the app's, then the key's. */
export function subjectsOf(hold: { userId: string; appId: string | null; keyId: string | null }): LimitSubject[] {
  const subjects: LimitSubject[] = [];
  if (hold.appId) subjects.push({ kind: 'app', userId: hold.userId, appId: hold.appId });
  if (hold.keyId) subjects.push({ kind: 'key', keyId: hold.keyId });
  return subjects;
}

/** A limit that applies to a hold: subject, period and the limit in micro-credits. */
export interface AppliedLimit {
  subject: LimitSubject;
  period: LimitPeriod;
  limit: number;
}

/** A limit that applies, with what its period has already spent and held (micro-credits). */
export interface LimitWithSpend extends AppliedLimit {
  current: number;
}

/**
 * The limits that apply to a hold, in check order (the app's daily, weekly, monthly and total limits for this
 * user, then the key's limit), each with its current spend: spent + held in the period that contains `at`. Read
 * inside the hold's transaction, after the wallet lock, in one query (the limits, then each subject's
 * counters, were one query more per subject; on SQLite every statement of a hold runs under the one write
 * lock). A weekly limit has no counter of its own: when a subject has one, a second query sums its days'
 * counters (see {@link weekSpends}); a hold whose subjects have none runs the one query, as before.
 */
export async function applicableLimitsWithSpend(
  trx: Trx | BillingDb,
  hold: { userId: string; appId: string | null; keyId: string | null },
  at: number,
): Promise<LimitWithSpend[]> {
  const subjects = subjectsOf(hold);
  if (subjects.length === 0) return [];
  const values: Record<string, string | number> = {
    daily: periodAt('daily', at).start,
    monthly: periodAt('monthly', at).start,
  };
  subjects.forEach((subject, i) => (values[`subject${i}`] = subjectKey(subject)));
  const { rows } = await limitWithSpendRows(subjects.length)(trx, values);
  const weekly = rows.filter((r) => r.period === 'weekly').map((r) => r.subject);
  const weeks = weekly.length > 0 ? await weekSpends(trx, weekly, at) : null;
  const limits: LimitWithSpend[] = [];
  for (const subject of subjects) {
    const key = subjectKey(subject);
    for (const period of LIMIT_PERIODS) {
      const row = rows.find((r) => r.subject === key && r.period === period);
      if (!row) continue;
      // The query joined a weekly limit to no counter (there are none): its spend is its days' sum.
      const week = period === 'weekly' ? weeks!.get(key)! : null;
      const current = week ? week.spent + week.held : Number(row.spent) + Number(row.held);
      limits.push({ subject, period, limit: Number(row.amount), current });
    }
  }
  return limits;
}

/**
 * What each subject (by key) spent and holds in the week that contains `at`: the sum of its daily counters from
 * Monday through `at`'s day (periods.ts `weekDays`), in one query for one or two subjects (a hold's), by subject
 * key; a subject without counters this week spent nothing. Daily counters are never deleted (nothing prunes
 * `spend_counters`), so the sum is the week's whole spend.
 */
async function weekSpends(db: Trx | BillingDb, keys: string[], at: number): Promise<Map<string, PeriodSpend>> {
  const { from, through } = weekDays(at);
  const values: Record<string, string | number> = { from, through };
  keys.forEach((key, i) => (values[`subject${i}`] = key));
  const spends = new Map<string, PeriodSpend>(keys.map((key) => [key, { spent: 0, held: 0 }]));
  const { rows } = await weekSpendRows(keys.length)(db, values);
  for (const row of rows) spends.set(row.subject, { spent: Number(row.spent), held: Number(row.held) });
  return spends;
}

/** The sums of the daily counters of some subjects between two day starts (inclusive), per subject. */
const weekSpendRows = preparedByShape(
  (count: number) => (db: Kysely<Tables>, p: Record<string, any>) =>
    db
      .selectFrom('spend_counters')
      .select((eb) => [
        'subject',
        eb.fn.sum<number | string>('spent').as('spent'),
        eb.fn.sum<number | string>('held').as('held'),
      ])
      .where(
        'subject',
        'in',
        Array.from({ length: count }, (_, i) => p[`subject${i}`]!),
      )
      .where('period', '=', 'daily')
      // Cast as in limitWithSpendRows: epoch ms do not fit the integer PostgreSQL would guess.
      .where(sql<boolean>`period_start between cast(${p.from} as bigint) and cast(${p.through} as bigint)`)
      .groupBy('subject'),
);

/** The limit rows of one or two subjects, each with its period's counter (zeros when it has none yet). */
const limitWithSpendRows = preparedByShape(
  (count: number) => (db: Kysely<Tables>, p: Record<string, any>) =>
    db
      .selectFrom('spending_limits as l')
      .leftJoin('spend_counters as c', (join) =>
        join
          .onRef('c.subject', '=', 'l.subject')
          .onRef('c.period', '=', 'l.period')
          // The period's start, cast: PostgreSQL would type the parameters as the literal 0's integer, too small for epoch ms.
          .on(
            sql<boolean>`c.period_start = case l.period when 'daily' then cast(${p.daily} as bigint) when 'monthly' then cast(${p.monthly} as bigint) else 0 end`,
          ),
      )
      .select((eb) => [
        'l.subject',
        'l.period',
        'l.amount',
        eb.fn.coalesce('c.spent', eb.lit(0)).as('spent'),
        eb.fn.coalesce('c.held', eb.lit(0)).as('held'),
      ])
      .where(
        'l.subject',
        'in',
        Array.from({ length: count }, (_, i) => p[`subject${i}`]!),
      ),
);

/** A subject's limits per period, in micro-credits (null: none). */
export type LimitsByPeriod = Record<LimitPeriod, number | null>;

/** The limits of several subjects at once, by subject key; a subject without any has every period null. */
export async function readLimits(db: Trx | BillingDb, subjects: LimitSubject[]): Promise<Map<string, LimitsByPeriod>> {
  const keys = [...new Set(subjects.map(subjectKey))];
  const limits = new Map<string, LimitsByPeriod>(
    keys.map((key) => [key, { daily: null, weekly: null, monthly: null, total: null }]),
  );
  if (keys.length === 0) return limits;
  for (const row of await db
    .selectFrom('spending_limits')
    .select(['subject', 'period', 'amount'])
    .where('subject', 'in', keys)
    .execute()) {
    limits.get(row.subject)![row.period] = Number(row.amount);
  }
  return limits;
}

/**
 * Sets or removes a subject's limits: a number sets the period's limit, null removes it, a period left out
 * keeps its own. The only writer of spending limits. Takes effect on the next hold: holds read the limits
 * inside their own transaction.
 */
export async function writeLimits(
  db: Trx | BillingDb,
  subject: LimitSubject,
  changes: Partial<LimitsByPeriod>,
): Promise<void> {
  const key = subjectKey(subject);
  for (const period of LIMIT_PERIODS) {
    const amount = changes[period];
    if (amount === undefined) continue;
    if (amount === null) {
      await db.deleteFrom('spending_limits').where('subject', '=', key).where('period', '=', period).execute();
      continue;
    }
    if (!Number.isSafeInteger(amount) || amount < 0)
      throw new RangeError(`a spending limit must be a non-negative integer of micro-credits, got ${amount}`);
    await db
      .insertInto('spending_limits')
      .values({ subject: key, period, amount })
      .onConflict((oc) => oc.columns(['subject', 'period']).doUpdateSet({ amount }))
      .execute();
  }
}

/** Spend of one subject in one period: captured (net of refunds) and still held, in micro-credits. */
export interface PeriodSpend {
  spent: number;
  held: number;
}

/**
 * Reads the counters of `subjects` for the periods that contain `at`, in one query for any number of them (the key
 * list and the authorized apps show each one's spend), by subject key; a subject without counters spent nothing.
 * The week's spend is the sum of its days' counters (Monday through `at`'s day), read by the same query.
 */
export async function readSpends(
  db: Trx | BillingDb,
  subjects: LimitSubject[],
  at: number,
): Promise<Map<string, Record<LimitPeriod, PeriodSpend>>> {
  const starts = Object.fromEntries(COUNTER_PERIODS.map((period) => [period, periodAt(period, at).start])) as Record<
    CounterPeriod,
    number
  >;
  const week = weekDays(at);
  const keys = [...new Set(subjects.map(subjectKey))];
  const spends = new Map<string, Record<LimitPeriod, PeriodSpend>>(
    keys.map((key) => [
      key,
      {
        daily: { spent: 0, held: 0 },
        weekly: { spent: 0, held: 0 },
        monthly: { spent: 0, held: 0 },
        total: { spent: 0, held: 0 },
      },
    ]),
  );
  if (keys.length === 0) return spends;
  const rows = await db
    .selectFrom('spend_counters')
    .select(['subject', 'period', 'period_start', 'spent', 'held'])
    .where('subject', 'in', keys)
    .where((eb) =>
      eb.or([
        eb('period_start', 'in', [starts.daily, starts.monthly, starts.total]),
        eb.and([
          eb('period', '=', 'daily'),
          eb('period_start', '>=', week.from),
          eb('period_start', '<=', week.through),
        ]),
      ]),
    )
    .execute();
  for (const row of rows) {
    const spend = spends.get(row.subject)!;
    const start = Number(row.period_start);
    if (row.period === 'daily' && start >= week.from && start <= week.through) {
      spend.weekly.spent += Number(row.spent);
      spend.weekly.held += Number(row.held);
    }
    if (starts[row.period] === start) spend[row.period] = { spent: Number(row.spent), held: Number(row.held) };
  }
  return spends;
}

/**
 * The write that adds `delta` to the counters of every subject of a hold, for each period the hold counts
 * in (the day and month it was placed, and total), as a companion of the hold's movement (see
 * `postMovement`): it runs under the user's wallet lock, in the movement's transaction, so the counters
 * always equal what the holds say. Null when there is nothing to count.
 */
export function counterWrite(
  hold: { userId: string; appId: string | null; keyId: string | null; periodDay: number; periodMonth: number },
  delta: PeriodSpend,
): CompanionWrite | null {
  if (delta.spent === 0 && delta.held === 0) return null;
  const rows = subjectsOf(hold).flatMap((subject) =>
    COUNTER_PERIODS.map((period) => ({
      subject: subjectKey(subject),
      period,
      period_start: period === 'daily' ? hold.periodDay : period === 'monthly' ? hold.periodMonth : 0,
      spent: delta.spent,
      held: delta.held,
    })),
  );
  if (rows.length === 0) return null;
  return {
    build: (trx) => counterUpsert(trx, rows),
    run: (trx) => {
      const values: Record<string, string | number> = { spent: delta.spent, held: delta.held };
      rows.forEach((row, i) => {
        values[`subject${i}`] = row.subject;
        values[`periodStart${i}`] = row.period_start;
      });
      return preparedCounterUpsert(rows.length / 3)(trx, values);
    },
  };
}

type CounterRow = {
  subject: string;
  period: CounterPeriod;
  period_start: number;
  spent: number;
  held: number;
};

/** Adds each row's spent and held to its counter, creating the counter at the row's values. */
function counterUpsert(trx: Kysely<Tables>, rows: CounterRow[]) {
  return trx
    .insertInto('spend_counters')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(['subject', 'period', 'period_start']).doUpdateSet((eb) => ({
        spent: eb('spend_counters.spent', '+', eb.ref('excluded.spent')),
        held: eb('spend_counters.held', '+', eb.ref('excluded.held')),
      })),
    );
}

/** {@link counterUpsert} prepared for a hold with one or two subjects (three periods each). */
const preparedCounterUpsert = preparedByShape(
  (subjects: number) => (db: Kysely<Tables>, p: Record<string, any>) =>
    counterUpsert(
      db,
      Array.from({ length: subjects * 3 }, (_, i) => ({
        subject: p[`subject${i}`],
        period: COUNTER_PERIODS[i % 3]!,
        period_start: p[`periodStart${i}`],
        spent: p.spent,
        held: p.held,
      })),
    ),
);

const PERIOD_WORD: Record<LimitPeriod, string> = {
  daily: 'Daily',
  weekly: 'Weekly',
  monthly: 'Monthly',
  total: 'Total',
};

/**
 * The 429 of contract §2.2/§7.2: which limit, the limit, what is already spent or held in the period, what
 * the request needs, and when the period resets (omitted for `total`). Amounts in credits.
 */
/**
 * A spending limit's 429, knowing whose limit refused (the app's or the key's), for billing's observers; the
 * envelope stays the contract's (the subject is not a field of it).
 */
export class SpendingLimitError extends ApiError {
  readonly subject: 'app' | 'key';

  constructor(subject: 'app' | 'key', message: string, details: SpendingLimitDetails) {
    super('SPENDING_LIMIT_EXCEEDED', message, { details });
    this.subject = subject;
  }
}

export function spendingLimitExceeded(
  limit: AppliedLimit,
  current: number,
  requested: number,
  now: number,
): SpendingLimitError {
  const resetsAt = periodAt(limit.period, now).resetsAt;
  const whose = limit.subject.kind === 'app' ? 'this app' : 'this API key';
  const message =
    `${PERIOD_WORD[limit.period]} spending limit exceeded for ${whose}: ${microsToCredits(current)} of ${microsToCredits(limit.limit)} credits used, ` +
    `this request needs up to ${microsToCredits(requested)} credits.` +
    (resetsAt === null ? '' : ` The limit resets at ${new Date(resetsAt).toISOString()}.`);
  const details: SpendingLimitDetails = {
    limitType: limit.period,
    limit: microsToCredits(limit.limit),
    current: microsToCredits(current),
    requested: microsToCredits(requested),
  };
  if (resetsAt !== null) details.resetsAt = new Date(resetsAt).toISOString();
  return new SpendingLimitError(limit.subject.kind === 'app' ? 'app' : 'key', message, details);
}

/**
 * The 402 of contract §2.2/§7.2: what the wallet has available and what the request needs, in credits.
 * `required` is the hold's worst case ("up to"), or a lower bound known before the exact count ("at least").
 */
export function insufficientCredits(
  available: number,
  required: number,
  bound: 'up to' | 'at least' = 'up to',
): ApiError {
  return new ApiError(
    'INSUFFICIENT_CREDITS',
    `Insufficient credits: this request needs ${bound} ${microsToCredits(required)} credits and ${microsToCredits(available)} are available.`,
    {
      details: {
        available: microsToCredits(available),
        required: microsToCredits(required),
      } satisfies InsufficientCreditsDetails,
    },
  );
}
