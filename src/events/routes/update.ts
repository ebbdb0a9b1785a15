import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { EventRoutesDeps } from './deps.ts';
import { endpointView, updateEndpoint, type EndpointInput } from '../endpoints.ts';
import { EndpointInputSchema, EndpointSchema, IdParams, type Surface } from './surfaces.ts';

/** `PATCH /api/{user,admin}/webhooks/:id`: changes the URL (checked again), the event types or enabled. */
export function registerUpdateRoute(app: App, ctx: EventRoutesDeps, surface: Surface): void {
  const { base, tags, security, config } = surface;
  app.patch(
    `${base}/:id`,
    {
      schema: {
        tags,
        summary: 'Change a webhook endpoint (URL, event types, enabled)',
        security,
        params: IdParams,
        body: Type.Object(
          {
            url: Type.Optional(EndpointInputSchema.url),
            eventTypes: Type.Optional(EndpointInputSchema.eventTypes),
            enabled: Type.Optional(EndpointInputSchema.enabled),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ webhook: EndpointSchema }) },
      },
      config,
    },
    async (request) => {
      const owner = surface.owner(request);
      const row = await updateEndpoint(
        ctx,
        owner,
        (request.params as { id: string }).id,
        request.body as EndpointInput,
      );
      await ctx.events.subscriptions.changed(owner);
      return { webhook: endpointView(row) };
    },
  );
}
