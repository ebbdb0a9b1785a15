import { randomBytes } from 'node:crypto';
import type { AdapterPayload } from 'oidc-provider';
import type { Db } from '../platform/db/connect.ts';
import { asDb } from '../platform/db/own-tables.ts';
import type { OauthDb } from './schema.ts';
import type { Clock } from '../platform/clock.ts';
import { sha256Hex } from '../platform/crypto.ts';
import { errors } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { SCOPES } from './scopes.ts';
import { serializeOn } from '../platform/db/serialize-on.ts';
import { parseClientJwks, type PublicJwkSet } from './client-keys.ts';

/** What registers an app (decisions.md "Operator API": `POST /api/admin/apps`). */
export interface NewClient {
  name: string;
  redirectUris: string[];
  scopes: string[];
  type: 'public' | 'confidential';
  /**
   * A confidential app's public JWK Set: it then authenticates with `private_key_jwt` and gets no secret.
   * Checked by {@link parseClientJwks}.
   */
  jwks?: unknown;
}

/**
 * How an app proves itself at the token, revocation and introspection endpoints (RFC 7591 names): a public
 * app does not (`none`, PKCE only), a confidential one with its secret or a JWT signed by its private key.
 */
export type TokenEndpointAuthMethod = 'none' | 'client_secret_basic' | 'private_key_jwt';

/** The method of a stored app: its keys if it has any, else its secret, else none. */
function authMethodOf(row: {
  type: string;
  client_secret_hash: string | null;
  jwks: string | null;
}): TokenEndpointAuthMethod {
  if (row.type !== 'confidential') return 'none';
  if (row.jwks !== null) return 'private_key_jwt';
  return row.client_secret_hash !== null ? 'client_secret_basic' : 'none';
}

/** An app as its owner sees it (never its secret). */
export interface ClientView {
  clientId: string;
  name: string;
  type: 'public' | 'confidential';
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  /** The public keys of a `private_key_jwt` app. */
  jwks?: PublicJwkSet;
  redirectUris: string[];
  scopes: string[];
  createdAt: string;
}

/**
 * Most apps one user may register from the dashboard (the operator's are not counted). Every redirect URI of
 * every app is loaded by the CORS allow-list (src/ops/cors.ts) and each registration reloads it, so an
 * unbounded count would let one user make that load, and the server's memory, grow without end.
 */
export const MAX_APPS_PER_OWNER = 20;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * What an app name may not hold: control characters and the bidirectional formatting ones. The consent and
 * sign-in pages show the name in a sentence, and a right-to-left override in it reversed the rest of that
 * sentence ("Allow <name> to use your account?"), letting a name pass for another or garble what is asked.
 */
const NAME_TRICKS = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/**
 * Why a redirect URI cannot be registered, or null when it can. OAuth 2.1: https, or http on a loopback
 * address; never a fragment or credentials. The URI is kept exactly as given, because matching is exact.
 */
export function redirectUriProblem(uri: string): string | null {
  const url = URL.parse(uri);
  if (!url) return 'is not an absolute URL';
  if (uri.includes('#')) return 'must not contain a fragment';
  if (url.username || url.password) return 'must not contain credentials';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return 'must use https (http is allowed only on a loopback address)';
}

/**
 * A loopback IP literal redirect URI with its port taken out (`http://127.0.0.1:53121/cb` → `http://127.0.0.1/cb`),
 * or undefined for any other URI. Worked on the string as given, not on a parsed URL, so that everything but
 * the port still compares character for character: `http://0x7f000001:5/cb` or `http://127.1:5/cb` (which a
 * URL parser turns into 127.0.0.1), a `user@` part, a fragment or a different letter case never match.
 * `localhost` is left out on purpose: RFC 8252 §8.3 calls it NOT RECOMMENDED (the name may resolve elsewhere,
 * and an app listening on one address family can be answered on the other), so it keeps exact matching.
 */
