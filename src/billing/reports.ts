import { sql } from 'kysely';
import type { Db, DialectName } from '../platform/db/connect.ts';
import { billingDb, OPEN } from './schema.ts';
import { monthStart, weekDays } from './periods.ts';
import { subjectKey } from './limits.ts';

/*
 * Billing's read-only reports for other features: ops' metrics and the usage report read billing's tables
 * (holds, usage records) only through these.
 */

/** How many holds are open now, in the whole deployment. */
export async function countOpenHolds(db: Db): Promise<number> {
  const open = await billingDb(db)
    .selectFrom('holds')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('status', '=', OPEN)
    .executeTakeFirst();
  return Number(open?.count ?? 0);
}

/** Which usage records a report counts: those since `from` (epoch ms), of one user or all, of one app or all. */
export interface UsageScope {
  from: number;
  userId: string | null;
  appId: string | null;
}

/** A sum of usage records: the driver's raw numbers (text or bigint on PostgreSQL). */
export interface UsageSums {
  requests: number | string | bigint;
  prompt: number | string | bigint | null;
  completion: number | string | bigint | null;
  /** Of `prompt`: tokens read from the provider's prompt cache (charged at `cacheRead`). */
  cacheRead: number | string | bigint | null;
  /** Of `prompt`: tokens written to the prompt cache, every lifetime (charged at `cacheWrite`/`cacheWrite1h`). */
  cacheWrite: number | string | bigint | null;
  cost: number | string | bigint | null;
}

const DAY_MS = 86_400_000;

/** The sum of one count of the records' `details` JSON (absent or null: 0). */
function detailSum(dialect: DialectName, field: string) {
  return dialect === 'postgres'
    ? sql<number>`sum(cast(cast(details as json) ->> ${sql.lit(field)} as bigint))`
    : sql<number>`sum(json_extract(details, ${sql.lit('$.' + field)}))`;
}

/**
 * The usage records in `scope`, summed in the database: in all, by model, by app, by API key (calls made
 * with a key) and by UTC day (`day`: the day number since the epoch), each group by cost, highest first.
 * The cache reads and writes among the prompt tokens come from each record's `details` (the split the call
 * was priced on), so a report of cheap cached calls shows why they were cheap.
 */
export async function usageAggregates(db: Db, dialect: DialectName, scope: UsageScope) {
  const sums = {
    requests: sql<number>`count(*)`.as('requests'),
    prompt: sql<number>`sum(prompt_tokens)`.as('prompt'),
    completion: sql<number>`sum(completion_tokens)`.as('completion'),
    cacheRead: detailSum(dialect, 'cachedRead').as('cacheRead'),
    // 5-minute and 1-hour writes (the latter recorded only when there were some).
    cacheWrite:
      sql<number>`${detailSum(dialect, 'cacheWrite')} + coalesce(${detailSum(dialect, 'cacheWrite1h')}, 0)`.as(
        'cacheWrite',
      ),
    cost: sql<number>`sum(cost)`.as('cost'),
  };
  const tokenSums = [sums.requests, sums.prompt, sums.completion, sums.cacheRead, sums.cacheWrite, sums.cost];
  let scoped = billingDb(db).selectFrom('usage_records').where('created_at', '>=', scope.from);
  if (scope.userId) scoped = scoped.where('user_id', '=', scope.userId);
  if (scope.appId) scoped = scoped.where('app_id', '=', scope.appId);
  // Integer division of epoch ms gives the UTC day number on both SQLite and PostgreSQL.
  const dayNumber = sql<number>`created_at / ${sql.lit(DAY_MS)}`;
  const [all, byModel, byApp, byKey, byDay] = await Promise.all([
    scoped.select(tokenSums).executeTakeFirstOrThrow(),
    scoped
      .select(['model', ...tokenSums])
      .groupBy('model')
      .orderBy('cost', 'desc')
      .execute(),
    scoped
      .select(['app_id', ...tokenSums])
      .groupBy('app_id')
      .orderBy('cost', 'desc')
      .execute(),
    scoped
      .select(['key_id', ...tokenSums])
      .where('key_id', 'is not', null)
      .groupBy('key_id')
      .orderBy('cost', 'desc')
      .execute(),
    scoped
      .select([dayNumber.as('day'), sums.requests, sums.cost])
      .groupBy(dayNumber)
      .orderBy(dayNumber)
      .execute(),
  ]);
  return { all, byModel, byApp, byKey, byDay };
}

/** What one API key was charged (micro-credits, refunds deducted) in the current UTC day, week, month, and in all. */
export interface KeyUsage {
  daily: number;
  /** Since Monday 00:00 UTC. */
  weekly: number;
  monthly: number;
  total: number;
}

/**
 * What `keyId` was charged in the UTC day, week (from Monday) and month that contain `at`, and since it was made,
 * read from its spend counters (the ones its limits are checked against: a call counts in the day and month its
 * hold was placed, a refund comes off): at most eight rows of the counters' primary key, however many calls the
 * key made. The week is the sum of its days' counters, which are never deleted.
 */
export async function keyUsage(db: Db, keyId: string, at: number): Promise<KeyUsage> {
  const { from: week, through: day } = weekDays(at);
  const month = monthStart(at);
  const rows = await billingDb(db)
    .selectFrom('spend_counters')
    .select(['period', 'period_start', 'spent'])
    .where('subject', '=', subjectKey({ kind: 'key', keyId }))
    .where((eb) =>
      eb.or([
        eb.and([eb('period', '=', 'daily'), eb('period_start', '>=', week), eb('period_start', '<=', day)]),
        eb.and([eb('period', '=', 'monthly'), eb('period_start', '=', month)]),
        eb.and([eb('period', '=', 'total'), eb('period_start', '=', 0)]),
      ]),
    )
    .execute();
  const usage: KeyUsage = { daily: 0, weekly: 0, monthly: 0, total: 0 };
  for (const row of rows) {
    const spent = Number(row.spent);
    if (row.period === 'total') usage.total = spent;
    else if (row.period === 'monthly') usage.monthly = spent;
    else {
      usage.weekly += spent;
      if (Number(row.period_start) === day) usage.daily = spent;
    }
  }
  return usage;
}
