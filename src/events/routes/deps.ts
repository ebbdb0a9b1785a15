import type { EventsDeps } from '../deps.ts';
import type { EventsService } from '../service.ts';

/** What the webhook routes use: the feature's deps and its own service. */
export interface EventRoutesDeps extends EventsDeps {
  events: EventsService;
}
