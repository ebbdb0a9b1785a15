import type { Feature } from '../platform/feature.ts';
import { webhooksMigrations } from './migrations.ts';
import { registerReplicateWebhook } from './replicate.ts';

/** Inbound provider webhooks: `POST /api/webhooks/replicate`, verified (Standard Webhooks) and idempotent. */
export const webhooksFeature: Feature = {
  name: 'webhooks',
  migrations: webhooksMigrations,
  register: (app, ctx) => registerReplicateWebhook(app, ctx),
};
