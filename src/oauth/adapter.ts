import { randomBytes } from 'node:crypto';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { loadOidcProvider } from './load-provider.ts';
import type { OauthDb } from './schema.ts';
import { sha256Hex } from '../platform/crypto.ts';
import { findClientMetadata } from './clients.ts';

/** What the adapter reports when tokens stop existing, so that caches in every process drop them. */
export interface RevocationEvent {
  /** Stored ids ({@link storedPayloadId}: hashes, never the tokens) of access tokens destroyed one by one. */
  tokens?: string[];
  /** Grants whose codes and tokens were all deleted. */
  grants?: string[];
  /** A user revoked an app: every token of that user for that app is gone. */
  app?: { userId: string; clientId: string };
}

/**
 * oidc-provider reads the wall clock (its `epochTime()`) to stamp and check `exp`, so the rows it stores
 * must expire on the same clock, not on the service's settable clock.
 */
const wallClock = () => Date.now();

/**
 * Deletes grants with every code and token issued under them, in one statement so that no half-revoked
 * grant can be observed. Returns nothing: deleting what is already gone is not an error.
 */
export async function deleteGrants(db: OauthDb, grantIds: string[]): Promise<void> {
  if (grantIds.length === 0) return;
  await db
    .deleteFrom('oidc_payloads')
    .where((eb) =>
      eb.or([eb('grant_id', 'in', grantIds), eb.and([eb('model', '=', 'Grant'), eb('id', 'in', grantIds)])]),
    )
    .execute();
}

/**
 * Whether the grant still exists. A token is valid only while its grant is: revoking a grant deletes it
 * first, so a token saved by a request that raced the revocation is dead all the same.
 */
export async function grantExists(db: OauthDb, grantId: string): Promise<boolean> {
  const row = await db
    .selectFrom('oidc_payloads')
    .select('expires_at')
    .where('model', '=', 'Grant')
    .where('id', '=', grantId)
    .executeTakeFirst();
  return row !== undefined && (row.expires_at === null || Number(row.expires_at) > wallClock());
}

/**
 * The id a model instance is stored under. Security invariant: for every model but `Grant`, oidc-provider's
 * id is the credential itself (access and refresh tokens, codes, the session and interaction cookies), so
 * only its SHA-256 is stored. Unkeyed, like the dashboard's session tokens: the ids carry 256 random bits,
 * so a hash cannot be reversed by guessing, and no key is needed whose loss would end every grant. A grant
 * id is no credential (no endpoint accepts it; tokens name it in `grant_id`), so it stays as it is.
 */
export function storedPayloadId(model: string, id: string): string {
  if (model === 'Grant') return id;
  if (id.startsWith(HANDLE_PREFIX)) return id.slice(HANDLE_PREFIX.length);
  return sha256Hex(id);
}

/**
 * A model found by uid (a session) must still save and destroy its own row, but its id, the cookie, is
 * nowhere to be read. It gets a handle instead: this prefix, then the stored hash. The prefix is random per
 * process and never leaves it, so no cookie or token from outside can name a row by its hash.
 */
const HANDLE_PREFIX = `tg-handle-${randomBytes(24).toString('base64url')}:`;

/**
 * What is stored of a payload: everything but the copies of credentials it carries. `jti` is the id
 * itself (given back by `find`); an interaction names its session's cookie, which oidc-provider never reads.
 */
export function storablePayload(model: string, payload: AdapterPayload): AdapterPayload {
  if (model === 'Grant') return payload;
  const { jti: _id, ...rest } = payload;
  const session = rest.session as { cookie?: string } | undefined;
  if (session && typeof session === 'object' && 'cookie' in session) {
    const { cookie: _cookie, ...kept } = session;
    rest.session = kept as AdapterPayload['session'];
  }
  return rest;
}

function toPayload(row: { payload: string; consumed_at: number | null }, id?: string): AdapterPayload {
  const payload = JSON.parse(row.payload) as AdapterPayload;
  if (id !== undefined) payload.jti = id;
  if (row.consumed_at !== null) payload.consumed = Math.floor(Number(row.consumed_at) / 1000);
  return payload;
}

/**
 * The storage oidc-provider runs on: one row per model instance in `oidc_payloads` (grants, codes, access
 * and refresh tokens, sessions, interactions, replay detection), and clients read from `oauth_clients`.
 * Nothing lives only in memory, so a restart or another instance sees every grant, code and token.
 * Rows are keyed by {@link storedPayloadId}, so the database holds no usable token; a model found by uid
 * or user code comes back with a handle for its id (see HANDLE_PREFIX), which saves and destroys its row.
 */
export function createAdapterFactory(
  db: OauthDb,
  onRevoked: (event: RevocationEvent) => void,
): (model: string) => Adapter {
  const adapters = new Map<string, Adapter>();
  return (model) => {
    let adapter = adapters.get(model);
    if (!adapter) {
      adapter = model === 'Client' ? clientAdapter(db) : payloadAdapter(db, model, onRevoked);
      adapters.set(model, adapter);
    }
    return adapter;
  };
}

function clientAdapter(db: OauthDb): Adapter {
  const readOnly = async () => {
    throw new Error('OAuth clients are registered through the operator API, not through oidc-provider');
  };
  return {
    find: (id) => findClientMetadata(db, id),
    upsert: readOnly,
    consume: readOnly,
    destroy: readOnly,
    revokeByGrantId: readOnly,
    findByUid: async () => undefined,
    findByUserCode: async () => undefined,
  };
}

