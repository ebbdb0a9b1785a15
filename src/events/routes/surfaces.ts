import Type from 'typebox';
import type { FastifyContextConfig, FastifyRequest } from 'fastify';
import { principalOf } from '../../platform/http/server.ts';
import { errors } from '../../platform/errors.ts';
import { EVENT_TYPES } from '../catalogue.ts';
import type { Owner } from '../endpoints.ts';

/**
 * The two places endpoints are managed, sharing one set of routes: the user's (`/api/user/webhooks`, their
 * own events) and the operator's (`/api/admin/webhooks`, every user's events). Each route asks its surface
 * whose endpoints the caller manages, and sees only those: anyone else's endpoint is a 404.
 */
export interface Surface {
  base: string;
  tags: string[];
  security: Array<Record<string, string[]>>;
  config: FastifyContextConfig;
  /** Whose endpoints the caller manages; throws when the caller may not manage any. */
  owner(request: FastifyRequest): Owner;
}

/**
 * The user's surface. Security decision: only the dashboard session may manage webhooks. No OAuth scope
 * covers them, and least privilege gives an app's token or an API key (even with `write`) no way to send a
 * user's events to a URL of its choosing: 403 for them.
 */
export const userSurface: Surface = {
  base: '/api/user/webhooks',
  tags: ['webhooks'],
  security: [{ bearer: [] }],
  config: { auth: [] },
  owner(request) {
    const principal = principalOf(request);
    if (principal.kind !== 'session')
      throw errors.forbidden(
        'Webhooks can only be managed from the dashboard (a signed-in session); no app scope grants it.',
      );
    return principal.userId;
  },
};

/** The operator's surface: endpoints that receive every user's events. */
export const adminSurface: Surface = {
  base: '/api/admin/webhooks',
  tags: ['admin', 'webhooks'],
  security: [{ admin: [] }],
  config: { admin: true },
  owner: () => null,
};

const IsoDate = Type.String({ format: 'date-time' });

export const EventTypeSchema = Type.Enum(EVENT_TYPES);

export const EndpointSchema = Type.Object({
  id: Type.String({ examples: ['wep_3kT9xQ2mN7pR4sV8wY1z'] }),
  url: Type.String(),
  eventTypes: Type.Array(Type.String(), { description: 'The event types sent to it.' }),
  enabled: Type.Boolean(),
  scope: Type.Union([Type.Literal('user'), Type.Literal('operator')], {
    description: "`user`: the owner's events; `operator`: every user's.",
  }),
  createdAt: IsoDate,
  updatedAt: IsoDate,
});

export const SecretSchema = Type.String({
  pattern: '^whsec_',
  description: 'The Standard Webhooks signing secret; shown only now.',
});

export const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

export const EndpointInputSchema = {
  url: Type.String({
    minLength: 1,
    maxLength: 2048,
    description: 'Where events are POSTed: https:// (and a public address) unless the operator allows otherwise.',
  }),
  eventTypes: Type.Array(EventTypeSchema, {
    minItems: 1,
    maxItems: EVENT_TYPES.length,
    description: 'Default: every type.',
  }),
  enabled: Type.Boolean({ description: 'Default true.' }),
};
