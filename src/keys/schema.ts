import type { Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { ownTables } from '../platform/db/own-tables.ts';

/** A user API key (`ak_…`). The value is looked up by its SHA-256 and kept only AES-256-GCM sealed. */
export interface ApiKeysTable {
  /** `key_…` */
  id: string;
  user_id: string;
  /** The OAuth client that created it; null when created from the dashboard. */
  app_id: string | null;
  name: string;
  /** SHA-256 hex of the key value; unique. */
  key_hash: string;
  /** The key value sealed with ENCRYPTION_KEY (contract §2.1 returns `key` when listing). */
  key_sealed: string;
  /** JSON array of permissions (contract §5.3). */
  permissions: string;
  last_used_at: number | null;
  created_at: number;
  /** When the key stops authenticating (epoch ms); null when it never expires. It stays listed until revoked. */
  expires_at: number | null;
  /**
   * JSON array of the model ids and `<vendor>/*` wildcards the key may call (models/allowed.ts); null: every model.
   * Never empty, and never changed after creation (so the key cache holds no stale list).
   */
  models: string | null;
  revoked_at: number | null;
}

/** The tables this feature owns: only its view (`keysDb`) sees them (tooling: src/testing/all-tables.ts). */
export interface KeysTables {
  api_keys: ApiKeysTable;
}

/** Keys' view of the database: its own tables, and only those (see `ownTables`). */
export type KeysDb = Kysely<KeysTables>;

/** `db` (the shared connection, or a transaction handed over as `Db`) seen with keys' own tables. */
export function keysDb(db: Db): KeysDb {
  return ownTables<KeysTables>(db);
}
