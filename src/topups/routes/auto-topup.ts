import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { AppContext } from '../../platform/context.ts';
import { AutoTopupSchema } from '#wire/topups.ts';
import { autoTopupView, sessionOnly, sessionSecurity } from './views.ts';

const Settings = Type.Object(
  {
    threshold: Type.Number({
      minimum: 0,
      description: 'Credits: when a charge leaves fewer available, one top-up starts.',
    }),
    amount: Type.Number({ description: 'Units of the currency each auto top-up buys (within the top-up bounds).' }),
  },
  { additionalProperties: false },
);

/** Auto top-up: `GET`/`PUT /api/wallet/auto-topup` and `POST /api/wallet/auto-topup/setup` (dashboard session only). */
export function registerAutoTopupRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/api/wallet/auto-topup',
    {
      schema: {
        tags: ['wallet'],
        summary: 'Auto top-up settings and failure notice (dashboard session only)',
        security: sessionSecurity,
        response: { 200: AutoTopupSchema },
      },
      config: { auth: [] },
    },
    async (request) => autoTopupView(await ctx.services.topups.autoTopup(sessionOnly(request).userId)),
  );

  app.put(
    '/api/wallet/auto-topup',
    {
      schema: {
        tags: ['wallet'],
        summary: 'Turn auto top-up on or off, or change its threshold and amount (dashboard session only)',
        security: sessionSecurity,
        description: 'Turning it on needs a saved payment method (`POST /api/wallet/auto-topup/setup`); 400 otherwise.',
        body: Type.Object(
          { enabled: Type.Boolean(), threshold: Settings.properties.threshold, amount: Settings.properties.amount },
          { additionalProperties: false },
        ),
        response: { 200: AutoTopupSchema },
      },
      config: { auth: [] },
    },
    async (request) => {
      const { userId } = sessionOnly(request);
      return autoTopupView(
        await ctx.services.topups.updateAutoTopup(
          userId,
          request.body as { enabled: boolean; threshold: number; amount: number },
        ),
      );
    },
  );

  app.post(
    '/api/wallet/auto-topup/setup',
    {
      schema: {
        tags: ['wallet'],
        summary:
          'Save a payment method for auto top-up: a Stripe Checkout Session in setup mode (dashboard session only)',
        security: sessionSecurity,
        description: 'Once the user completes it, the webhook turns auto top-up on with this threshold and amount.',
        body: Settings,
        response: { 201: Type.Object({ url: Type.String({ description: 'The Stripe Checkout page.' }) }) },
      },
      config: { auth: [] },
    },
    async (request, reply) => {
      const { userId } = sessionOnly(request);
      const body = request.body as { threshold: number; amount: number };
      reply.code(201);
      return ctx.services.topups.startAutoTopupSetup(userId, body.threshold, body.amount);
    },
  );
}
