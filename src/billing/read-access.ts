import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { principalOf } from '../platform/http/server.ts';
import { requireScope } from '../platform/http/principal.ts';

/**
 * A route hook for OpenRouter's account reads (`GET /api/v1/credits`, `GET /api/v1/generation`): any API key of
 * the user may read them, as on OpenRouter, whatever its permissions (its holder can already spend under it and
 * read the key's own spend); an app's OAuth token needs `billing:read`, or it is the 403 every billing read
 * answers. Declared with `config.auth: []` (any credential), it runs after authentication and before the query
 * is validated, so a caller without the scope learns nothing from a validation error.
 */
export function anyKeyOrBillingRead(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  try {
    const principal = principalOf(request);
    if (principal.kind !== 'api_key') requireScope(principal, ['billing:read']);
  } catch (error) {
    return done(error as Error);
  }
  done();
}
