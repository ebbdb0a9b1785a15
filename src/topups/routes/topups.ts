import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { AppContext } from '../../platform/context.ts';
import { microsToCredits } from '../../platform/money.ts';
import { HOW_TO_ENABLE } from '../settings.ts';
import { TopupsPageSchema, TopupStartedSchema } from '#wire/topups.ts';
import { sessionOnly, sessionSecurity, topupView } from './views.ts';

/** `GET` and `POST /api/wallet/topups` (decisions.md "Top-ups"): the dashboard session only. */
export function registerTopupRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/api/wallet/topups',
    {
      schema: {
        tags: ['wallet'],
        summary: 'Top-up options and history (dashboard session only)',
        security: sessionSecurity,
        response: { 200: TopupsPageSchema },
      },
      config: { auth: [] },
    },
    async (request) => {
      const { userId } = sessionOnly(request);
      const { settings } = ctx.services.topups;
      return {
        enabled: settings.enabled,
        ...(settings.enabled ? {} : { message: HOW_TO_ENABLE }),
        currency: settings.currency,
        amounts: settings.amounts,
        minAmount: settings.minAmount,
        maxAmount: settings.maxAmount,
        creditsPerUnit: settings.creditsPerUnit,
        lowBalance: microsToCredits(settings.lowBalance),
        owed: microsToCredits(await ctx.services.billing.debtOf(userId)),
        topups: (await ctx.services.topups.list(userId)).map(topupView),
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
      const started = await ctx.services.topups.startCheckout(userId, (request.body as { amount: number }).amount);
      reply.code(201);
      return { topup: topupView(started.topup), url: started.url };
    },
  );
}
