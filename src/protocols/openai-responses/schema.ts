import type { Kysely } from 'kysely';
import type { Db } from '../../platform/db/connect.ts';
import { ownTables } from '../../platform/db/own-tables.ts';

/**
 * A response kept because its request said `store: true`: whose it is (user and app), the conversation it
 * answered (input items, the previous response's included, so continuing from it is one read) and the
 * Response object it returned. Rows expire after `RESPONSES_RETENTION_DAYS` (job `expire-responses`).
 */
export interface StoredResponsesTable {
  /** `resp_…`, the id the client holds. */
  id: string;
  user_id: string;
  /** The OAuth app acting for the user (the token's, or the one that created the key); null for the user's own keys. */
  app_id: string | null;
  model: string;
  /** JSON: every input item of the conversation up to this response (previous turns included). */
  input_items: string;
  /** JSON: the Response object as returned (its `output` items continue the conversation). */
  response: string;
  /** Bytes of the two JSON texts, bounded by `RESPONSES_STORE_MAX_BYTES`. */
  size: number;
  created_at: number;
  expires_at: number;
}

/** The tables this feature owns: only its view (`responsesDb`) sees them (tooling: src/testing/all-tables.ts). */
export interface ResponsesTables {
  stored_responses: StoredResponsesTable;
}

/** The stored responses' view of the database: its own tables, and only those (see `ownTables`). */
export type ResponsesDb = Kysely<ResponsesTables>;

/** `db` (the shared connection, or a transaction handed over as `Db`) seen with responses' own tables. */
export function responsesDb(db: Db): ResponsesDb {
  return ownTables<ResponsesTables>(db);
}
