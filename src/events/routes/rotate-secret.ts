import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { EventRoutesDeps } from './deps.ts';
import { rotateSecret } from '../endpoints.ts';
import { IdParams, SecretSchema, type Surface } from './surfaces.ts';

/** `POST /api/{user,admin}/webhooks/:id/rotate-secret`: a new secret, shown once; the old one overlaps a day. */
export function registerRotateSecretRoute(app: App, ctx: EventRoutesDeps, surface: Surface): void {
  const { base, tags, security, config } = surface;
  app.post(
    `${base}/:id/rotate-secret`,
    {
      schema: {
        tags,
        summary: "Rotate a webhook endpoint's signing secret",
        security,
        params: IdParams,
        description:
          'Returns the new secret, shown only now. Deliveries are signed with both the new and the old secret (two `v1,` entries) for 24 hours.',
        response: {
          200: Type.Object({ secret: SecretSchema, previousValidUntil: Type.String({ format: 'date-time' }) }),
        },
      },
      config,
    },
    async (request) => rotateSecret(ctx, surface.owner(request), (request.params as { id: string }).id),
  );
}
