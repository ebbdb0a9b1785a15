import type { Feature } from '../platform/feature.ts';
import { everyOn } from '../platform/clock.ts';
import type { EventsDeps } from './deps.ts';
import type { EventRoutesDeps } from './routes/deps.ts';
import { pruneDeliveries } from './prune.ts';
import { createEventsService, subscribeTopupEvents, type EventsService } from './service.ts';
import { adminSurface, userSurface } from './routes/surfaces.ts';
import { registerListRoute } from './routes/list.ts';
import { registerCreateRoute } from './routes/create.ts';
import { registerUpdateRoute } from './routes/update.ts';
import { registerDeleteRoute } from './routes/delete.ts';
import { registerRotateSecretRoute } from './routes/rotate-secret.ts';
import { registerDeliveriesRoute } from './routes/deliveries.ts';
import { registerSendTestRoute } from './routes/send-test.ts';
import { registerLowBalanceRoutes } from './routes/low-balance.ts';

/** Outbound events as the composition root (and tests) use them. */
export interface EventsFeature extends Feature {
  /** Records and sends outbound events (src/events/service.ts). */
  events: EventsService;
}

/**
 * Outbound events: `wallet.low_balance`, `limit.reached`, `wallet.topup_succeeded` and `wallet.topup_failed`,
 * sent with Standard Webhooks signatures to the URLs users (`/api/user/webhooks`) and the operator
 * (`/api/admin/webhooks`) register, from an outbox with retries. Its jobs: the sender
 * (`POST /api/admin/cron/deliver-webhooks`, and each process's `WEBHOOK_DELIVERY_INTERVAL_SECONDS` timer) and
 * the retention sweep (`POST /api/admin/cron/prune-webhook-deliveries`, and each process's
 * `SWEEP_INTERVAL_SECONDS` timer).
 */
export async function createEventsFeature(deps: EventsDeps): Promise<EventsFeature> {
  const events = createEventsService(deps);
  await events.subscriptions.load();
  events.subscriptions.listen((error) => deps.log.error({ err: error }, 'reloading webhook subscriptions failed'));
  deps.billing.observe((event) => events.onBilling(event));
  // Top-ups are built before events (src/service.ts): their successes and failures become wallet.topup_* events.
  subscribeTopupEvents(events, deps.observeTopups);
  const routeDeps: EventRoutesDeps = { ...deps, events };

  return {
    name: 'events',
    events,
    jobs: [
      {
        name: 'deliver-webhooks',
        description:
          'Sends the outbound event deliveries that are due (each attempt claimed atomically; safe in several processes).',
        run: async () => ({ ...(await events.deliver()) }),
      },
      {
        name: 'prune-webhook-deliveries',
        description: 'Deletes outbound event deliveries finished more than 30 days ago, and their events.',
        run: () => pruneDeliveries(deps),
      },
    ],
    register(app) {
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
        for (const register of routes) register(app, routeDeps, surface);
      }
      registerLowBalanceRoutes(app, routeDeps);

      // Close hooks run last-pushed first: the timer stops, then the attempts under way finish (and record
      // their outcome) before the database closes.
      deps.onClose.push(() => events.idle());
      if (deps.config.WEBHOOK_DELIVERY_INTERVAL_SECONDS > 0) {
        const stop = everyOn(deps.clock, deps.config.WEBHOOK_DELIVERY_INTERVAL_SECONDS * 1000, () =>
          events.deliver().catch((error) => deps.log.error({ err: error }, 'webhook delivery run failed')),
        );
        deps.onClose.push(stop);
      }
    },
  };
}
