import { sql } from 'kysely';
import type { Db, DialectName } from '../platform/db/connect.ts';
import { billingDb, OPEN } from './schema.ts';
import { periodAt } from './periods.ts';

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

/** What one API key was charged (micro-credits) in the current UTC day and month, from its usage records. */
export interface KeySpend {
  daily: number;
  monthly: number;
}

/**
 * What `keyId` of `userId` was charged since the start of the UTC day and month that contain `at`, summed from its
 * usage records (refunds apart): one read over the user's records of this month (the `user_id, created_at` index).
 */
export async function keySpend(db: Db, userId: string, keyId: string, at: number): Promise<KeySpend> {
  const day = periodAt('daily', at).start;
  const month = periodAt('monthly', at).start;
  const row = await billingDb(db)
    .selectFrom('usage_records')
    .select([
      sql<number | string | null>`sum(case when created_at >= ${day} then cost else 0 end)`.as('daily'),
      sql<number | string | null>`sum(cost)`.as('monthly'),
    ])
    .where('user_id', '=', userId)
    .where('created_at', '>=', month)
    .where('key_id', '=', keyId)
    .executeTakeFirst();
  return { daily: Number(row?.daily ?? 0), monthly: Number(row?.monthly ?? 0) };
}
