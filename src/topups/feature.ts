import type { Feature } from '../platform/feature.ts';
import type { TopupsDeps } from './deps.ts';
import { createTopups, type Topups } from './service.ts';
import { loadStripe } from './settings.ts';
import { registerTopupRoutes } from './routes/topups.ts';
import { registerAutoTopupRoutes } from './routes/auto-topup.ts';
import { registerStripeWebhook } from './routes/stripe-webhook.ts';

/** Top-ups as the features built after it use them. */
export interface TopupsFeature extends Feature {
  /** Checkout, auto top-up and the Stripe webhook's events (src/topups/service.ts). */
  topups: Topups;
}

/**
 * Self-serve top-ups through Stripe: Checkout, auto top-up, and the webhook that credits, refunds and
 * disputes (through billing).
 */
export async function createTopupsFeature(deps: TopupsDeps): Promise<TopupsFeature> {
  const StripeClass = await loadStripe(deps.config);
  const topups = createTopups(deps, StripeClass);
  if (!topups.settings.enabled)
    deps.log.info('Top-ups are off: STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are not both set.');
  const routes = { ...deps, topups };
  return {
    name: 'topups',
    topups,
    jobs: topups.jobs,
    async register(app) {
      registerTopupRoutes(app, routes);
      registerAutoTopupRoutes(app, routes);
      await registerStripeWebhook(app, routes, StripeClass);
    },
  };
}
