import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from '../platform/http/server.ts';
import { principalOf } from '../platform/http/server.ts';
import { errors } from '../platform/errors.ts';
import { microsToCredits } from '../platform/money.ts';
import { keyUsage } from '../billing/reports.ts';
import type { KeysDeps } from './deps.ts';
import { callingKey, limitUsageOf } from './store.ts';

const Credits = (description: string) => Type.Number({ description });
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

/** `GET /api/v1/key`: OpenRouter's answer for the key it is called with, plus Tollgate's own fields. */
const KeyInfoSchema = Type.Object({
  data: Type.Object({
    id: Type.String(),
    label: Type.String({ description: "The key's name (OpenRouter's `label`)" }),
    name: Type.String(),
    permissions: Type.Array(Type.String()),
    models: Nullable(Type.Array(Type.String()), 'The models the key may call; null when every model'),
    created_at: Type.String({ format: 'date-time' }),
    expires_at: Nullable(Type.String({ format: 'date-time' }), 'When the key stops working; null when never'),
    limit: Nullable(Type.Number(), "The key's spending limit in credits; null when none"),
    limit_reset: Nullable(
      Type.Enum(['daily', 'weekly', 'monthly']),
      'When the limit resets (UTC; a week on Monday); null for a total limit or none',
    ),
    limit_remaining: Nullable(
      Type.Number(),
      'What the limit leaves in its current period (limit - spent - held by running calls); null when there is no limit',
    ),
    usage: Credits('Credits charged to calls made with this key since it was made (refunds deducted)'),
    usage_daily: Credits('Credits charged to calls made with this key since the start of the UTC day'),
    usage_weekly: Credits('Credits charged to calls made with this key since Monday 00:00 UTC'),
    usage_monthly: Credits('Credits charged to calls made with this key since the start of the UTC month'),
    spendable: Type.Optional(
      Credits(
        "What a call made with this key could hold right now: the wallet's available credits lowered to every limit that applies (the key's; its app's). Given only to a key with `billing:read`, which may read the wallet",
      ),
    ),
    is_free_tier: Type.Boolean({ description: 'Always false: every call is paid from the wallet' }),
    rate_limit: Nullable(
      Type.Object({
        requests: Type.Integer({ description: 'Requests the key may make per interval on `/api/v1/*`' }),
        interval: Type.Literal('1m'),
      }),
      "The key's request rate (`RATE_LIMIT_KEY_RPM`); null when the operator turned it off",
    ),
  }),
});

/**
 * `GET /api/v1/key`: the API key a request is made with, its limit and what it has spent, in the shape OpenRouter's
 * clients read (`data.limit`, `data.limit_remaining`, `data.usage_daily`, …), so a tool holding a key can show
 * what it has left.
 *
 * Security invariants: it describes only the key it is called with (any valid key, whatever its permissions:
 * the holder can already spend under it), never the key's value nor another key; the wallet shows through
 * `spendable` only for a key that may read it (`billing:read`); a revoked key still in a process's credential
 * cache gets the 401 every revoked key gets.
 */
export function registerKeyInfoRoute(app: App, ctx: KeysDeps): void {
  const rateLimit =
    ctx.config.RATE_LIMIT_KEY_RPM > 0 ? { requests: ctx.config.RATE_LIMIT_KEY_RPM, interval: '1m' as const } : null;
  const describeKey = async (request: FastifyRequest) => {
    const principal = principalOf(request);
    if (principal.kind !== 'api_key' || principal.keyId === null)
      throw errors.invalid(
        'GET /api/v1/key describes the API key it is called with: call it with an API key (ak_…). An app reads its limits with GET /api/user/authorized-apps.',
      );
    const key = await callingKey(ctx.db, principal.userId, principal.keyId);
    if (!key) throw errors.unauthenticated('This API key was revoked.');
    const [limit, usage, spendable] = await Promise.all([
      ctx.billing.keyLimits([key.id]).then((limits) => limits.get(key.id) ?? null),
      keyUsage(ctx.db, key.id, ctx.clock.now()),
      principal.scopes.has('billing:read')
        ? ctx.billing.spendable({ userId: principal.userId, appId: principal.appId, keyId: key.id })
        : null,
    ]);
    return {
      data: {
        id: key.id,
        label: key.name,
        name: key.name,
        permissions: key.permissions,
        models: key.models,
        created_at: key.createdAt,
        expires_at: key.expiresAt,
        limit: limit ? microsToCredits(limit.amount) : null,
        limit_reset: limit && limit.period !== 'total' ? limit.period : null,
        limit_remaining: limitUsageOf(limit)?.remaining ?? null,
        usage: microsToCredits(usage.total),
        usage_daily: microsToCredits(usage.daily),
        usage_weekly: microsToCredits(usage.weekly),
        usage_monthly: microsToCredits(usage.monthly),
        ...(spendable ? { spendable: microsToCredits(spendable.amount) } : {}),
        is_free_tier: false,
        rate_limit: rateLimit,
      },
    };
  };
  const schema = {
    tags: ['api-keys'],
    security: [{ bearer: [] }],
    response: { 200: KeyInfoSchema },
  };
  app.get(
    '/api/v1/key',
    {
      schema: {
        ...schema,
        summary: 'Describe the API key this request is made with',
        description:
          'Any API key may call it (no permission needed); an OAuth token or the dashboard session is a 400, since it describes an API key.',
      },
      config: { auth: [] },
    },
    describeKey,
  );
  // OpenRouter's older path, still what many usage widgets and scripts call.
  app.get(
    '/api/v1/auth/key',
    {
      schema: {
        ...schema,
        summary: 'Describe the API key this request is made with (older path)',
        description: "The same answer as `GET /api/v1/key`, at OpenRouter's older path, which many tools still call.",
        deprecated: true,
      },
      config: { auth: [] },
    },
    describeKey,
  );
}
