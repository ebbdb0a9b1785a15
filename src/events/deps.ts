import type { AppContext } from '../platform/context.ts';
import type { Billing } from '../billing/service.ts';
import type { EventsService, TopupEvent } from './service.ts';

/**
 * What the events feature is built from: the platform, billing (balances, and its observer: low balance and
 * limits reached) and the top-ups' observer (`wallet.topup_*`).
 */
export interface EventsDeps extends AppContext {
  billing: Billing;
  observeTopups(listener: (event: TopupEvent) => void): void;
}

/** What the webhook routes use: the feature's deps and its own service. */
export interface EventRoutesDeps extends EventsDeps {
  events: EventsService;
}
