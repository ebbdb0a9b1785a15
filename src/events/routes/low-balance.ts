import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import { principalOf, type App } from '../../platform/http/server.ts';
import type { EventRoutesDeps } from './deps.ts';
import { creditsToMicros, microsToCredits, CREDITS_RULE } from '../../platform/money.ts';
import { errors } from '../../platform/errors.ts';
import { readAlert, writeAlert, type LowBalanceAlert } from '../low-balance.ts';
import { userSurface } from './surfaces.ts';

const AlertSchema = Type.Object({
  threshold: Type.Union([Type.Number(), Type.Null()], { description: 'Credits; null when no alert is set.' }),
  armed: Type.Boolean({
    description:
      'True when the balance is at or above the threshold, so the next call, refund or dispute that takes it below fires `wallet.low_balance`.',
  }),
});

const view = (alert: LowBalanceAlert) => ({
  threshold: alert.threshold === null ? null : microsToCredits(alert.threshold),
  armed: alert.armed,
});

/**
 * The user whose alert this is. Dashboard session only, as for the webhook endpoints the alert feeds; the 403
 * names this route, not the endpoints.
 */
function alertOwner(request: FastifyRequest): string {
  const principal = principalOf(request);
  if (principal.kind !== 'session')
    throw errors.forbidden(
      'The low-balance alert can only be read or set from the dashboard (a signed-in session); no app scope or API key permission grants it.',
    );
  return principal.userId;
}

/**
 * `GET` and `PUT /api/user/low-balance-alert`: the threshold under which `wallet.low_balance` fires, once per
 * crossing. Dashboard session only, like the endpoints.
 */
export function registerLowBalanceRoutes(app: App, ctx: EventRoutesDeps): void {
  const { tags, security, config } = userSurface;
  const path = '/api/user/low-balance-alert';

  app.get(
    path,
    { schema: { tags, summary: 'The low-balance alert threshold', security, response: { 200: AlertSchema } }, config },
    async (request) => {
      return view(await readAlert(ctx, alertOwner(request)));
    },
  );

  app.put(
    path,
    {
      schema: {
        tags,
        summary: 'Set or remove the low-balance alert threshold',
        security,
        description:
          '`wallet.low_balance` fires once when a call, a refund or a dispute leaves `available` below the threshold, and not again until it has ' +
          'been back at or above it. null removes the alert.',
        body: Type.Object(
          {
            threshold: Type.Union([Type.Number({ minimum: 0, description: `Credits ${CREDITS_RULE}.` }), Type.Null()]),
          },
          { additionalProperties: false },
        ),
        response: { 200: AlertSchema },
      },
      config,
    },
    async (request) => {
      const userId = alertOwner(request);
      const { threshold } = request.body as { threshold: number | null };
      const micros = threshold === null ? null : creditsToMicros(threshold);
      if (threshold !== null && micros === null)
        throw errors.invalid(`threshold must be a number of credits ${CREDITS_RULE}.`, { param: 'threshold' });
      const alert = await writeAlert(ctx, userId, micros);
      await ctx.events.subscriptions.changed(userId);
      return view(alert);
    },
  );
}
