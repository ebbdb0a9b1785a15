import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { TopupRoutesDeps } from './deps.ts';
import { microsToCredits } from '../../platform/money.ts';
import { HOW_TO_ENABLE } from '../settings.ts';
import { TopupsPageSchema, TopupStartedSchema } from '#wire/topups.ts';
import { sessionOnly, sessionSecurity, topupView } from './views.ts';

const TopupsQuery = Type.Object({
  // Query values arrive as text (the server does not coerce types), so the number is matched as digits.
  limit: Type.Optional(
    Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Top-ups per page, 1 to 100 (default 50).' }),
  ),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'The `nextCursor` of the previous page.' })),
});

/** `GET` and `POST /api/wallet/topups` (decisions.md "Top-ups"): the dashboard session only. */
export function registerTopupRoutes(app: App, ctx: TopupRoutesDeps): void {
  app.get(
    '/api/wallet/topups',
    {
      schema: {
        tags: ['wallet'],
        summary: 'Top-up options and history (dashboard session only)',
        security: sessionSecurity,
        querystring: TopupsQuery,
        response: { 200: TopupsPageSchema },
      },
      config: { auth: [] },
    },
    async (request) => {
      const { userId } = sessionOnly(request);
      const { settings } = ctx.topups;
      const query = request.query as { limit?: string; cursor?: string };
      const page = await ctx.topups.list(userId, {
        limit: query.limit ? Number(query.limit) : undefined,
        cursor: query.cursor,
      });
      return {
        enabled: settings.enabled,
        ...(settings.enabled ? {} : { message: HOW_TO_ENABLE }),
        currency: settings.currency,
        amounts: settings.amounts,
        minAmount: settings.minAmount,
        maxAmount: settings.maxAmount,
        creditsPerUnit: settings.creditsPerUnit,
        lowBalance: microsToCredits(settings.lowBalance),
        owed: microsToCredits(await ctx.billing.debtOf(userId)),
        topups: page.topups.map(topupView),
        nextCursor: page.nextCursor,
      };
    },
  );

  app.post(
    '/api/wallet/topups',
    {
      schema: {
        tags: ['wallet'],
        summary: 'Start a top-up: a Stripe Checkout Session for the signed-in user (dashboard session only)',
        description:
          'Answers the Checkout URL to send the user to; the webhook credits the top-up once paid. 403 TOPUPS_DISABLED while Stripe is not configured.',
        security: sessionSecurity,
        body: Type.Object(
          {
            amount: Type.Number({
              description:
                'Units of the currency: one of the offered amounts, or a custom one within the bounds (at most 2 decimals).',
            }),
          },
          { additionalProperties: false },
        ),
        response: {
          201: TopupStartedSchema,
        },
      },
      config: { auth: [] },
    },
    async (request, reply) => {
      const { userId } = sessionOnly(request);
      const started = await ctx.topups.startCheckout(userId, (request.body as { amount: number }).amount);
      reply.code(201);
      return { topup: topupView(started.topup), url: started.url };
    },
  );
}
