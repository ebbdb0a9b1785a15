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
  if (!topups.settings.enabled) {
    // One of the two set is a setup left half done (the webhook's secret forgotten): said as a warning that
    // names the missing one, where an info line among the start's went unseen.
    const { STRIPE_SECRET_KEY: key, STRIPE_WEBHOOK_SECRET: secret } = deps.config;
    if (key || secret) {
      const [set, missing] = key
        ? ['STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET']
        : ['STRIPE_WEBHOOK_SECRET', 'STRIPE_SECRET_KEY'];
      deps.log.warn(
        `Top-ups are off: ${set} is set but ${missing} is not; top-ups need both (see the README, "Top-ups").`,
      );
    } else deps.log.info('Top-ups are off: STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are not set.');
  }
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
