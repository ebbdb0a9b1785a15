import Type from 'typebox';
import { UsageReportSchema } from '#wire/usage.ts';
import { sql } from 'kysely';
import type { App } from '../platform/http/server.ts';
import { principalOf } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { microsToCredits } from '../platform/money.ts';

const DAY_MS = 86_400_000;

const UsageQuery = Type.Object({
  // Query values arrive as text (the server does not coerce types).
  days: Type.Optional(
    Type.String({ pattern: '^([1-9]|[1-8][0-9]|90)$', description: 'Days counted, 1 to 90 (default 30).' }),
  ),
});

interface SumRow {
  requests: number | string | bigint;
  prompt: number | string | bigint | null;
  completion: number | string | bigint | null;
  cost: number | string | bigint | null;
}

function totals(row: SumRow) {
  return {
    requests: Number(row.requests),
    promptTokens: Number(row.prompt ?? 0),
    completionTokens: Number(row.completion ?? 0),
    cost: microsToCredits(Number(row.cost ?? 0)),
  };
}

/**
 * Aggregates usage records since `from` (in the database: totals, by model, by app and by UTC day), for one
 * user or for all; with `appId`, only the calls made through that app.
 */
async function usageReport(ctx: AppContext, userId: string | null, days: number, appId: string | null = null) {
  const now = ctx.clock.now();
  const from = Math.floor(now / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
  const sums = {
    requests: sql<number>`count(*)`.as('requests'),
    prompt: sql<number>`sum(prompt_tokens)`.as('prompt'),
    completion: sql<number>`sum(completion_tokens)`.as('completion'),
    cost: sql<number>`sum(cost)`.as('cost'),
  };
  let scoped = ctx.db.selectFrom('usage_records').where('created_at', '>=', from);
  if (userId) scoped = scoped.where('user_id', '=', userId);
  if (appId) scoped = scoped.where('app_id', '=', appId);
  // Integer division of epoch ms gives the UTC day number on both SQLite and PostgreSQL.
  const dayNumber = sql<number>`created_at / ${sql.lit(DAY_MS)}`;
  const [all, byModel, byApp, byKeyRows, byDay] = await Promise.all([
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
  const appIds = byApp.map((row) => row.app_id).filter((id): id is string => id !== null);
  const names = new Map(
    appIds.length
      ? (
          await ctx.db
            .selectFrom('oauth_clients')
            .select(['client_id', 'name'])
            .where('client_id', 'in', appIds)
            .execute()
        ).map((r) => [r.client_id, r.name])
      : [],
  );
  const keyIds = byKeyRows.map((row) => row.key_id!);
  const keyNames = new Map(
    keyIds.length
      ? (await ctx.db.selectFrom('api_keys').select(['id', 'name']).where('id', 'in', keyIds).execute()).map((r) => [
          r.id,
          r.name,
        ])
      : [],
  );
  return {
    from: new Date(from).toISOString(),
    to: new Date(now).toISOString(),
    totals: totals(all as SumRow),
    byModel: byModel.map((row) => ({ model: row.model, ...totals(row as SumRow) })),
    byApp: byApp.map((row) => ({
      appId: row.app_id,
      name: row.app_id ? (names.get(row.app_id) ?? row.app_id) : 'Your API keys and dashboard',
      ...totals(row as SumRow),
    })),
    byKey: byKeyRows.map((row) => ({
      keyId: row.key_id!,
      name: keyNames.get(row.key_id!) ?? row.key_id!,
      ...totals(row as SumRow),
    })),
    byDay: byDay.map((row) => ({
      date: new Date(Number(row.day) * DAY_MS).toISOString().slice(0, 10),
      requests: Number(row.requests),
      cost: microsToCredits(Number(row.cost ?? 0)),
    })),
  };
}

/** `GET /api/usage` (the caller's usage) and `GET /api/admin/usage` (every user's, or one's, for operators). */
export function registerUsageRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/api/usage',
    {
      schema: {
        tags: ['usage'],
        summary: "The caller's usage: requests, tokens and cost by model, by app, by API key and by day",
        security: [{ bearer: [] }],
        querystring: UsageQuery,
        response: { 200: UsageReportSchema },
      },
      config: { auth: ['billing:read'] },
    },
    async (request) => {
      // Security invariant: an app (its token, or a key it created) sees only the calls made through it, not
      // which other apps the user runs or what they spend; the user's own keys and dashboard see everything.
      const principal = principalOf(request);
      return usageReport(
        ctx,
        principal.userId,
        Number((request.query as { days?: string }).days ?? 30),
        principal.appId,
      );
    },
  );

  app.get(
    '/api/admin/usage',
    {
      schema: {
        tags: ['admin'],
        summary: 'Usage of every user (or of `userId`): requests, tokens and cost by model, by app and by day',
        security: [{ admin: [] }],
        querystring: Type.Intersect([
          UsageQuery,
          Type.Object({ userId: Type.Optional(Type.String({ pattern: '^usr_[A-Za-z0-9]+$' })) }),
        ]),
        response: { 200: UsageReportSchema },
      },
      config: { admin: true },
    },
    async (request) => {
      const query = request.query as { days?: string; userId?: string };
      return usageReport(ctx, query.userId ?? null, Number(query.days ?? 30));
    },
  );
}
