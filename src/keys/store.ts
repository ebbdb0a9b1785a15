import { sql, type ExpressionBuilder, type SqlBool, type Expression, type Updateable } from 'kysely';
import type { Clock } from '../platform/clock.ts';
import { asDb } from '../platform/db/own-tables.ts';
import type { KeysDb, KeysTables } from './schema.ts';
import type { Principal } from '../platform/http/principal.ts';
import { decrypt, encrypt, sha256Hex } from '../platform/crypto.ts';
import { newId } from '../platform/ids.ts';
import { microsToCredits } from '../platform/money.ts';
import { generateApiKey } from './format.ts';
import { errors } from '../platform/errors.ts';
import type { DialectName } from '../platform/db/connect.ts';
import { authorizationStands } from '../oauth/authorizations.ts';
import type { Billing, KeyLimit } from '../billing/service.ts';
import type { LimitPeriod } from '../billing/periods.ts';
import { serializeOn } from '../platform/db/serialize-on.ts';

/** A key as the list endpoint shows it (contract §2.1, plus its spending limit in credits and its expiry). */
export interface ListedApiKey {
  id: string;
  name: string;
  key: string;
  permissions: string[];
  lastUsed: string | null;
  createdAt: string;
  limit: number | null;
  /** The period of the key's spending limit (billing's periods): `total` never resets (decisions.md "Billing"). */
  limitPeriod: LimitPeriod | null;
  /** What the limit's current period has spent and holds (credits), and when it resets; null without a limit. */
  limitUsage: { spent: number; reserved: number; remaining: number; resetsAt: string | null } | null;
  /** When the key stops authenticating; null when never. An expired key stays listed until revoked. */
  expiresAt: string | null;
  /** The model ids and `<vendor>/*` wildcards the key may call; null when every model. */
  models: string[] | null;
}

/** A key's limit and its current period's use, in credits, as the list and `GET /api/v1/key` show them. */
export function limitUsageOf(limit: KeyLimit | null): ListedApiKey['limitUsage'] {
  if (!limit) return null;
  return {
    spent: microsToCredits(limit.spent),
    reserved: microsToCredits(limit.held),
    remaining: microsToCredits(Math.max(0, limit.amount - limit.spent - limit.held)),
    resetsAt: limit.resetsAt === null ? null : iso(limit.resetsAt),
  };
}

/** A key as creation returns it (contract §2.1: no lastUsed). */
export interface CreatedApiKey {
  id: string;
  name: string;
  key: string;
  permissions: string[];
  createdAt: string;
}

/** What a caller asks for when creating a key; validated by the route. */
export interface NewApiKey {
  name: string;
  permissions: string[];
  limitMicro: number | null;
  /** The period of the key's spending limit (billing's periods): `total` never resets (decisions.md "Billing"). */
  limitPeriod: LimitPeriod | null;
  /** When the key stops authenticating (epoch ms, in the future); null when it never expires. */
  expiresAt: number | null;
  /** The model ids and `<vendor>/*` wildcards the key may call (valid, distinct, at least one); null: every model. */
  models: string[] | null;
}

/**
 * The rows the caller may see or revoke: the user's own live keys and, unless the caller is the user's
 * first-party dashboard session, only those its own app created (decisions.md "Who is calling").
 */
function visibleTo(principal: Principal) {
  return (eb: ExpressionBuilder<KeysTables, 'api_keys'>): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb('user_id', '=', principal.userId), eb('revoked_at', 'is', null)];
    if (principal.kind !== 'session') {
      // A credential with no app behind it that is not the dashboard sees nothing rather than everything.
      conditions.push(principal.appId ? eb('app_id', '=', principal.appId) : sql<SqlBool>`1 = 0`);
    }
    return eb.and(conditions);
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Most live (unrevoked) keys one user may hold. Why a bound: an app with `apikeys:write` could otherwise make
 * keys without end, and the key list (unsealed and with its limits, in one page, as the contract lists it)
 * would grow past what one answer and one `IN` list of limits can carry. Expired keys count: they stay listed
 * until revoked, so not counting them would let short-lived keys grow that list without end again.
 */
export const MAX_LIVE_KEYS_PER_USER = 1000;

/**
 * Creates a key for the caller's user, recording the app that created it. Only the SHA-256 of the value
 * (for lookup) and the value sealed under `encryptionKey` (the contract lists it back) are stored.
 */
