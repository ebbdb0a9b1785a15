import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import { principalOf } from '../../platform/http/server.ts';
import type { MeteringDeps } from '../deps.ts';
import { microsToCredits } from '../../platform/money.ts';

const security = [{ bearer: [] }];

/** `GET /api/wallet/balance` (decisions.md "Reads…"): credits the user owns, holds, and can spend. */
export const BalanceSchema = Type.Object({
  balance: Type.Number({ description: 'Credits the user owns (available + reserved).' }),
  reserved: Type.Number({ description: 'Credits held by calls in flight.' }),
  available: Type.Number({ description: 'Credits that can be spent now.' }),
  currency: Type.Literal('credits'),
});

const TransactionSchema = Type.Object({
  id: Type.String({ examples: ['txn_3kT9xQ2mN7pR4sV8wY1z'] }),
  type: Type.Union(
    [
      Type.Literal('grant'),
      Type.Literal('topup'),
      Type.Literal('adjustment'),
      Type.Literal('hold'),
      Type.Literal('capture'),
      Type.Literal('release'),
      Type.Literal('expiry'),
      Type.Literal('refund'),
      Type.Literal('dispute'),
    ],
    { description: 'The kind of movement.' },
  ),
  amount: Type.Number({
    description:
      'Change of the balance in credits (+ grant, top-up, refund of a charge, won dispute; − capture, refunded or disputed top-up; 0 for hold, release, expiry).',
  }),
  held: Type.Number({ description: 'Change of the reserved credits (+ hold; − settle, release, expiry).' }),
  balanceAfter: Type.Number({ description: 'Balance just after this movement.' }),
  description: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  holdId: Type.Optional(Type.String()),
});

const TransactionsQuery = Type.Object({
  // Query values arrive as text (the server does not coerce types), so the number is matched as digits.
  limit: Type.Optional(
    Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Movements per page, 1 to 100 (default 50).' }),
  ),
  cursor: Type.Optional(Type.String({ maxLength: 100, description: 'The `nextCursor` of the previous page.' })),
});

/** The wallet reads of the dashboard and of apps with `billing:read`. */
export function registerWalletRoutes(app: App, ctx: MeteringDeps): void {
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
      const wallet = await ctx.billing.getBalance(principalOf(request).userId);
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
          200: Type.Object({
            transactions: Type.Array(TransactionSchema),
            nextCursor: Type.Union([Type.String(), Type.Null()]),
          }),
        },
      },
      config: { auth: ['billing:read'] },
    },
    async (request) => {
      const query = request.query as { limit?: string; cursor?: string };
      // Security invariant: an app (its token, or a key it created) sees only the movements of its own holds,
      // not the other apps' spend nor the user's grants and top-ups; the balance stays readable (decisions.md).
      const principal = principalOf(request);
      return ctx.billing.listTransactions(principal.userId, {
        limit: query.limit ? Number(query.limit) : undefined,
        cursor: query.cursor,
        appId: principal.appId,
      });
    },
  );
}
