import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import { principalOf } from '../../platform/http/server.ts';
import { microsToCredits } from '../../platform/money.ts';
import type { MeteringDeps } from '../deps.ts';
import { userCredits } from '../reports.ts';
import { anyKeyOrBillingRead } from '../read-access.ts';

/** `GET /api/v1/credits`: OpenRouter's answer. */
const CreditsSchema = Type.Object({
  data: Type.Object({
    total_credits: Type.Number({
      description:
        'Credits that came into the wallet other than through calls: grants, top-ups, adjustments and disputes, less refunded top-ups',
    }),
    total_usage: Type.Number({
      description:
        'Credits calls were charged, net of refunds. `total_credits - total_usage` is the wallet balance (`GET /api/wallet/balance`)',
    }),
  }),
});

/**
 * `GET /api/v1/credits`: what came into the caller's wallet and what calls took from it, in OpenRouter's shape, so a
 * tool that shows an OpenRouter account's credits shows a Tollgate wallet's.
 *
 * Invariants: both numbers come from one read of the wallet row (its `credited` counter and its balance), so
 * `total_credits - total_usage` is the balance `GET /api/wallet/balance` shows, to the micro-credit, and the read
 * costs the same for a user of ten calls or ten million. Security: the caller's own wallet only; any API key of
 * the user, an OAuth token only with `billing:read` (see {@link anyKeyOrBillingRead}).
 */
export function registerCreditsRoute(app: App, ctx: MeteringDeps): void {
  app.get(
    '/api/v1/credits',
    {
      schema: {
        tags: ['wallet'],
        summary: "The wallet's credits in and usage, in OpenRouter's shape",
        description:
          "Any API key of the user may call it (no permission needed), as on OpenRouter; an app's OAuth token needs `billing:read`. Credits, not micro-credits.",
        security: [{ bearer: [] }],
        response: { 200: CreditsSchema },
      },
      config: { auth: [] },
      preValidation: anyKeyOrBillingRead,
    },
    async (request) => {
      const credits = await userCredits(ctx.db, principalOf(request).userId);
      return {
        data: { total_credits: microsToCredits(credits.total), total_usage: microsToCredits(credits.usage) },
      };
    },
  );
}
