import type { Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { ownTables } from '../platform/db/own-tables.ts';

/** An OAuth client (an "app"), registered by an operator or from the dashboard. */
export interface OauthClientsTable {
  /** `app_…` — the OAuth client_id. */
  client_id: string;
  name: string;
  type: 'public' | 'confidential';
  /** SHA-256 hex of the client secret (confidential clients); the secret itself is shown once. */
  client_secret_hash: string | null;
  /**
   * The app's public JWK Set (JSON, see client-keys.ts) when it authenticates with `private_key_jwt`; then
   * `client_secret_hash` is null. Null for every other app.
   */
  jwks: string | null;
  /** JSON array of exact redirect URIs. */
  redirect_uris: string;
  /** Space-separated scopes the client may ask for. */
  scopes: string;
  /** The user who registered it from the dashboard; null for operator-registered clients. */
  owner_user_id: string | null;
  created_at: number;
}

/**
 * A user's authorization of an app: the scopes granted at consent. (The spending limits the user set for
 * it are billing's, in `spending_limits`, since migration 1010.)
 */
export interface AuthorizedAppsTable {
  user_id: string;
  client_id: string;
  scopes: string;
  authorized_at: number;
  last_used_at: number | null;
  /** Set when the user revokes the app; a later consent clears it. */
  revoked_at: number | null;
}

/** oidc-provider's stored models (grants, codes, tokens, sessions, interactions…), one row per id. */
export interface OidcPayloadsTable {
  id: string;
  model: string;
  payload: string;
  grant_id: string | null;
  user_code: string | null;
  uid: string | null;
  expires_at: number | null;
  consumed_at: number | null;
  /** The user and app the row belongs to (grants, codes, tokens), so an app's revocation finds every grant. */
  account_id: string | null;
  client_id: string | null;
}

/** The tables this feature owns: only its view (`oauthDb`) sees them (tooling: src/testing/all-tables.ts). */
export interface OauthTables {
  oauth_clients: OauthClientsTable;
  authorized_apps: AuthorizedAppsTable;
  oidc_payloads: OidcPayloadsTable;
}

/** OAuth's view of the database: its own tables, and only those (see `ownTables`). */
export type OauthDb = Kysely<OauthTables>;

/** `db` (the shared connection, or a transaction handed over as `Db`) seen with oauth's own tables. */
export function oauthDb(db: Db): OauthDb {
  return ownTables<OauthTables>(db);
}
