import type { Feature } from '../platform/feature.ts';
import { topupsMigrations } from './migrations.ts';
import { createTopups } from './service.ts';
import { loadStripe } from './settings.ts';
import { registerTopupRoutes } from './routes/topups.ts';
import { registerAutoTopupRoutes } from './routes/auto-topup.ts';
import { registerStripeWebhook } from './routes/stripe-webhook.ts';

/**
 * Self-serve top-ups through Stripe: Checkout, auto top-up, and the webhook that credits, refunds and
 * disputes (through billing). Puts the {@link Topups} service at `ctx.services.topups`.
 */
export const topupsFeature: Feature = {
  name: 'topups',
  migrations: topupsMigrations,
  async register(app, ctx) {
    const StripeClass = await loadStripe(ctx.config);
    ctx.services.topups = createTopups(ctx, StripeClass);
    if (!ctx.services.topups.settings.enabled)
      ctx.log.info('Top-ups are off: STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are not both set.');
    registerTopupRoutes(app, ctx);
    registerAutoTopupRoutes(app, ctx);
    await registerStripeWebhook(app, ctx, StripeClass);
  },
};
