import type { Feature } from '../platform/feature.ts';
import type { PredictionsDeps } from './deps.ts';
import { registerPredictionRoutes } from './routes.ts';
import { reconcilePredictionsJob } from './reconcile.ts';

/**
 * Replicate-style asynchronous predictions: `POST /api/v1/predictions`, `GET /api/v1/predictions/:id`, the
 * Replicate adapter and the `reconcile-predictions` job. The webhook that finalizes them is in `webhooks/`.
 */
export function createPredictionsFeature(deps: PredictionsDeps): Feature {
  return {
    name: 'predictions',
    jobs: [reconcilePredictionsJob(deps)],
    register(app) {
      registerPredictionRoutes(app, deps);
    },
  };
}
