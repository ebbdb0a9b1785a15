import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { EventRoutesDeps } from './deps.ts';
import { findEndpoint } from '../endpoints.ts';
import { errors } from '../../platform/errors.ts';
import { TEST_EVENT_TYPE } from '../catalogue.ts';
import { IdParams, type Surface } from './surfaces.ts';

/** `POST /api/{user,admin}/webhooks/:id/test`: records a test event for this endpoint and sends it at once. */
export function registerSendTestRoute(app: App, ctx: EventRoutesDeps, surface: Surface): void {
  const { base, tags, security, config } = surface;
  app.post(
    `${base}/:id/test`,
    {
      schema: {
        tags,
        summary: 'Send a test event to a webhook endpoint',
        security,
        params: IdParams,
        description:
          `Records a \`${TEST_EVENT_TYPE}\` event for this endpoint only (whatever it subscribed to, enabled or not) ` +
          'and sends it at once; answers 202 with the delivery to follow in the list.',
        response: { 202: Type.Object({ deliveryId: Type.String(), eventId: Type.String() }) },
      },
      config,
    },
    async (request, reply) => {
      const owner = surface.owner(request);
      const endpoint = await findEndpoint(ctx, owner, (request.params as { id: string }).id);
      const recorded = await ctx.events.emit({
        type: TEST_EVENT_TYPE,
        userId: owner,
        endpointId: endpoint.id,
        data: {
          endpointId: endpoint.id,
          message: 'A test event from Tollgate: this endpoint receives and verifies deliveries.',
        },
      });
      // Null only when the endpoint was deleted in between.
      if (!recorded) throw errors.notFound('Webhook endpoint');
      return reply.code(202).send({ deliveryId: recorded.messageIds[0], eventId: recorded.eventId });
    },
  );
}