export async function createApiKey(
  db: KeysDb,
  clock: Clock,
  encryptionKey: Buffer,
  principal: Principal,
  input: NewApiKey,
  billing: Pick<Billing, 'setKeyLimit'>,
  dialect: DialectName,
): Promise<CreatedApiKey> {
  const key = generateApiKey();
  const id = newId('key');
  const createdAt = clock.now();
  // The key and its limit (billing's to write) commit together: no moment where the key exists unlimited.
  await db.transaction().execute(async (trx) => {
    // Security invariant: at most MAX_LIVE_KEYS_PER_USER, also under concurrent creations (SQLite runs one
    // write transaction at a time; PostgreSQL serialises one user's creations on this lock).
    await serializeOn(trx, dialect, `api-keys:${principal.userId}`);
    const { live } = await trx
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<number | string>().as('live'))
      .where('user_id', '=', principal.userId)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(live) >= MAX_LIVE_KEYS_PER_USER)
      throw errors.invalid(
        `At most ${MAX_LIVE_KEYS_PER_USER} unrevoked API keys per account, expired ones included; revoke one first`,
      );
    await trx
      .insertInto('api_keys')
      .values({
        id,
        user_id: principal.userId,
        app_id: principal.kind === 'session' ? null : principal.appId,
        name: input.name,
        key_hash: sha256Hex(key),
        key_sealed: encrypt(encryptionKey, key),
        permissions: JSON.stringify(input.permissions),
        last_used_at: null,
        created_at: createdAt,
        expires_at: input.expiresAt,
        models: input.models === null ? null : JSON.stringify(input.models),
        revoked_at: null,
      })
      .execute();
    if (input.limitMicro !== null)
      await billing.setKeyLimit(id, { amount: input.limitMicro, period: input.limitPeriod ?? 'total' }, asDb(trx));
  });
  return { id, name: input.name, key, permissions: input.permissions, createdAt: iso(createdAt) };
}

/** The caller's visible live keys (or only `onlyId`), newest first, with their values unsealed. */
export async function listApiKeys(
  db: KeysDb,
  encryptionKey: Buffer,
  principal: Principal,
  billing: Pick<Billing, 'keyLimits'>,
  onlyId?: string,
): Promise<ListedApiKey[]> {
  let query = db
    .selectFrom('api_keys')
    .select(['id', 'name', 'key_sealed', 'permissions', 'last_used_at', 'created_at', 'expires_at', 'models'])
    .where(visibleTo(principal));
  if (onlyId !== undefined) query = query.where('id', '=', onlyId);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id').execute();
  const limits = await billing.keyLimits(rows.map((row) => row.id));
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    key: decrypt(encryptionKey, row.key_sealed),
    permissions: JSON.parse(row.permissions) as string[],
    lastUsed: row.last_used_at === null ? null : iso(row.last_used_at),
    createdAt: iso(row.created_at),
    limit: limits.get(row.id) ? microsToCredits(limits.get(row.id)!.amount) : null,
    limitPeriod: limits.get(row.id)?.period ?? null,
    limitUsage: limitUsageOf(limits.get(row.id) ?? null),
    expiresAt: row.expires_at === null ? null : iso(row.expires_at),
    models: row.models === null ? null : (JSON.parse(row.models) as string[]),
  }));
}

/** What a change of a key sets; an absent field stays as it is. Validated by the route. */
export interface KeyChanges {
  name?: string;
  permissions?: string[];
  /** The key's spending limit after the change, in micro-credits; null removes it. */
  limit?: { amount: number; period: LimitPeriod } | null;
  /** When the key stops authenticating (epoch ms); null: never. */
  expiresAt?: number | null;
  models?: string[] | null;
}

