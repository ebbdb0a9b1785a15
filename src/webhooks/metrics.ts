import { Counter, type Registry } from 'prom-client';

/** The inbound webhooks' metrics: deliveries by outcome. */
export function createWebhookMetrics(registry: Registry) {
  return {
    webhookDeliveries: new Counter({
      name: 'tollgate_webhook_deliveries_total',
      help: 'Inbound webhook deliveries by outcome.',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
}

/** The inbound webhooks' metrics of a service. */
export type WebhookMetrics = ReturnType<typeof createWebhookMetrics>;
