import type { Feature } from '../platform/feature.ts';
import type { Job } from '../platform/jobs.ts';
import { everyOn } from '../platform/clock.ts';
import { eventsMigrations } from './migrations.ts';
import { pruneDeliveries } from './prune.ts';
import { createEventsService, subscribeTopupEvents } from './service.ts';
import { adminSurface, userSurface } from './routes/surfaces.ts';
import { registerListRoute } from './routes/list.ts';
import { registerCreateRoute } from './routes/create.ts';
import { registerUpdateRoute } from './routes/update.ts';
import { registerDeleteRoute } from './routes/delete.ts';
import { registerRotateSecretRoute } from './routes/rotate-secret.ts';
import { registerDeliveriesRoute } from './routes/deliveries.ts';
import { registerSendTestRoute } from './routes/send-test.ts';
import { registerLowBalanceRoutes } from './routes/low-balance.ts';

/** The sender: `POST /api/admin/cron/deliver-webhooks`, and each process's `WEBHOOK_DELIVERY_INTERVAL_SECONDS` timer. */
export const deliverWebhooksJob: Job = {
  name: 'deliver-webhooks',
  description:
    'Sends the outbound event deliveries that are due (each attempt claimed atomically; safe in several processes).',
  run: async (ctx) => ({ ...(await ctx.services.events.deliver()) }),
};

/** The retention sweep: `POST /api/admin/cron/prune-webhook-deliveries`, and each process's `SWEEP_INTERVAL_SECONDS` timer. */
export const pruneWebhookDeliveriesJob: Job = {
  name: 'prune-webhook-deliveries',
  description: 'Deletes outbound event deliveries finished more than 30 days ago, and their events.',
  run: (ctx) => pruneDeliveries(ctx),
};

/**
 * Outbound events: `wallet.low_balance`, `limit.reached`, `wallet.topup_succeeded` and `wallet.topup_failed`,
 * sent with Standard Webhooks signatures to the URLs users (`/api/user/webhooks`) and the operator
 * (`/api/admin/webhooks`) register, from an outbox with retries. Puts the service at `ctx.services.events`.
 */
export const eventsFeature: Feature = {
  name: 'events',
  migrations: eventsMigrations,
  jobs: [deliverWebhooksJob, pruneWebhookDeliveriesJob],
  async register(app, ctx) {
    const events = createEventsService(ctx);
    ctx.services.events = events;
    await events.subscriptions.load();
    events.subscriptions.listen((error) => ctx.log.error({ err: error }, 'reloading webhook subscriptions failed'));
    ctx.services.billing.observe((event) => events.onBilling(event));
    // Top-ups register before events (src/features.ts): their successes and failures become wallet.topup_* events.
    subscribeTopupEvents(events, ctx.services.topups.observe);

    for (const surface of [userSurface, adminSurface]) {
      const routes = [
        registerListRoute,
        registerCreateRoute,
        registerUpdateRoute,
        registerDeleteRoute,
        registerRotateSecretRoute,
        registerDeliveriesRoute,
        registerSendTestRoute,
      ];
      for (const register of routes) register(app, ctx, surface);
    }
    registerLowBalanceRoutes(app, ctx);

    // Close hooks run last-pushed first: the timer stops, then the attempts under way finish (and record
    // their outcome) before the database closes.
    ctx.onClose.push(() => events.idle());
    if (ctx.config.WEBHOOK_DELIVERY_INTERVAL_SECONDS > 0) {
      const stop = everyOn(ctx.clock, ctx.config.WEBHOOK_DELIVERY_INTERVAL_SECONDS * 1000, () =>
        events.deliver().catch((error) => ctx.log.error({ err: error }, 'webhook delivery run failed')),
      );
      ctx.onClose.push(stop);
    }
  },
};
