import { countOpenHolds } from '../billing/reports.ts';
import type { App } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';

/** Prometheus metrics of this process at `/metrics`, for operators only (the operator token). */
export function registerMetricsRoute(app: App, ctx: AppContext): void {
  app.get(
    '/metrics',
    {
      schema: { tags: ['operations'], summary: 'Prometheus metrics (operator token)', security: [{ admin: [] }] },
      config: { admin: true },
    },
    async (_request, reply) => {
      // Read at scrape time from the database, so every instance reports the whole deployment's open holds.
      ctx.metrics.holdsOpen.set(await countOpenHolds(ctx.db));
      return reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
    },
  );
}