function payloadAdapter(db: OauthDb, model: string, onRevoked: (event: RevocationEvent) => void): Adapter {
  /**
   * Security invariant: a client assertion's `jti` is used once (provider.ts, private_key_jwt). oidc-provider
   * looks the `jti` up, then saves it; two requests racing with one assertion could both find nothing, and an
   * upsert would let both pass. The row is inserted only when none lives under that id (an expired one not yet
   * swept is replaced), so exactly one request records it and the other is refused as a replay.
   */
  async function recordOnce(id: string, payload: AdapterPayload, expiresIn: number | undefined): Promise<void> {
    const now = wallClock();
    const values = {
      payload: JSON.stringify(storablePayload(model, payload)),
      grant_id: null,
      user_code: null,
      uid: null,
      account_id: null,
      client_id: typeof payload.iss === 'string' ? payload.iss : null,
      expires_at: now + Math.max(1, expiresIn ?? 0) * 1000,
      consumed_at: null,
    };
    const result = await db
      .insertInto('oidc_payloads')
      .values({ id: storedPayloadId(model, id), model, ...values })
      .onConflict((oc) => oc.columns(['model', 'id']).doUpdateSet(values).where('oidc_payloads.expires_at', '<=', now))
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0) === 1) return;
    const { errors: oidcErrors } = await loadOidcProvider();
    throw new oidcErrors.InvalidClientAuth('client assertion tokens must only be used once');
  }

  const rows = () =>
    db.selectFrom('oidc_payloads').select(['id', 'payload', 'consumed_at', 'expires_at']).where('model', '=', model);
  const live = (row: { expires_at: number | null } | undefined) =>
    row !== undefined && (row.expires_at === null || Number(row.expires_at) > wallClock());

  return {
    async upsert(id, payload, expiresIn) {
      if (model === 'ReplayDetection') return recordOnce(id, payload, expiresIn);
      const values = {
        payload: JSON.stringify(storablePayload(model, payload)),
        grant_id: payload.grantId ?? null,
        user_code: payload.userCode ?? null,
        uid: payload.uid ?? null,
        account_id: payload.accountId ?? null,
        client_id: payload.clientId ?? null,
        expires_at: typeof expiresIn === 'number' ? wallClock() + expiresIn * 1000 : null,
        consumed_at: null,
      };
      await db
        .insertInto('oidc_payloads')
        .values({ id: storedPayloadId(model, id), model, ...values })
        .onConflict((oc) => oc.columns(['model', 'id']).doUpdateSet(values))
        .execute();
    },

    async find(id) {
      const row = await rows().where('id', '=', storedPayloadId(model, id)).executeTakeFirst();
      return live(row) ? toPayload(row!, id) : undefined;
    },

    async findByUid(uid) {
      const row = await rows().where('uid', '=', uid).executeTakeFirst();
      return live(row) ? toPayload(row!, HANDLE_PREFIX + row!.id) : undefined;
    },

    async findByUserCode(userCode) {
      const row = await rows().where('user_code', '=', userCode).executeTakeFirst();
      return live(row) ? toPayload(row!, HANDLE_PREFIX + row!.id) : undefined;
    },

    // Security invariant: a code or refresh token is used once. oidc-provider checks `consumed` before it
    // calls this, but two requests can pass that check together; the conditional update lets exactly one
    // win, and the loser is treated as a replay: the whole grant is revoked (RFC 9700 §4.14.2).
    async consume(id) {
      const stored = storedPayloadId(model, id);
      const result = await db
        .updateTable('oidc_payloads')
        .set({ consumed_at: wallClock() })
        .where('model', '=', model)
        .where('id', '=', stored)
        .where('consumed_at', 'is', null)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 1) return;
      const row = await db
        .selectFrom('oidc_payloads')
        .select('grant_id')
        .where('model', '=', model)
        .where('id', '=', stored)
        .executeTakeFirst();
      if (row?.grant_id) {
        await deleteGrants(db, [row.grant_id]);
        onRevoked({ grants: [row.grant_id] });
      }
      // Imported here, not at the top, so that oidc-provider loads only once OAuth is used (provider.ts);
      // by the time it calls consume() it is loaded, and this import is a cache hit.
      const { errors: oidcErrors } = await loadOidcProvider();
      throw new oidcErrors.InvalidGrant(
        `${model === 'RefreshToken' ? 'refresh token' : 'authorization code'} already used`,
      );
    },

    async destroy(id) {
      const stored = storedPayloadId(model, id);
      await db.deleteFrom('oidc_payloads').where('model', '=', model).where('id', '=', stored).execute();
      if (model === 'AccessToken') onRevoked({ tokens: [stored] });
      if (model === 'Grant') onRevoked({ grants: [id] });
    },

    async revokeByGrantId(grantId) {
      await db.deleteFrom('oidc_payloads').where('model', '=', model).where('grant_id', '=', grantId).execute();
      if (model === 'AccessToken') onRevoked({ grants: [grantId] });
    },
  };
}

/** Deletes rows that expired more than a minute ago (the minute covers oidc-provider's clock tolerance). */
export async function deleteExpiredPayloads(db: OauthDb): Promise<number> {
  const result = await db
    .deleteFrom('oidc_payloads')
    .where('expires_at', '<', wallClock() - 60_000)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
