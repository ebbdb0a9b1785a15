import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { EventRoutesDeps } from './deps.ts';
import { endpointView, listEndpoints } from '../endpoints.ts';
import { EndpointSchema, type Surface } from './surfaces.ts';

/** `GET /api/{user,admin}/webhooks`: the caller's endpoints, oldest first, without their secrets. */
export function registerListRoute(app: App, ctx: EventRoutesDeps, surface: Surface): void {
  const { base, tags, security, config } = surface;
  app.get(
    base,
    {
      schema: {
        tags,
        summary: 'List webhook endpoints',
        security,
        response: { 200: Type.Object({ webhooks: Type.Array(EndpointSchema) }) },
      },
      config,
    },
    async (request) => ({ webhooks: (await listEndpoints(ctx, surface.owner(request))).map(endpointView) }),
  );
}
