import type { PredictionsDeps } from '../predictions/deps.ts';
import type { WebhooksConfig } from './config.ts';

/** What the inbound webhooks are built from: what predictions use (they finalize them), and their own section. */
export interface WebhooksDeps extends PredictionsDeps {
  config: PredictionsDeps['config'] & WebhooksConfig;
}
