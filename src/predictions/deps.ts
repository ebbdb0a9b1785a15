import type { MeteringDeps } from '../billing/deps.ts';
import type { ProvidersConfig } from '../providers/config.ts';
import type { PredictionsConfig } from './config.ts';

/** What predictions are built from: metering, and the providers' (Replicate's) and their own config sections. */
export interface PredictionsDeps extends MeteringDeps {
  config: MeteringDeps['config'] & ProvidersConfig & PredictionsConfig;
}
