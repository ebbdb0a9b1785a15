import Type from 'typebox';
import { KeysErrorSchema } from '#wire/errors.ts';
import { ApiKeyCreatedSchema, ApiKeyListSchema, KeyLimitPeriodSchema } from '#wire/keys.ts';
import type { FastifyRequest } from 'fastify';
import type { App } from '../platform/http/server.ts';
import { principalOf, toApiError } from '../platform/http/server.ts';
import type { KeysDeps } from './deps.ts';
import type { Principal } from '../platform/http/principal.ts';
import { KEY_PERMISSIONS } from './permissions.ts';
import { errors } from '../platform/errors.ts';
import { creditsToMicros, CREDITS_RULE } from '../platform/money.ts';
import { createApiKey, listApiKeys, revokeApiKey, type NewApiKey } from './store.ts';
import type { KeyAuthenticator } from './authenticate.ts';
import { isModelEntry, MAX_KEY_MODEL_LENGTH, MAX_KEY_MODELS, MODEL_ENTRY_RULE } from '../models/allowed.ts';

const NAME_MAX_LENGTH = 100;

/** How far ahead a key's expiry may be set: 10 years (3,653 days, leap days included). */
export const MAX_KEY_LIFETIME_MS = 3653 * 86_400_000;
const MAX_KEY_LIFETIME_TEXT = '10 years';

/** RFC 3339 (ISO 8601 with seconds and a time zone): the only form `expiresAt` takes, so no time is guessed. */
const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/i;
const TIMESTAMP_RULE = 'an ISO 8601 timestamp with seconds and a time zone, such as 2027-01-31T00:00:00Z';

const Permission = Type.Enum(KEY_PERMISSIONS, { description: 'Contract §5.3' });
const ModelEntry = Type.String({ maxLength: MAX_KEY_MODEL_LENGTH, examples: ['openai/gpt-4o-mini', 'anthropic/*'] });
const CreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH, description: 'A descriptive name' }),
    permissions: Type.Array(Permission, { minItems: 1 }),
    limit: Type.Optional(
      Type.Union([Type.Number({ minimum: 0, description: 'Credits, at most 6 decimals' }), Type.Null()]),
    ),
    limitPeriod: Type.Optional(
      Type.Union([KeyLimitPeriodSchema, Type.Null()], { description: "Default 'total' (never resets)" }),
    ),
    expiresAt: Type.Optional(
      Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description: `When the key stops authenticating: ${TIMESTAMP_RULE}, in the future and at most ${MAX_KEY_LIFETIME_TEXT} ahead. Null or absent: never`,
      }),
    ),
    models: Type.Optional(
      Type.Union([Type.Array(ModelEntry, { maxItems: MAX_KEY_MODELS }), Type.Null()], {
        description: `The models the key may call: up to ${MAX_KEY_MODELS} entries, each ${MODEL_ENTRY_RULE} (a deeper prefix such as openrouter/anthropic/* too). Not checked against the catalogue: an entry that matches no model allows nothing. Another model is a 403 PERMISSION_DENIED on every call, is left out of GET /api/v1/models, and is never tried as a fallback. Null, absent or empty: every model. Fixed at creation`,
      }),
    ),
  },
  { additionalProperties: false },
);

/** Every error of these routes, in the contract's §7.1 envelope. */
const errorResponses = { 400: KeysErrorSchema, 401: KeysErrorSchema, 403: KeysErrorSchema, 404: KeysErrorSchema };
const security = [{ bearer: [] }];

/**
 * An `expiresAt` as epoch ms: null when absent or null; a 400 saying what to send when it is not a real
 * timestamp (with its time zone), has passed (or is `now`), or lies more than {@link MAX_KEY_LIFETIME_MS} ahead.
 */
function parseExpiresAt(value: unknown, now: number): number | null {
  if (value === undefined || value === null) return null;
  const match = typeof value === 'string' ? TIMESTAMP.exec(value) : null;
  const at = match ? Date.parse(value as string) : NaN;
  // Date.parse rolls 30 February over into March: a day the month does not have is refused, not moved.
  const [, year, month, day] = match ?? [];
  const realDay =
    match !== null && new Date(Date.UTC(Number(year), Number(month) - 1, Number(day))).getUTCDate() === Number(day);
  if (!realDay || Number.isNaN(at)) throw errors.invalid(`expiresAt must be ${TIMESTAMP_RULE}`);
  if (at <= now) {
    throw errors.invalid(
      `expiresAt must be in the future: ${new Date(at).toISOString()} has passed (it is now ${new Date(now).toISOString()})`,
    );
  }
  if (at - now > MAX_KEY_LIFETIME_MS) {
    throw errors.invalid(
      `expiresAt must be at most ${MAX_KEY_LIFETIME_TEXT} ahead (no later than ${new Date(now + MAX_KEY_LIFETIME_MS).toISOString()}); leave it out for a key that never expires`,
    );
  }
  return at;
}

/**
 * A `models` as stored: null when absent, null or empty (every model); else its distinct entries in the order given.
 * A 400 names the first entry that is neither a model id nor a wildcard, and says so when there are too many.
 */
function parseModels(value: unknown): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value))
    throw errors.invalid(`models must be an array of model ids or vendor wildcards (such as ["openai/*"]), or null`);
  if (value.length > MAX_KEY_MODELS)
    throw errors.invalid(
      `models holds ${value.length} entries; a key takes at most ${MAX_KEY_MODELS} (a vendor wildcard such as "openai/*" covers a vendor's every model)`,
    );
  value.forEach((entry, index) => {
    if (!isModelEntry(entry))
      throw errors.invalid(
        `models[${index}] ${JSON.stringify(entry)} is not ${MODEL_ENTRY_RULE}, of at most ${MAX_KEY_MODEL_LENGTH} characters`,
      );
  });
  return value.length === 0 ? null : [...new Set(value as string[])];
}

/**
 * Reads the create body. The contract's two texts (§7.1) come first, name before permissions, so a body
 * missing both is told about the name; then `expiresAt` and `models` (their own texts, not the validator's);
 * everything else the schema checks is reported after them.
 */
function parseCreateBody(request: FastifyRequest, now: number): NewApiKey {
  // JSON only (contract §4.2): a text or form body is refused with 415 by the server before this runs
  // (platform/http/json-only-bodies.ts), not answered as if it had no name.
  const body = (request.body ?? {}) as Record<string, unknown>;
  const name = typeof body.name === 'string' ? body.name.trim() : '';
  if (name === '') throw errors.invalid('API key name is required');
  const permissions = body.permissions;
  if (!Array.isArray(permissions) || permissions.length === 0)
    throw errors.invalid('At least one permission is required');
  for (const permission of permissions) {
    if (!(KEY_PERMISSIONS as readonly unknown[]).includes(permission)) {
      throw errors.invalid(
        `Unknown permission ${JSON.stringify(permission)}; a key can carry ${KEY_PERMISSIONS.join(', ')}`,
      );
    }
  }
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
    permissions: [...new Set(permissions as string[])],
    limitMicro,
    limitPeriod: limitMicro === null ? null : (period ?? 'total'),
    expiresAt,
    models,
  };
}

/** Security invariant: a token cannot mint a key that does more than the token itself may. */
function requireWithinScopes(principal: Principal, permissions: readonly string[]): void {
  const beyond = permissions.filter((permission) => !principal.scopes.has(permission));
  if (beyond.length > 0) {
    throw errors.forbidden(
      `This token cannot grant ${beyond.map((p) => `"${p}"`).join(', ')}: a key's permissions must lie within the token's scopes`,
    );
  }
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
