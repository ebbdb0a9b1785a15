import type { AppContext } from '../../platform/context.ts';
import { newId, randomText } from '../../platform/ids.ts';
import { writeLimits } from '../limits.ts';
import type { LimitPeriod } from '../periods.ts';
import { allTables } from '../../testing/all-tables.ts';

/**
 * Test fixtures of the billing tests. Users are inserted directly (no Argon2 hash to compute) because the
 * property test needs a fresh wallet per run; the OAuth tables are filled directly because consent is
 * the OAuth feature's to test. Everything billing does with them goes through the real service and API.
 */

/** Inserts a user that cannot sign in (its password hash matches nothing) and returns its id. */
export async function insertUser(ctx: AppContext): Promise<string> {
  const id = newId('usr');
  await allTables(ctx.db)
    .insertInto('users')
    .values({
      id,
      email: `${id.toLowerCase()}@example.com`,
      name: 'Fixture',
      image: null,
      password_hash: '!',
      created_at: ctx.clock.now(),
    })
    .execute();
  return id;
}

/** Registers an OAuth client and records the user's authorization of it with the given limits (micro-credits). */
export async function authorizeApp(
  ctx: AppContext,
  userId: string,
  options: {
    clientId?: string;
    name?: string;
    scopes?: string;
    daily?: number | null;
    weekly?: number | null;
    monthly?: number | null;
    total?: number | null;
    revoked?: boolean;
  } = {},
): Promise<string> {
  const clientId = options.clientId ?? newId('app');
  const now = ctx.clock.now();
  const existing = await allTables(ctx.db)
    .selectFrom('oauth_clients')
    .select('client_id')
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  if (!existing) {
    await allTables(ctx.db)
      .insertInto('oauth_clients')
      .values({
        client_id: clientId,
        name: options.name ?? `App ${randomText(4)}`,
        type: 'public',
        client_secret_hash: null,
        redirect_uris: '["http://127.0.0.1/cb"]',
        scopes: 'read billing:read ai:chat',
        owner_user_id: null,
        created_at: now,
      })
      .execute();
  }
  await allTables(ctx.db)
    .insertInto('authorized_apps')
    .values({
      user_id: userId,
      client_id: clientId,
      scopes: options.scopes ?? 'read billing:read ai:chat',
      authorized_at: now,
      last_used_at: null,
      revoked_at: options.revoked ? now : null,
    })
    .execute();
  await writeLimits(
    ctx.db,
    { kind: 'app', userId, appId: clientId },
    {
      daily: options.daily ?? null,
      weekly: options.weekly ?? null,
      monthly: options.monthly ?? null,
      total: options.total ?? null,
    },
  );
  return clientId;
}

/** Inserts an API key row with a spending limit (micro-credits); the key value itself is never used here. */
export async function insertApiKey(
  ctx: AppContext,
  userId: string,
  options: { appId?: string | null; limit: number | null; period: LimitPeriod | null },
): Promise<string> {
  const id = newId('key');
  await allTables(ctx.db)
    .insertInto('api_keys')
    .values({
      id,
      user_id: userId,
      app_id: options.appId ?? null,
      name: 'fixture',
      key_hash: `fixture-${id}`,
      key_sealed: 'unused',
      permissions: '["ai:chat"]',
      last_used_at: null,
      created_at: ctx.clock.now(),
      revoked_at: null,
    })
    .execute();
  if (options.limit !== null)
    await writeLimits(ctx.db, { kind: 'key', keyId: id }, { [options.period ?? 'total']: options.limit });
  return id;
}
