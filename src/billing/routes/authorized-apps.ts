import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import { principalOf } from '../../platform/http/server.ts';
import type { MeteringDeps } from '../deps.ts';
import { errors } from '../../platform/errors.ts';
import { creditsToMicros } from '../../platform/money.ts';
import { listAuthorizedApps, setAppLimits } from '../app-limits.ts';
import { LIMIT_PERIODS, type LimitPeriod } from '../periods.ts';

const security = [{ bearer: [] }];

const LimitSchema = Type.Union([
  Type.Object({
    limit: Type.Number({ description: 'The limit in credits.' }),
    spent: Type.Number({ description: 'Credits captured in the current period.' }),
    reserved: Type.Number({ description: 'Credits held by calls in flight placed in the current period.' }),
    resetsAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'End of the current period; null for total.',
    }),
  }),
  Type.Null(),
]);

const AuthorizedAppSchema = Type.Object({
  clientId: Type.String({ examples: ['app_3kT9xQ2mN7pR4sV8wY1z'] }),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  authorizedAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  limits: Type.Object({ daily: LimitSchema, monthly: LimitSchema, total: LimitSchema }),
});

const LimitInput = Type.Optional(
  Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
    description: 'Credits (at most 6 decimals), or null to remove the limit; leave out to keep it.',
  }),
);

/**
 * The user's authorized apps and their spending limits. Reading: scope `read` or `billing:read`; an app's
 * credential (its token, or a key it created) sees only its own entry. Changing limits: the dashboard only.
 */
export function registerAuthorizedAppRoutes(app: App, ctx: MeteringDeps): void {
  app.get(
    '/api/user/authorized-apps',
    {
      schema: {
        tags: ['user'],
        summary: 'Apps the user has authorized, with their spending limits',
        security,
        response: { 200: Type.Object({ apps: Type.Array(AuthorizedAppSchema) }) },
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
              { daily: LimitInput, monthly: LimitInput, total: LimitInput },
              { additionalProperties: false },
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: AuthorizedAppSchema },
      },
      config: { auth: [] },
    },
    async (request) => {
      const principal = principalOf(request);
      // Security invariant: only the user, first party, sets an app's limits; an app (its token or a key)
      // can never raise its own.
      if (principal.kind !== 'session')
        throw errors.forbidden("An app's spending limits can only be changed from the dashboard.");
      const { limits } = request.body as { limits: Partial<Record<LimitPeriod, number | null>> };
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
          throw errors.invalid(`limits.${period} must be a number of credits with at most 6 decimals.`);
        changes[period] = micros;
      }
      return setAppLimits(ctx, principal.userId, (request.params as { clientId: string }).clientId, changes);
    },
  );
}
