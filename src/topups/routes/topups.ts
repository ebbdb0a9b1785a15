import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { TopupRoutesDeps } from './deps.ts';
import { microsToCredits } from '../../platform/money.ts';
import { HOW_TO_ENABLE } from '../settings.ts';
import { sessionOnly, sessionSecurity, TopupSchema, topupView } from './views.ts';

const TopupsPage = Type.Object({
  enabled: Type.Boolean({ description: 'Whether top-ups are on (Stripe configured).' }),
  message: Type.Optional(Type.String({ description: 'When off: how the operator turns them on.' })),
  currency: Type.String(),
  amounts: Type.Array(Type.Number(), { description: 'Amounts offered, in units of `currency`.' }),
  minAmount: Type.Number({ description: 'Smallest custom amount.' }),
  maxAmount: Type.Number({ description: 'Largest custom amount.' }),
  creditsPerUnit: Type.Number({ description: 'Credits bought per unit of `currency`.' }),
  lowBalance: Type.Number({ description: 'Credits below which the dashboard warns.' }),
  owed: Type.Number({
    description:
      'Credits the wallet owes (a refunded or disputed top-up already spent); calls are refused until a top-up repays it.',
  }),
  topups: Type.Array(TopupSchema, { description: 'The latest 50 top-ups, newest first.' }),
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
        response: { 200: TopupsPage },
      },
      config: { auth: [] },
    },
    async (request) => {
      const { userId } = sessionOnly(request);
      const { settings } = ctx.topups;
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
        topups: (await ctx.topups.list(userId)).map(topupView),
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
          201: Type.Object({ topup: TopupSchema, url: Type.String({ description: 'The Stripe Checkout page.' }) }),
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
