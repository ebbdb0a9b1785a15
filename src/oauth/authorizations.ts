import { asDb } from '../platform/db/own-tables.ts';
import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import type { OauthDb, OauthTables } from './schema.ts';
import type { Clock } from '../platform/clock.ts';
import type { Billing } from '../billing/service.ts';

/**
 * The condition "this user's authorization of this app stands (not revoked)", for a query of another feature
 * over rows that name a user and an app (`userColumn`, `appColumn`: qualified column references, such as
 * `api_keys.user_id`). A correlated `EXISTS`, so the caller's check stays one statement; oauth writes it, as
 * the owner of `authorized_apps`, on the caller's expression builder.
 */
export function authorizationStands(
  eb: ExpressionBuilder<any, any>,
  userColumn: string,
  appColumn: string,
): Expression<SqlBool> {
  const oauth = eb as ExpressionBuilder<OauthTables & Record<string, Record<string, unknown>>, any>;
  return oauth.exists(
    oauth
      .selectFrom('authorized_apps')
      .select('authorized_apps.client_id')
      .whereRef('authorized_apps.user_id', '=', userColumn)
      .whereRef('authorized_apps.client_id', '=', appColumn)
      .where('authorized_apps.revoked_at', 'is', null),
  );
}

/** What the consent step records for a user and an app. */
export interface ConsentRecord {
  userId: string;
  clientId: string;
  /** Every scope the user's grant to the app now holds. */
  scopes: string[];
  /** Micro-credits per UTC day, or null for no limit. */
  dailyLimit: number | null;
}

/**
 * Records (or renews) the user's authorization of the app: the scopes, and through billing (which owns
 * spending limits) the daily limit chosen at consent, in one transaction. A renewed consent clears an
 * earlier revocation; the monthly and total limits, which the dashboard sets, are kept.
 */
export async function recordConsent(
  db: OauthDb,
  clock: Clock,
  consent: ConsentRecord,
  billing: Pick<Billing, 'setAppLimits'>,
): Promise<void> {
  const now = clock.now();
  const scopes = consent.scopes.join(' ');
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('authorized_apps')
      .values({
        user_id: consent.userId,
        client_id: consent.clientId,
        scopes,
        authorized_at: now,
        last_used_at: null,
        revoked_at: null,
      })
      .onConflict((oc) =>
        oc.columns(['user_id', 'client_id']).doUpdateSet({ scopes, authorized_at: now, revoked_at: null }),
      )
      .execute();
    await billing.setAppLimits(consent.userId, consent.clientId, { daily: consent.dailyLimit }, asDb(trx));
  });
}

/**
 * Revokes the user's authorization of the app: marks the row revoked and deletes every grant, code and
 * token of that user for that app, in one transaction, so that no token outlives the revocation.
 * False when the user never authorized the app.
 */
export async function revokeAuthorization(
  db: OauthDb,
  clock: Clock,
  userId: string,
  clientId: string,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('authorized_apps')
      .select('revoked_at')
      .where('user_id', '=', userId)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    if (!row) return false;
    if (row.revoked_at === null) {
      await trx
        .updateTable('authorized_apps')
        .set({ revoked_at: clock.now() })
        .where('user_id', '=', userId)
        .where('client_id', '=', clientId)
        .execute();
    }
    await trx.deleteFrom('oidc_payloads').where('account_id', '=', userId).where('client_id', '=', clientId).execute();
    return true;
  });
}

/**
 * The newest live grant the user gave the app, or null. oidc-provider looks a grant up through its own
 * browser session, which one account per browser ends at every sign-in and sign-out; this finds it again,
 * so a user who signs out and back in is not asked to consent again to what they already allowed (a grant
 * holds the scopes; asking for more still shows the consent page). Revoking the app deletes its grants.
 */
export async function latestGrantId(db: OauthDb, userId: string, clientId: string): Promise<string | null> {
  const row = await db
    .selectFrom('oidc_payloads')
    .select('id')
    .where('model', '=', 'Grant')
    .where('account_id', '=', userId)
    .where('client_id', '=', clientId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', Date.now())]))
    .orderBy('expires_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.id ?? null;
}
