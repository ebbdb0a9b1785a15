import Type from 'typebox';
import { UsageReportSchema } from '#wire/usage.ts';
import type { App } from '../platform/http/server.ts';
import { principalOf } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { microsToCredits } from '../platform/money.ts';
import { usageAggregates, type UsageSums } from '../billing/reports.ts';
import { clientNames } from '../oauth/clients.ts';
import { keyNames } from '../keys/store.ts';

const DAY_MS = 86_400_000;

const UsageQuery = Type.Object({
  // Query values arrive as text (the server does not coerce types).
  days: Type.Optional(
    Type.String({ pattern: '^([1-9]|[1-8][0-9]|90)$', description: 'Days counted, 1 to 90 (default 30).' }),
  ),
});

type SumRow = UsageSums;

function totals(row: SumRow) {
  return {
    requests: Number(row.requests),
    promptTokens: Number(row.prompt ?? 0),
    completionTokens: Number(row.completion ?? 0),
    cacheReadTokens: Number(row.cacheRead ?? 0),
    cacheWriteTokens: Number(row.cacheWrite ?? 0),
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
  const {
    all,
    byModel,
    byApp,
    byKey: byKeyRows,
    byDay,
  } = await usageAggregates(ctx.db, ctx.dialect, {
    from,
    userId,
    appId,
  });
  const names = await clientNames(
    ctx.db,
    byApp.map((row) => row.app_id).filter((id): id is string => id !== null),
  );
  const keyNamesById = await keyNames(
    ctx.db,
    byKeyRows.map((row) => row.key_id!),
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
      name: keyNamesById.get(row.key_id!) ?? row.key_id!,
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
