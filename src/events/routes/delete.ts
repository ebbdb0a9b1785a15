import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { EventRoutesDeps } from './deps.ts';
import { deleteEndpoint } from '../endpoints.ts';
import { IdParams, type Surface } from './surfaces.ts';

/** `DELETE /api/{user,admin}/webhooks/:id`: the endpoint and its deliveries go; nothing more is sent to it. */
export function registerDeleteRoute(app: App, ctx: EventRoutesDeps, surface: Surface): void {
  const { base, tags, security, config } = surface;
  app.delete(
    `${base}/:id`,
    {
      schema: {
        tags,
        summary: 'Delete a webhook endpoint and its deliveries',
        security,
        params: IdParams,
        response: { 200: Type.Object({ deleted: Type.Literal(true) }) },
      },
      config,
    },
    async (request) => {
      const owner = surface.owner(request);
      await deleteEndpoint(ctx, owner, (request.params as { id: string }).id);
      await ctx.events.subscriptions.changed(owner);
      return { deleted: true as const };
    },
  );
}
