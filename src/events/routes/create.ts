import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { EventRoutesDeps } from './deps.ts';
import { createEndpoint, endpointView, type EndpointInput } from '../endpoints.ts';
import { EndpointInputSchema, EndpointSchema, SecretSchema, type Surface } from './surfaces.ts';

/**
 * `POST /api/{user,admin}/webhooks`: registers an endpoint; its secret is in this answer and nowhere after.
 * The change is announced on the bus, so every instance's settle path knows at once who receives events.
 */
export function registerCreateRoute(app: App, ctx: EventRoutesDeps, surface: Surface): void {
  const { base, tags, security, config } = surface;
  app.post(
    base,
    {
      schema: {
        tags,
        summary: 'Register a webhook endpoint',
        security,
        description:
          'Answers 201 with the endpoint and its signing secret (`whsec_…`), shown only this once. ' +
          'A URL that is not https:// or resolves to a private address is a 400 `WEBHOOK_URL_REFUSED`.',
        body: Type.Object(
          {
            url: EndpointInputSchema.url,
            eventTypes: Type.Optional(EndpointInputSchema.eventTypes),
            enabled: Type.Optional(EndpointInputSchema.enabled),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Object({ webhook: EndpointSchema, secret: SecretSchema }) },
      },
      config,
    },
    async (request, reply) => {
      const owner = surface.owner(request);
      const { row, secret } = await createEndpoint(ctx, owner, request.body as EndpointInput & { url: string });
      await ctx.events.subscriptions.changed(owner);
      return reply.code(201).send({ webhook: endpointView(row), secret });
    },
  );
}
