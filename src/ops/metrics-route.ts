import type { App } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { nonJsonResponse } from '../platform/http/openapi.ts';

/** Prometheus metrics of this process at `/metrics`, for operators only (the operator token). */
export function registerMetricsRoute(app: App, ctx: AppContext): void {
  app.get(
    '/metrics',
    {
      schema: { tags: ['operations'], summary: 'Prometheus metrics (operator token)', security: [{ admin: [] }] },
      config: {
        admin: true,
        documentedResponses: {
          200: nonJsonResponse("The process's metrics in Prometheus' text exposition format (version 0.0.4).", [
            'text/plain',
          ]),
        },
      },
    },
    // Each feature's gauges read what they report at scrape time (billing's open holds from the database).
    async (_request, reply) => reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics()),
  );
}
