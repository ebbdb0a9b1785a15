import { OPEN } from '../billing/tables.ts';
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
      const open = await ctx.db
        .selectFrom('holds')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('status', '=', OPEN)
        .executeTakeFirst();
      ctx.metrics.holdsOpen.set(Number(open?.count ?? 0));
      return reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
    },
  );
}
