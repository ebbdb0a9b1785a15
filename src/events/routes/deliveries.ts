import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { EventRoutesDeps } from './deps.ts';
import { findEndpoint } from '../endpoints.ts';
import { eventsDb, type WebhookMessagesTable } from '../schema.ts';
import type { Selectable } from 'kysely';
import { IdParams, type Surface } from './surfaces.ts';

const IsoOrNull = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

const DeliverySchema = Type.Object({
  id: Type.String({ description: 'The `webhook-id` header of every attempt.', examples: ['msg_3kT9xQ2mN7pR4sV8wY1z'] }),
  eventId: Type.String(),
  type: Type.String({ description: 'The event type.' }),
  status: Type.Union([
    Type.Literal('pending'),
    Type.Literal('sending'),
    Type.Literal('delivered'),
    Type.Literal('failed'),
  ]),
  attempts: Type.Integer(),
  nextAttemptAt: IsoOrNull,
  lastAttemptAt: IsoOrNull,
  lastStatusCode: Type.Union([Type.Integer(), Type.Null()], {
    description: "The receiver's last HTTP status; null when it did not answer.",
  }),
  lastError: Type.Union([Type.String(), Type.Null()], {
    description: 'Why the last attempt got no answer (timeout, refused address…).',
  }),
  lastResponseExcerpt: Type.Union([Type.String(), Type.Null()], {
    description: "The first 200 characters of the receiver's last answer.",
  }),
  deliveredAt: IsoOrNull,
  createdAt: Type.String({ format: 'date-time' }),
});

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function deliveryView(row: Selectable<WebhookMessagesTable> & { type: string }) {
  return {
    id: row.id,
    eventId: row.event_id,
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.status === 'pending' ? iso(row.next_attempt_at) : null,
    lastAttemptAt: iso(row.last_attempt_at),
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    lastResponseExcerpt: row.last_response_excerpt,
    deliveredAt: iso(row.delivered_at),
    createdAt: iso(row.created_at)!,
  };
}

/** `GET /api/{user,admin}/webhooks/:id/deliveries`: an endpoint's deliveries, newest first, with their status. */
export function registerDeliveriesRoute(app: App, ctx: EventRoutesDeps, surface: Surface): void {
  const { base, tags, security, config } = surface;

  app.get(
    `${base}/:id/deliveries`,
    {
      schema: {
        tags,
        summary: "A webhook endpoint's deliveries, newest first, with their status and attempts",
        security,
        params: IdParams,
        querystring: Type.Object({
          limit: Type.Optional(
            Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Deliveries to list, 1 to 100 (default 50).' }),
          ),
        }),
        response: { 200: Type.Object({ deliveries: Type.Array(DeliverySchema) }) },
      },
      config,
    },
    async (request) => {
      const endpoint = await findEndpoint(ctx, surface.owner(request), (request.params as { id: string }).id);
      const limit = Number((request.query as { limit?: string }).limit ?? 50);
      const rows = await eventsDb(ctx.db)
        .selectFrom('webhook_messages as m')
        .innerJoin('webhook_events as e', 'e.id', 'm.event_id')
        .selectAll('m')
        .select('e.type')
        .where('m.endpoint_id', '=', endpoint.id)
        .orderBy('m.created_at', 'desc')
        .orderBy('m.id', 'desc')
        .limit(limit)
        .execute();
      return { deliveries: rows.map(deliveryView) };
    },
  );
}
