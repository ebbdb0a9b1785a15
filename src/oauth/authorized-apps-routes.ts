import Type from 'typebox';
import { AuthorizedAppSchema, AuthorizedAppsSchema } from '#wire/authorized-apps.ts';
import type { App } from '../platform/http/server.ts';
import { principalOf, toApiError } from '../platform/http/server.ts';
import { refuseUnknownFields } from '../platform/http/unknown-fields.ts';
import type { OAuthDeps } from './deps.ts';
import { errors } from '../platform/errors.ts';
import { creditsToMicros, CREDITS_RULE } from '../platform/money.ts';
import { LIMIT_PERIODS, type LimitPeriod } from '../billing/periods.ts';
import { listAuthorizedApps, setAuthorizedAppLimits } from './authorized-apps.ts';

const security = [{ bearer: [] }];

const LimitInput = Type.Optional(
  Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
    description: `Credits (${CREDITS_RULE}), or null to remove the limit; leave out to keep it.`,
  }),
);

/**
 * The user's authorized apps and their spending limits (billing's, read and written through its API).
 * Reading: scope `read` or `billing:read`; an app's credential (its token, or a key it created) sees only its
 * own entry. Changing limits: the dashboard only.
 */
export function registerAuthorizedAppRoutes(app: App, ctx: OAuthDeps): void {
  app.get(
    '/api/user/authorized-apps',
    {
      schema: {
        tags: ['user'],
        summary: 'Apps the user has authorized, with their spending limits',
        security,
        response: { 200: AuthorizedAppsSchema },
      },
      config: { auth: ['read', 'billing:read'] },
    },
    async (request) => {
      const principal = principalOf(request);
      return { apps: await listAuthorizedApps(ctx, principal.userId, principal.appId) };
    },
  );

  app.patch(
    '/api/user/authorized-apps/:clientId',
    {
      schema: {
        tags: ['user'],
        summary: "Set or remove an app's spending limits (dashboard session only)",
        params: Type.Object({ clientId: Type.String({ maxLength: 100 }) }),
        body: Type.Object(
          {
            limits: Type.Object(
              { daily: LimitInput, weekly: LimitInput, monthly: LimitInput, total: LimitInput },
              { additionalProperties: false },
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: AuthorizedAppSchema },
      },
      // Validation is attached, not thrown: an unknown field is named first (refuseUnknownFields), as a key's are.
      attachValidation: true,
      config: { auth: [] },
    },
    async (request) => {
      const principal = principalOf(request);
      // Security invariant: only the user, first party, sets an app's limits; an app (its token or a key)
      // can never raise its own.
      if (principal.kind !== 'session')
        throw errors.forbidden("An app's spending limits can only be changed from the dashboard.");
      const body = (request.body ?? {}) as Record<string, unknown>;
      const isObject = (value: unknown) => value !== null && typeof value === 'object' && !Array.isArray(value);
      if (isObject(body)) refuseUnknownFields(body, ['limits'], 'the body');
      if (isObject(body.limits))
        refuseUnknownFields(body.limits as Record<string, unknown>, LIMIT_PERIODS, 'limits', 'limits');
      if (request.validationError) throw toApiError(request.validationError);
      const { limits } = body as { limits: Partial<Record<LimitPeriod, number | null>> };
      const changes: Partial<Record<LimitPeriod, number | null>> = {};
      for (const period of LIMIT_PERIODS) {
        const value = limits[period];
        if (value === undefined) continue;
        if (value === null) {
          changes[period] = null;
          continue;
        }
        const micros = creditsToMicros(value);
        if (micros === null)
          throw errors.invalid(`limits.${period} must be a number of credits ${CREDITS_RULE}.`, {
            param: `limits.${period}`,
          });
        changes[period] = micros;
      }
      return setAuthorizedAppLimits(ctx, principal.userId, (request.params as { clientId: string }).clientId, changes);
    },
  );
}
