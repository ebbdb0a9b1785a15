import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { AppContext } from '../../platform/context.ts';
import { createEndpoint, deleteEndpoint, endpointView, listEndpoints, rotateSecret, updateEndpoint, type EndpointInput } from '../endpoints.ts';
import { EndpointInputSchema, EndpointSchema, IdParams, SecretSchema, type Surface } from './surfaces.ts';

/**
 * List, create, update, delete an endpoint and rotate its secret, on one surface (user or operator).
 * A change is announced on the bus, so every instance's settle path knows at once who receives events.
 */
export function registerEndpointRoutes(app: App, ctx: AppContext, surface: Surface): void {
  const { base, tags, security, config } = surface;
  const announce = (owner: string | null) => ctx.services.events.subscriptions.changed(owner);

  app.get(base, {
    schema: { tags, summary: 'List webhook endpoints', security, response: { 200: Type.Object({ webhooks: Type.Array(EndpointSchema) }) } },
    config,
  }, async (request) => ({ webhooks: (await listEndpoints(ctx, surface.owner(request))).map(endpointView) }));

  app.post(base, {
    schema: {
      tags, summary: 'Register a webhook endpoint', security,
      description: 'Answers 201 with the endpoint and its signing secret (`whsec_…`), shown only this once. A URL that is not https:// or resolves to a private address is a 400 `WEBHOOK_URL_REFUSED`.',
      body: Type.Object({ url: EndpointInputSchema.url, eventTypes: Type.Optional(EndpointInputSchema.eventTypes), enabled: Type.Optional(EndpointInputSchema.enabled) }, { additionalProperties: false }),
      response: { 201: Type.Object({ webhook: EndpointSchema, secret: SecretSchema }) },
    },
    config,
  }, async (request, reply) => {
    const owner = surface.owner(request);
    const { row, secret } = await createEndpoint(ctx, owner, request.body as EndpointInput & { url: string });
    await announce(owner);
    return reply.code(201).send({ webhook: endpointView(row), secret });
  });

  app.patch(`${base}/:id`, {
    schema: {
      tags, summary: 'Change a webhook endpoint (URL, event types, enabled)', security, params: IdParams,
      body: Type.Object({ url: Type.Optional(EndpointInputSchema.url), eventTypes: Type.Optional(EndpointInputSchema.eventTypes), enabled: Type.Optional(EndpointInputSchema.enabled) }, { additionalProperties: false }),
      response: { 200: Type.Object({ webhook: EndpointSchema }) },
    },
    config,
  }, async (request) => {
    const owner = surface.owner(request);
    const row = await updateEndpoint(ctx, owner, (request.params as { id: string }).id, request.body as EndpointInput);
    await announce(owner);
    return { webhook: endpointView(row) };
  });

  app.delete(`${base}/:id`, {
    schema: { tags, summary: 'Delete a webhook endpoint and its deliveries', security, params: IdParams, response: { 200: Type.Object({ deleted: Type.Literal(true) }) } },
    config,
  }, async (request) => {
    const owner = surface.owner(request);
    await deleteEndpoint(ctx, owner, (request.params as { id: string }).id);
    await announce(owner);
    return { deleted: true as const };
  });

  app.post(`${base}/:id/rotate-secret`, {
    schema: {
      tags, summary: "Rotate a webhook endpoint's signing secret", security, params: IdParams,
      description: 'Returns the new secret, shown only now. Deliveries are signed with both the new and the old secret (two `v1,` entries) for 24 hours.',
      response: { 200: Type.Object({ secret: SecretSchema, previousValidUntil: Type.String({ format: 'date-time' }) }) },
    },
    config,
  }, async (request) => rotateSecret(ctx, surface.owner(request), (request.params as { id: string }).id));
}
