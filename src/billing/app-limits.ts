import { errors } from '../platform/errors.ts';
import { microsToCredits } from '../platform/money.ts';
import { readLimits, readSpend, subjectKey, writeLimits } from './limits.ts';
import { periodAt, type LimitPeriod } from './periods.ts';
import type { BillingContext } from './ledger.ts';

/** One of an app's limits for a user, as `GET /api/user/authorized-apps` shows it (credits). */
export interface LimitView {
  limit: number;
  /** Captured in the current period (net of refunds). */
  spent: number;
  /** Held by the app's open holds placed in the current period. */
  reserved: number;
  /** When the current period ends; null for `total`. */
  resetsAt: string | null;
}

/** An app the user has authorized, with its limits (decisions.md "Reads that the contract leaves open"). */
export interface AuthorizedAppView {
  clientId: string;
  name: string;
  scopes: string[];
  authorizedAt: string;
  lastUsedAt: string | null;
  limits: Record<LimitPeriod, LimitView | null>;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The user's authorized (not revoked) apps, newest first, with each limit and what is spent and held
 * against it in the current period. `onlyClientId` narrows the list to one app: an app's own token
 * sees only its own entry.
 */
export async function listAuthorizedApps(
  ctx: BillingContext,
  userId: string,
  onlyClientId: string | null = null,
): Promise<AuthorizedAppView[]> {
  let query = ctx.db
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
  const subjects = rows.map((row) => ({ kind: 'app' as const, userId, appId: row.client_id }));
  const limits = await readLimits(ctx.db, subjects);

  const now = ctx.clock.now();
  return Promise.all(
    rows.map(async (row, i) => {
      const configured = limits.get(subjectKey(subjects[i]!))!;
      const anyLimit = Object.values(configured).some((limit) => limit !== null);
      const spend = anyLimit ? await readSpend(ctx.db, { kind: 'app', userId, appId: row.client_id }, now) : null;
      const view = (period: LimitPeriod): LimitView | null => {
        const limit = configured[period];
        if (limit === null || !spend) return null;
        return {
          limit: microsToCredits(limit),
          spent: microsToCredits(spend[period].spent),
          reserved: microsToCredits(spend[period].held),
          resetsAt: iso(periodAt(period, now).resetsAt),
        };
      };
      return {
        clientId: row.client_id,
        name: row.name,
        scopes: row.scopes.split(' ').filter(Boolean),
        authorizedAt: new Date(row.authorized_at).toISOString(),
        lastUsedAt: iso(row.last_used_at),
        limits: { daily: view('daily'), monthly: view('monthly'), total: view('total') },
      };
    }),
  );
}

/**
 * Sets or removes the user's limits for an app (micro-credits; null removes; a period left out keeps its
 * limit). 404 when the user has not authorized the app (or revoked it). Takes effect on the next hold:
 * holds read the limits inside their own transaction.
 */
export async function setAppLimits(
  ctx: BillingContext,
  userId: string,
  clientId: string,
  changes: Partial<Record<LimitPeriod, number | null>>,
): Promise<AuthorizedAppView> {
  const authorized = await ctx.db
    .selectFrom('authorized_apps')
    .select('client_id')
    .where('user_id', '=', userId)
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!authorized) throw errors.notFound('Authorized app');
  await writeLimits(ctx.db, { kind: 'app', userId, appId: clientId }, changes);
  const [view] = await listAuthorizedApps(ctx, userId, clientId);
  if (!view) throw errors.notFound('Authorized app');
  return view;
}
