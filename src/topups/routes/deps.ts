import type { TopupsDeps } from '../deps.ts';
import type { Topups } from '../service.ts';

/** What the top-up routes use: the feature's deps and its own service. */
export interface TopupRoutesDeps extends TopupsDeps {
  topups: Topups;
}
