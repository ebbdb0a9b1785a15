import type { Feature } from '../platform/feature.ts';
import type { WebhooksDeps } from './deps.ts';
import { registerReplicateWebhook } from './replicate.ts';
import { createWebhookMetrics } from './metrics.ts';

/** Inbound provider webhooks: `POST /api/webhooks/replicate`, verified (Standard Webhooks) and idempotent. */
export function createWebhooksFeature(deps: WebhooksDeps): Feature {
  const metrics = createWebhookMetrics(deps.metrics.registry);
  return { name: 'webhooks', register: (app) => registerReplicateWebhook(app, deps, metrics) };
}
