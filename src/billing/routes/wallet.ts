import Type from 'typebox';
import { BalanceSchema, TransactionsPageSchema } from '#wire/wallet.ts';
import type { App } from '../../platform/http/server.ts';
import { principalOf } from '../../platform/http/server.ts';
import type { AppContext } from '../../platform/context.ts';
import { microsToCredits } from '../../platform/money.ts';

const security = [{ bearer: [] }];

const TransactionsQuery = Type.Object({
  // Query values arrive as text (the server does not coerce types), so the number is matched as digits.
  limit: Type.Optional(
    Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Movements per page, 1 to 100 (default 50).' }),
  ),
  cursor: Type.Optional(Type.String({ maxLength: 100, description: 'The `nextCursor` of the previous page.' })),
});

/** The wallet reads of the dashboard and of apps with `billing:read`. */
export function registerWalletRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/api/wallet/balance',
    {
      schema: {
        tags: ['wallet'],
        summary: 'The wallet balance in credits',
        security,
        response: { 200: BalanceSchema },
      },
      config: { auth: ['billing:read'] },
    },
    async (request) => {
      const wallet = await ctx.services.billing.getBalance(principalOf(request).userId);
      return {
        balance: microsToCredits(wallet.balance),
        reserved: microsToCredits(wallet.reserved),
        available: microsToCredits(wallet.available),
        currency: 'credits' as const,
      };
    },
  );

  app.get(
    '/api/wallet/transactions',
    {
      schema: {
        tags: ['wallet'],
        summary: 'The wallet movements, newest first, paged',
        security,
        querystring: TransactionsQuery,
        response: {
          200: TransactionsPageSchema,
        },
      },
      config: { auth: ['billing:read'] },
    },
    async (request) => {
      const query = request.query as { limit?: string; cursor?: string };
      // Security invariant: an app (its token, or a key it created) sees only the movements of its own holds,
      // not the other apps' spend nor the user's grants and top-ups; the balance stays readable (decisions.md).
      const principal = principalOf(request);
      return ctx.services.billing.listTransactions(principal.userId, {
        limit: query.limit ? Number(query.limit) : undefined,
        cursor: query.cursor,
        appId: principal.appId,
      });
    },
  );
}
