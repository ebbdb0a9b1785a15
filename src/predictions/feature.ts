import type { Feature } from '../platform/feature.ts';
import { predictionsMigrations } from './migrations.ts';
import { registerPredictionRoutes } from './routes.ts';
import { reconcilePredictionsJob } from './reconcile.ts';

/**
 * Replicate-style asynchronous predictions: `POST /api/v1/predictions`, `GET /api/v1/predictions/:id`, the
 * Replicate adapter and the `reconcile-predictions` job. The webhook that finalizes them is in `webhooks/`.
 */
export const predictionsFeature: Feature = {
  name: 'predictions',
  migrations: predictionsMigrations,
  jobs: [reconcilePredictionsJob],
  register(app, ctx) {
    registerPredictionRoutes(app, ctx);
  },
};
