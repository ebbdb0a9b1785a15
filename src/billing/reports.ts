import { sql } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { billingDb, OPEN } from './schema.ts';

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
  cost: number | string | bigint | null;
}

const DAY_MS = 86_400_000;

/**
 * The usage records in `scope`, summed in the database: in all, by model, by app, by API key (calls made
 * with a key) and by UTC day (`day`: the day number since the epoch), each group by cost, highest first.
 */
export async function usageAggregates(db: Db, scope: UsageScope) {
  const sums = {
    requests: sql<number>`count(*)`.as('requests'),
    prompt: sql<number>`sum(prompt_tokens)`.as('prompt'),
    completion: sql<number>`sum(completion_tokens)`.as('completion'),
    cost: sql<number>`sum(cost)`.as('cost'),
  };
  let scoped = billingDb(db).selectFrom('usage_records').where('created_at', '>=', scope.from);
  if (scope.userId) scoped = scoped.where('user_id', '=', scope.userId);
  if (scope.appId) scoped = scoped.where('app_id', '=', scope.appId);
  // Integer division of epoch ms gives the UTC day number on both SQLite and PostgreSQL.
  const dayNumber = sql<number>`created_at / ${sql.lit(DAY_MS)}`;
  const [all, byModel, byApp, byKey, byDay] = await Promise.all([
    scoped.select([sums.requests, sums.prompt, sums.completion, sums.cost]).executeTakeFirstOrThrow(),
    scoped
      .select(['model', sums.requests, sums.prompt, sums.completion, sums.cost])
      .groupBy('model')
      .orderBy('cost', 'desc')
      .execute(),
    scoped
      .select(['app_id', sums.requests, sums.prompt, sums.completion, sums.cost])
      .groupBy('app_id')
      .orderBy('cost', 'desc')
      .execute(),
    scoped
      .select(['key_id', sums.requests, sums.prompt, sums.completion, sums.cost])
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
