import Type from 'typebox';
import { ApiKeyUpdatedSchema, KeyLimitPeriodSchema } from '#wire/keys.ts';
import type { FastifyRequest } from 'fastify';
import type { App } from '../platform/http/server.ts';
import { principalOf, toApiError } from '../platform/http/server.ts';
import type { Principal } from '../platform/http/principal.ts';
import { errors } from '../platform/errors.ts';
import { creditsToMicros, CREDITS_RULE } from '../platform/money.ts';
import type { KeyLimit } from '../billing/service.ts';
import type { LimitPeriod } from '../billing/periods.ts';
import type { KeysDeps } from './deps.ts';
import type { KeyAuthenticator } from './authenticate.ts';
import { isVisibleKey, listApiKeys, updateApiKey, type KeyChanges } from './store.ts';
import {
  KeyFieldSchemas,
  parseExpiresAt,
  parseModels,
  parseName,
  parsePermissions,
  refuseUnknownFields,
  requireWithinScopes,
} from './fields.ts';
import { errorResponses, security } from './routes.ts';

const CHANGEABLE = ['name', 'permissions', 'limit', 'limitPeriod', 'expiresAt', 'models'] as const;

const UpdateBody = Type.Object(
  {
    name: Type.Optional(KeyFieldSchemas.name),
    permissions: Type.Optional(KeyFieldSchemas.permissions),
    limit: Type.Optional(KeyFieldSchemas.limit),
    limitPeriod: Type.Optional(
      Type.Union([KeyLimitPeriodSchema, Type.Null()], {
        description: "The limit's period; absent, the key's current one ('total' for a key that had no limit)",
      }),
    ),
    expiresAt: Type.Optional(KeyFieldSchemas.expiresAt),
    models: Type.Optional(KeyFieldSchemas.models),
  },
  { additionalProperties: false },
);

/** A change as read from the body, before the key's current limit is known. */
interface RequestedChange extends Omit<KeyChanges, 'limit'> {
  limit?: number | null;
  limitPeriod?: LimitPeriod | null;
}

/**
 * Reads the change: each field present is checked with creation's rules and texts; an empty body is a 400 that
 * lists what can change. Nothing here reads the key, so a refusal says nothing about whether it exists.
 */
function parseChange(request: FastifyRequest, principal: Principal, now: number): RequestedChange {
  const body = (request.body ?? {}) as Record<string, unknown>;
  const given = (field: string) => body[field] !== undefined;
  refuseUnknownFields(body, CHANGEABLE);
  if (!CHANGEABLE.some(given)) throw errors.invalid(`Send at least one field to change: ${CHANGEABLE.join(', ')}`);
  const change: RequestedChange = {};
  if (given('name')) change.name = parseName(body.name, 'name must be a non-empty string');
  if (given('permissions')) {
    change.permissions = parsePermissions(body.permissions);
    requireWithinScopes(principal, change.permissions);
  }
  if (given('expiresAt')) change.expiresAt = body.expiresAt === null ? null : parseExpiresAt(body.expiresAt, now);
  if (given('models')) change.models = parseModels(body.models);
  if (request.validationError) throw toApiError(request.validationError);
  if (given('limit')) {
    const limit = body.limit as number | null;
    if (limit !== null && creditsToMicros(limit) === null)
      throw errors.invalid(`limit must be a number of credits ${CREDITS_RULE}`);
    change.limit = limit === null ? null : creditsToMicros(limit);
    if (limit === null && body.limitPeriod) throw errors.invalid('limitPeriod needs a limit');
  }
  if (given('limitPeriod')) {
    if (body.limitPeriod === null && !given('limit'))
      throw errors.invalid('To remove the spending limit, send "limit": null');
    change.limitPeriod = body.limitPeriod as LimitPeriod | null;
  }
  return change;
}

/** The key's limit after `change`, from its current one: a new amount keeps the period, a new period the amount. */
function limitAfter(change: RequestedChange, current: KeyLimit | null): KeyChanges['limit'] {
  if (change.limit === null) return null;
  if (change.limit !== undefined)
    return { amount: change.limit, period: change.limitPeriod ?? current?.period ?? 'total' };
  if (change.limitPeriod) {
    if (!current) throw errors.invalid('limitPeriod needs a limit: this key has none, so send limit with it');
    return { amount: current.amount, period: change.limitPeriod };
  }
  return undefined;
}

/**
 * `PATCH /api/user/api-keys/:id`: changes a key's name, permissions, spending limit, expiry or models, in place (its
 * value, id and history stay). The answer is the key as the list shows it.
 *
 * Security invariants: only a key the caller may revoke may be changed (the user's own, and for an app only those
 * it created; any other is the same 404 as an unknown id, checked before the key's limit is read); a token cannot
 * give a key a permission beyond its own scopes, as at creation; every process drops the key from its credential
 * cache once the change has committed, so narrower permissions or an earlier expiry hold from the next request.
 */
export function registerKeyUpdateRoute(app: App, ctx: KeysDeps, keyAuth: KeyAuthenticator): void {
  app.patch(
    '/api/user/api-keys/:id',
    {
      schema: {
        tags: ['api-keys'],
        summary: 'Change an API key',
        security,
        description:
          "Changes the fields sent and keeps the others: `name`, `permissions` (within the calling token's scopes, 403 otherwise), `limit` (credits; null removes it) with `limitPeriod` (absent: the key's current period; sent alone, it changes the period of the key's limit and keeps its amount), `expiresAt` (null: never) and `models` (null: every model). Lowering a limit under what its period has spent refuses the key's next calls with 429 SPENDING_LIMIT_EXCEEDED; running calls keep their holds. Another user's key, or for an app another app's key, is a 404.",
        params: Type.Object({ id: Type.String() }),
        body: UpdateBody,
        response: { 200: ApiKeyUpdatedSchema, ...errorResponses },
      },
      attachValidation: true,
      config: { auth: ['apikeys:write'], envelope: 'keys' },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const principal = principalOf(request);
      const change = parseChange(request, principal, ctx.clock.now());
      if (!(await isVisibleKey(ctx.db, principal, id))) throw errors.notFound('API key');
      const current = (await ctx.billing.keyLimits([id])).get(id) ?? null;
      const { limit: _amount, limitPeriod: _period, ...fields } = change;
      const changes: KeyChanges = { ...fields, limit: limitAfter(change, current) };
      if (!(await updateApiKey(ctx.db, principal, id, changes, ctx.billing))) throw errors.notFound('API key');
      keyAuth.forget(id);
      const [apiKey] = await listApiKeys(ctx.db, ctx.secrets.encryptionKey, principal, ctx.billing, id);
      if (!apiKey) throw errors.notFound('API key');
      return { success: true as const, apiKey };
    },
  );
}
