import Type from 'typebox';
import { KeysErrorSchema } from '#wire/errors.ts';
import { ApiKeyCreatedSchema, ApiKeyListSchema, KeyLimitPeriodSchema } from '#wire/keys.ts';
import type { FastifyRequest } from 'fastify';
import type { App } from '../platform/http/server.ts';
import { principalOf, toApiError } from '../platform/http/server.ts';
import type { KeysDeps } from './deps.ts';
import { errors } from '../platform/errors.ts';
import { creditsToMicros, CREDITS_RULE } from '../platform/money.ts';
import { createApiKey, listApiKeys, revokeApiKey, type NewApiKey } from './store.ts';
import type { KeyAuthenticator } from './authenticate.ts';
import {
  KeyFieldSchemas,
  parseExpiresAt,
  parseModels,
  parseName,
  parsePermissions,
  refuseUnknownFields,
  requireWithinScopes,
} from './fields.ts';

const CreateBody = Type.Object(
  {
    name: KeyFieldSchemas.name,
    permissions: KeyFieldSchemas.permissions,
    limit: Type.Optional(KeyFieldSchemas.limit),
    limitPeriod: Type.Optional(
      Type.Union([KeyLimitPeriodSchema, Type.Null()], { description: "Default 'total' (never resets)" }),
    ),
    expiresAt: Type.Optional(KeyFieldSchemas.expiresAt),
    models: Type.Optional(KeyFieldSchemas.models),
  },
  { additionalProperties: false },
);

/** Every error of the key routes, in the contract's §7.1 envelope. */
export const errorResponses = {
  400: KeysErrorSchema,
  401: KeysErrorSchema,
  403: KeysErrorSchema,
  404: KeysErrorSchema,
};
export const security = [{ bearer: [] }];

/**
 * Reads the create body. The contract's two texts (§7.1) come first, name before permissions, so a body
 * missing both is told about the name; then `expiresAt` and `models` (their own texts, not the validator's);
 * everything else the schema checks is reported after them.
 */
function parseCreateBody(request: FastifyRequest, now: number): NewApiKey {
  // JSON only (contract §4.2): a text or form body is refused with 415 by the server before this runs
  // (platform/http/json-only-bodies.ts), not answered as if it had no name.
  const body = (request.body ?? {}) as Record<string, unknown>;
  const name = parseName(body.name, 'API key name is required');
  const permissions = parsePermissions(body.permissions);
  refuseUnknownFields(body, Object.keys(CreateBody.properties));
  const expiresAt = parseExpiresAt(body.expiresAt, now);
  const models = parseModels(body.models);
  if (request.validationError) throw toApiError(request.validationError);

  const limit = body.limit as number | null | undefined;
  const limitMicro = limit === undefined || limit === null ? null : creditsToMicros(limit);
  if (limitMicro === null && typeof limit === 'number')
    throw errors.invalid(`limit must be a number of credits ${CREDITS_RULE}`);
  const period = body.limitPeriod as NewApiKey['limitPeriod'] | undefined;
  if (limitMicro === null && period) throw errors.invalid('limitPeriod needs a limit');
  return {
    name,
    permissions,
    limitMicro,
    limitPeriod: limitMicro === null ? null : (period ?? 'total'),
    expiresAt,
    models,
  };
}

/** `GET`, `POST /api/user/api-keys` and `DELETE /api/user/api-keys/:id` (contract §4.1–4.3, §7.1). */
export function registerKeyRoutes(app: App, ctx: KeysDeps, keyAuth: KeyAuthenticator): void {
  app.get(
    '/api/user/api-keys',
    {
      schema: {
        tags: ['api-keys'],
        summary: "List the user's API keys",
        security,
        description: "An app's token sees only the keys that app created; the dashboard sees all of the user's keys.",
        response: {
          200: ApiKeyListSchema,
          ...errorResponses,
        },
      },
      config: { auth: ['apikeys:read'], envelope: 'keys' },
    },
    async (request) => ({
      success: true as const,
      apiKeys: await listApiKeys(ctx.db, ctx.secrets.encryptionKey, principalOf(request), ctx.billing),
    }),
  );

  app.post(
    '/api/user/api-keys',
    {
      schema: {
        tags: ['api-keys'],
        summary: 'Create an API key',
        security,
        description:
          "Answers 200 with `success: true`. The permissions must lie within the calling token's scopes (403 otherwise). `limit` (credits) and `limitPeriod` set an optional spending limit for the key; `expiresAt` an optional expiry, from which the key is refused (401) while it stays listed until revoked; `models` the models it may call (403 for another; every model when absent). The answer keeps the contract's five fields: the list shows the limit, expiry and models.",
        body: CreateBody,
        response: { 200: ApiKeyCreatedSchema, ...errorResponses },
      },
      // Validation is attached, not thrown: the handler answers with the contract's exact texts, and only
      // after authentication, so an anonymous caller learns nothing from a body.
      attachValidation: true,
      config: { auth: ['apikeys:write'], envelope: 'keys' },
    },
    async (request) => {
      const principal = principalOf(request);
      const input = parseCreateBody(request, ctx.clock.now());
      requireWithinScopes(principal, input.permissions);
      return {
        success: true as const,
        apiKey: await createApiKey(
          ctx.db,
          ctx.clock,
          ctx.secrets.encryptionKey,
          principal,
          input,
          ctx.billing,
          ctx.dialect,
        ),
      };
    },
  );

  app.delete(
    '/api/user/api-keys/:id',
    {
      schema: {
        tags: ['api-keys'],
        summary: 'Revoke an API key',
        security,
        description: "The key stops working at once. Another user's key, or for an app another app's key, is a 404.",
        params: Type.Object({ id: Type.String() }),
        response: { 200: Type.Object({ success: Type.Literal(true) }), ...errorResponses },
      },
      config: { auth: ['apikeys:write'], envelope: 'keys' },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      if (!(await revokeApiKey(ctx.db, ctx.clock, principalOf(request), id))) throw errors.notFound('API key');
      keyAuth.forget(id);
      return { success: true as const };
    },
  );
}