/** Whether `id` is one of the caller's visible live keys (the same rows {@link revokeApiKey} may touch). */
export async function isVisibleKey(db: KeysDb, principal: Principal, id: string): Promise<boolean> {
  const row = await db
    .selectFrom('api_keys')
    .select('id')
    .where('id', '=', id)
    .where(visibleTo(principal))
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Changes one of the caller's visible keys; false when there is none by that id (unknown, another user's, another
 * app's or revoked: the caller cannot tell which). The key's fields and its limit (billing's to write) commit
 * together, so no call sees the new permissions under the old limit or the other way round.
 */
export async function updateApiKey(
  db: KeysDb,
  principal: Principal,
  id: string,
  changes: KeyChanges,
  billing: Pick<Billing, 'setKeyLimit'>,
): Promise<boolean> {
  const set: Updateable<KeysTables['api_keys']> = {};
  if (changes.name !== undefined) set.name = changes.name;
  if (changes.permissions !== undefined) set.permissions = JSON.stringify(changes.permissions);
  if (changes.expiresAt !== undefined) set.expires_at = changes.expiresAt;
  if (changes.models !== undefined) set.models = changes.models === null ? null : JSON.stringify(changes.models);
  return db.transaction().execute(async (trx) => {
    // The row's own update is the visibility check when there is one; a change of the limit alone reads it.
    const found =
      Object.keys(set).length > 0
        ? Number(
            (
              await trx
                .updateTable('api_keys')
                .set(set)
                .where('id', '=', id)
                .where(visibleTo(principal))
                .executeTakeFirst()
            ).numUpdatedRows,
          ) > 0
        : await isVisibleKey(trx, principal, id);
    if (!found) return false;
    if (changes.limit !== undefined) await billing.setKeyLimit(id, changes.limit, asDb(trx));
    return true;
  });
}

/**
 * Revokes one of the caller's visible keys; false when there is none by that id (unknown, another user's,
 * another app's or already revoked: the caller cannot tell which). The row stays for the usage history.
 */
export async function revokeApiKey(db: KeysDb, clock: Clock, principal: Principal, id: string): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: clock.now() })
    .where('id', '=', id)
    .where(visibleTo(principal))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * The live key whose value is `value`, found by its hash; undefined when unknown or revoked. An expired key is
 * found (with its `expires_at`): the caller refuses it against its clock, and says why.
 *
 * Security invariant: a key an OAuth app created lives only while the user's authorization of that app
 * stands. Revoking the app revokes its keys too (see {@link revokeKeysOfApp}); this condition also refuses
 * a key the app minted while its revocation was being written.
 */
export async function findLiveKeyByValue(db: KeysDb, value: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'user_id', 'app_id', 'permissions', 'expires_at', 'models'])
    .where('key_hash', '=', sha256Hex(value))
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('app_id', 'is', null), authorizationStands(eb, 'api_keys.user_id', 'api_keys.app_id')]))
    .executeTakeFirst();
}

/** The names of the keys among `keyIds` that exist (revoked ones too), by key id. */
export async function keyNames(db: KeysDb, keyIds: string[]): Promise<Map<string, string>> {
  if (keyIds.length === 0) return new Map();
  const rows = await db.selectFrom('api_keys').select(['id', 'name']).where('id', 'in', keyIds).execute();
  return new Map(rows.map((row) => [row.id, row.name]));
}

/** Whose app keys to revoke: one user's authorization of an app, or the app for every user. */
export interface AppKeysScope {
  clientId: string;
  /** The user whose authorization ended; leave out when the app itself is revoked or deleted. */
  userId?: string;
}

/** Revokes every live key the app created (for one user, or for all); returns their ids, to drop from caches. */
export async function revokeKeysOfApp(db: KeysDb, clock: Clock, scope: AppKeysScope): Promise<string[]> {
  let query = db
    .updateTable('api_keys')
    .set({ revoked_at: clock.now() })
    .where('app_id', '=', scope.clientId)
    .where('revoked_at', 'is', null);
  if (scope.userId !== undefined) query = query.where('user_id', '=', scope.userId);
  return (await query.returning('id').execute()).map((row) => row.id);
}

/** The key a request was made with, as `GET /api/v1/key` describes it (null once revoked). */
export interface CallingKey {
  id: string;
  name: string;
  permissions: string[];
  models: string[] | null;
  createdAt: string;
  expiresAt: string | null;
}

/** The live key `keyId` of `userId`, or null (revoked meanwhile: the 10-second credential cache may still pass it). */
export async function callingKey(db: KeysDb, userId: string, keyId: string): Promise<CallingKey | null> {
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'name', 'permissions', 'models', 'created_at', 'expires_at'])
    .where('id', '=', keyId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return null;
  return {
    id: row.id,
    name: row.name,
    permissions: JSON.parse(row.permissions) as string[],
    models: row.models === null ? null : (JSON.parse(row.models) as string[]),
    createdAt: iso(row.created_at),
    expiresAt: row.expires_at === null ? null : iso(row.expires_at),
  };
}