function withoutLoopbackPort(uri: string): string | undefined {
  const match = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?([/?][^#]*)?$/.exec(uri);
  if (!match) return undefined;
  const [, host, port, rest = ''] = match;
  if (port !== undefined && Number(port) > 65535) return undefined;
  return `http://${host}${rest}`;
}

/**
 * Whether `requested` is one of the `registered` redirect URIs but for the port, both being http on the
 * loopback IP literal 127.0.0.1 or [::1] (RFC 8252 §7.3, OAuth 2.1 "Loopback Interface Redirection"): a
 * CLI or desktop app listens on whatever port the system gives it, so the port cannot be registered.
 * Everything else must match exactly, which the provider checks first.
 */
export function loopbackRedirectMatches(requested: string, registered: readonly string[]): boolean {
  const wanted = withoutLoopbackPort(requested);
  return wanted !== undefined && registered.some((uri) => withoutLoopbackPort(uri) === wanted);
}

/**
 * Registers an app. A confidential app gets a secret, returned here once: only its SHA-256 is stored,
 * and the provider compares hashes (see provider.ts), so a database reader cannot act as the app. A
 * confidential app registered with `jwks` gets no secret at all: it authenticates with `private_key_jwt`.
 */
export async function registerClient(
  db: OauthDb,
  clock: Clock,
  input: NewClient,
  owner: { userId: string; dialect: 'sqlite' | 'postgres' } | null,
): Promise<{ clientId: string; clientSecret?: string; tokenEndpointAuthMethod: TokenEndpointAuthMethod }> {
  const name = input.name.trim();
  if (!name) throw errors.invalid('The app needs a name.', { param: 'name' });
  if (NAME_TRICKS.test(name))
    throw errors.invalid(
      'The app name must not contain control characters or bidirectional formatting characters (such as U+202E).',
      { param: 'name' },
    );
  for (const [index, uri] of input.redirectUris.entries()) {
    const problem = redirectUriProblem(uri);
    if (problem)
      throw errors.invalid(`The redirect URI ${JSON.stringify(uri)} ${problem}.`, { param: `redirectUris[${index}]` });
  }
  const unknown = input.scopes.filter((scope) => !(SCOPES as readonly string[]).includes(scope));
  if (unknown.length)
    throw errors.invalid(
      `Unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; the scopes are ${SCOPES.join(', ')}.`,
      { param: 'scopes' },
    );

  // Security invariant: an app has a secret or public keys, never both, so the one it registered is the only
  // one oidc-provider accepts from it (findClientMetadata gives it one token_endpoint_auth_method).
  let jwks: PublicJwkSet | undefined;
  if (input.jwks !== undefined) {
    if (input.type !== 'confidential')
      throw errors.invalid('Only a confidential app can register jwks (public keys for private_key_jwt).', {
        param: 'jwks',
      });
    jwks = parseClientJwks(input.jwks);
  }
  const clientId = newId('app');
  const clientSecret =
    input.type === 'confidential' && !jwks ? `tgs_${randomBytes(32).toString('base64url')}` : undefined;
  await db.transaction().execute(async (trx) => {
    if (owner !== null) {
      // Security invariant: at most MAX_APPS_PER_OWNER per user, also under concurrent registrations (SQLite
      // runs one write transaction at a time; PostgreSQL serialises one owner's registrations on this lock).
      await serializeOn(trx, owner.dialect, `oauth-apps:${owner.userId}`);
      const { count } = await trx
        .selectFrom('oauth_clients')
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('owner_user_id', '=', owner.userId)
        .executeTakeFirstOrThrow();
      if (Number(count) >= MAX_APPS_PER_OWNER)
        throw errors.invalid(`At most ${MAX_APPS_PER_OWNER} apps can be registered; delete one first.`);
    }
    await trx
      .insertInto('oauth_clients')
      .values({
        client_id: clientId,
        name,
        type: input.type,
        client_secret_hash: clientSecret ? sha256Hex(clientSecret) : null,
        jwks: jwks ? JSON.stringify(jwks) : null,
        redirect_uris: JSON.stringify([...new Set(input.redirectUris)]),
        scopes: [...new Set(input.scopes)].join(' '),
        owner_user_id: owner?.userId ?? null,
        created_at: clock.now(),
      })
      .execute();
  });
  const tokenEndpointAuthMethod = jwks ? 'private_key_jwt' : clientSecret ? 'client_secret_basic' : 'none';
  return clientSecret ? { clientId, clientSecret, tokenEndpointAuthMethod } : { clientId, tokenEndpointAuthMethod };
}

/** The apps a user registered from the dashboard, newest first. */
export async function listOwnedClients(db: OauthDb, userId: string): Promise<ClientView[]> {
  const rows = await db
    .selectFrom('oauth_clients')
    .selectAll()
    .where('owner_user_id', '=', userId)
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map((row) => ({
    clientId: row.client_id,
    name: row.name,
    type: row.type,
    tokenEndpointAuthMethod: authMethodOf(row),
    ...(row.jwks !== null ? { jwks: JSON.parse(row.jwks) as PublicJwkSet } : {}),
    redirectUris: JSON.parse(row.redirect_uris),
    scopes: row.scopes.split(' ').filter(Boolean),
    createdAt: new Date(Number(row.created_at)).toISOString(),
  }));
}

/**
 * Replaces the public keys of a `private_key_jwt` app (a rotation: register old and new side by side, move
 * the app to the new key, then register the new one alone). Takes effect at the app's next request: clients
 * are read from the database each time. With `ownerUserId`, only that user's app is found. Null when there is
 * no such app; 400 when the app authenticates otherwise (a secret or none: the method is chosen once, at
 * registration).
 */
export async function replaceClientJwks(
  db: OauthDb,
  clientId: string,
  jwksInput: unknown,
  ownerUserId?: string,
): Promise<{ jwks: PublicJwkSet } | null> {
  const jwks = parseClientJwks(jwksInput);
  let query = db.selectFrom('oauth_clients').select(['jwks']).where('client_id', '=', clientId);
  if (ownerUserId !== undefined) query = query.where('owner_user_id', '=', ownerUserId);
  const row = await query.executeTakeFirst();
  if (!row) return null;
  if (row.jwks === null)
    throw errors.invalid(
      'This app does not authenticate with private_key_jwt, so it has no keys to replace; register a new app with jwks.',
    );
  // The condition repeats the check, so a concurrent delete leaves nothing half-written.
  await db
    .updateTable('oauth_clients')
    .set({ jwks: JSON.stringify(jwks) })
    .where('client_id', '=', clientId)
    .where('jwks', 'is not', null)
    .execute();
  return { jwks };
}

/** The display names of the apps among `clientIds` that exist, by client id. */
export async function clientNames(db: OauthDb, clientIds: string[]): Promise<Map<string, string>> {
  if (clientIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('oauth_clients')
    .select(['client_id', 'name'])
    .where('client_id', 'in', clientIds)
    .execute();
  return new Map(rows.map((row) => [row.client_id, row.name]));
}

/** Every registered redirect URI of every app (CORS allows their origins). */
export async function allRedirectUris(db: OauthDb): Promise<string[]> {
  const rows = await db.selectFrom('oauth_clients').select('redirect_uris').execute();
  return rows.flatMap((row) => JSON.parse(row.redirect_uris) as string[]);
}

/**
 * Registers a first-party public app (PKCE, no secret) under a fixed id on first use, or adds `redirectUri`
 * to it when it lacks it: the gateway's own pages (the demo) registering themselves. Only ever widens it.
 */
export async function ensureFirstPartyPublicClient(
  db: OauthDb,
  clock: Clock,
  client: { clientId: string; name: string; scopes: string[]; redirectUri: string },
): Promise<void> {
  await db
    .insertInto('oauth_clients')
    .values({
      client_id: client.clientId,
      name: client.name,
      type: 'public',
      client_secret_hash: null,
      jwks: null,
      redirect_uris: JSON.stringify([client.redirectUri]),
      scopes: client.scopes.join(' '),
      owner_user_id: null,
      created_at: clock.now(),
    })
    .onConflict((oc) => oc.column('client_id').doNothing())
    .execute();
  const row = await db
    .selectFrom('oauth_clients')
    .select('redirect_uris')
    .where('client_id', '=', client.clientId)
    .executeTakeFirstOrThrow();
  const uris = JSON.parse(row.redirect_uris) as string[];
  if (!uris.includes(client.redirectUri)) {
    await db
      .updateTable('oauth_clients')
      .set({ redirect_uris: JSON.stringify([...uris, client.redirectUri]) })
      .where('client_id', '=', client.clientId)
      .execute();
  }
}

/** The app's display name, or null when there is no such app. */
export async function clientName(db: OauthDb, clientId: string): Promise<string | null> {
  const row = await db.selectFrom('oauth_clients').select('name').where('client_id', '=', clientId).executeTakeFirst();
  return row?.name ?? null;
}

/**
 * What the sign-in and consent pages say about an app: its name, and whether the operator registered it
 * (`verified`) or an ordinary user did from the dashboard, which nobody has vetted. Null when there is no
 * such app.
 */
export async function clientDisplay(
  db: OauthDb,
  clientId: string,
): Promise<{ name: string; verified: boolean } | null> {
  const row = await db
    .selectFrom('oauth_clients')
    .select(['name', 'owner_user_id'])
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return row ? { name: row.name, verified: row.owner_user_id === null } : null;
}

/**
 * How oidc-provider authenticates the app: by the hash of its secret (compared in provider.ts), by its
 * public keys, or not at all. One method per app, so a secret never authenticates a key-pair app, nor an
 * assertion a secret app (oidc-provider refuses a mechanism other than the registered one with
 * `invalid_client`).
 */
function clientAuthMetadata(row: { type: string; client_secret_hash: string | null; jwks: string | null }) {
  const method = authMethodOf(row);
  if (method === 'private_key_jwt') return { token_endpoint_auth_method: method, jwks: JSON.parse(row.jwks!) };
  if (method === 'client_secret_basic')
    return { token_endpoint_auth_method: method, client_secret: row.client_secret_hash };
  return { token_endpoint_auth_method: method };
}

/**
 * The client metadata oidc-provider validates and runs on. Policy lives here: only the code flow, a
 * refresh token only for an app allowed `offline_access`, `web` application type so that redirect URIs
 * match exactly. oidc-provider relaxes loopback ports only for `native` clients, and for `localhost` too, and
 * `native` brings other rules (consent asked at every authorization, other redirect URI checks); the loopback
 * port rule, when the operator turns it on, is {@link loopbackRedirectMatches} instead (provider.ts).
 */
export async function findClientMetadata(db: OauthDb, clientId: string): Promise<AdapterPayload | undefined> {
  // No app's id holds a NUL, and PostgreSQL would fail the query on one (a 500 at /api/oauth/authorize).
  if (clientId.includes('\u0000')) return undefined;
  const row = await db.selectFrom('oauth_clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
  if (!row) return undefined;
  const scopes = row.scopes.split(' ').filter(Boolean);
  return {
    client_id: row.client_id,
    client_name: row.name,
    application_type: 'web',
    redirect_uris: JSON.parse(row.redirect_uris),
    response_types: ['code'],
    grant_types: scopes.includes('offline_access') ? ['authorization_code', 'refresh_token'] : ['authorization_code'],
    scope: scopes.join(' '),
    ...clientAuthMetadata(row),
  };
}

/**
 * Deletes an app for good (the operator's call, or its owner's with `ownerUserId`): every user's authorization of it, every grant, code and
 * token it holds, and — through `revokeKeys`, in the same transaction — every API key it created. Returns
 * the users who had authorized it and the revoked keys' ids (for the caches to drop once this committed),
 * or null when there is no such app.
 *
 * Security invariant: the app's row is locked first (PostgreSQL `FOR UPDATE`; SQLite's transaction holds
 * the write lock), so a key the app mints concurrently either committed before (and is revoked here) or
 * fails its reference to the deleted app; none survives with its app link set to null, which would make it
 * look first party.
 */
export async function deleteClient(
  db: OauthDb,
  dialect: 'sqlite' | 'postgres',
  clientId: string,
  revokeKeys: (trx: Db) => Promise<string[]>,
  ownerUserId?: string,
): Promise<{ userIds: string[]; keyIds: string[] } | null> {
  return db.transaction().execute(async (trx) => {
    let lock = trx.selectFrom('oauth_clients').select('client_id').where('client_id', '=', clientId);
    // A user deletes only an app they registered: another's, or the operator's, is not found.
    if (ownerUserId !== undefined) lock = lock.where('owner_user_id', '=', ownerUserId);
    if (dialect === 'postgres') lock = lock.forUpdate();
    if (!(await lock.executeTakeFirst())) return null;
    const keyIds = await revokeKeys(asDb(trx));
    const userIds = (
      await trx.selectFrom('authorized_apps').select('user_id').where('client_id', '=', clientId).execute()
    ).map((row) => row.user_id);
    await trx.deleteFrom('oidc_payloads').where('client_id', '=', clientId).execute();
    await trx.deleteFrom('oauth_clients').where('client_id', '=', clientId).execute();
    return { userIds, keyIds };
  });
}
