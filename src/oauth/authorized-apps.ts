import type { OAuthDeps } from './deps.ts';
import { errors } from '../platform/errors.ts';
import { appLimitViews, setAppLimits, type AppLimitViews } from '../billing/app-limits.ts';
import type { LimitPeriod } from '../billing/periods.ts';
import { oauthDb } from './schema.ts';

/** An app the user has authorized, with its limits (decisions.md "Reads that the contract leaves open"). */
export interface AuthorizedAppView {
  clientId: string;
  name: string;
  scopes: string[];
  authorizedAt: string;
  lastUsedAt: string | null;
  limits: AppLimitViews;
}

/** What the authorized-apps views read: the authorizations here, the limits and their spend from billing. */
export type AuthorizedAppsContext = Pick<OAuthDeps, 'db' | 'dialect' | 'clock' | 'config'>;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The user's authorized (not revoked) apps, newest first, with each limit and what is spent and held
 * against it in the current period (billing's). `onlyClientId` narrows the list to one app: an app's own
 * token sees only its own entry.
 */
export async function listAuthorizedApps(
  ctx: AuthorizedAppsContext,
  userId: string,
  onlyClientId: string | null = null,
): Promise<AuthorizedAppView[]> {
  let query = oauthDb(ctx.db)
    .selectFrom('authorized_apps')
    .innerJoin('oauth_clients', 'oauth_clients.client_id', 'authorized_apps.client_id')
    .select([
      'authorized_apps.client_id',
      'oauth_clients.name',
      'authorized_apps.scopes',
      'authorized_apps.authorized_at',
      'authorized_apps.last_used_at',
    ])
    .where('authorized_apps.user_id', '=', userId)
    .where('authorized_apps.revoked_at', 'is', null)
    .orderBy('authorized_apps.authorized_at', 'desc')
    .orderBy('authorized_apps.client_id');
  if (onlyClientId !== null) query = query.where('authorized_apps.client_id', '=', onlyClientId);
  const rows = await query.execute();
  const limits = await appLimitViews(
    ctx,
    userId,
    rows.map((row) => row.client_id),
  );
  return rows.map((row, i) => ({
    clientId: row.client_id,
    name: row.name,
    scopes: row.scopes.split(' ').filter(Boolean),
    authorizedAt: new Date(row.authorized_at).toISOString(),
    lastUsedAt: iso(row.last_used_at),
    limits: limits[i]!,
  }));
}

/**
 * Sets or removes the user's limits for an app (micro-credits; null removes; a period left out keeps its
 * limit), through billing, which owns them. 404 when the user has not authorized the app (or revoked it).
 * Takes effect on the next hold: holds read the limits inside their own transaction.
 */
export async function setAuthorizedAppLimits(
  ctx: AuthorizedAppsContext,
  userId: string,
  clientId: string,
  changes: Partial<Record<LimitPeriod, number | null>>,
): Promise<AuthorizedAppView> {
  const authorized = await oauthDb(ctx.db)
    .selectFrom('authorized_apps')
    .select('client_id')
    .where('user_id', '=', userId)
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!authorized) throw errors.notFound('Authorized app');
  await setAppLimits(ctx, userId, clientId, changes);
  const [view] = await listAuthorizedApps(ctx, userId, clientId);
  if (!view) throw errors.notFound('Authorized app');
  return view;
}
