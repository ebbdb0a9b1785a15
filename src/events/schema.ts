import type { Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { ownTables } from '../platform/db/own-tables.ts';

/**
 * A URL that receives outbound events: a user's (their own events) or the operator's (`owner_user_id` null:
 * every user's events). The Standard Webhooks secret must be read to sign, so it is sealed, not hashed.
 */
export interface WebhookEndpointsTable {
  /** `wep_…` */
  id: string;
  /** The user whose events it receives; null for an operator endpoint (all users' events). */
  owner_user_id: string | null;
  url: string;
  /** JSON array of event types. */
  event_types: string;
  enabled: number;
  /** `whsec_…` sealed with ENCRYPTION_KEY. */
  secret_sealed: string;
  /** The secret replaced by the last rotation, still signed with until `previous_expires_at`. */
  previous_secret_sealed: string | null;
  previous_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

/**
 * One event that happened, with the body every endpoint is sent (`{ type, timestamp, data }`, fixed once so
 * that each retry sends the same bytes). `dedupe_key` is unique: the insert of an event that must happen at
 * most once (a limit per period) is its own guard.
 */
export interface WebhookEventsTable {
  /** `evt_…` */
  id: string;
  user_id: string | null;
  type: string;
  dedupe_key: string | null;
  body: string;
  created_at: number;
}

/** Delivery states of a message: pending (due at `next_attempt_at`), sending (claimed), delivered, failed. */
export type MessageStatus = 'pending' | 'sending' | 'delivered' | 'failed';

/**
 * The outbox: one event for one endpoint. Its id is the `webhook-id` of every attempt, so a receiver can
 * drop a repeat. An attempt is claimed by a conditional update (status and claim token), so two instances
 * never send one attempt twice.
 */
export interface WebhookMessagesTable {
  /** `msg_…`, the `webhook-id`. */
  id: string;
  event_id: string;
  endpoint_id: string;
  status: MessageStatus;
  attempts: number;
  next_attempt_at: number;
  /** The claim of the attempt under way: who (a random token) and until when (a crashed sender's lapses). */
  claim_token: string | null;
  claimed_until: number | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  /** Why the last attempt failed (timeout, refused address…), never a secret. */
  last_error: string | null;
  /** The first characters of the receiver's last answer; nothing more is kept. */
  last_response_excerpt: string | null;
  delivered_at: number | null;
  created_at: number;
}

/**
 * A user's low-balance alert: the threshold (micro-credits) and whether it is armed (1: `available` was last
 * seen at or above it, so the next settle, refund or dispute that leaves it below fires `wallet.low_balance` and disarms it).
 */
export interface EventSettingsTable {
  user_id: string;
  low_balance_threshold: number | null;
  low_balance_armed: number;
  updated_at: number;
}

/** The tables this feature owns: only its view (`eventsDb`) sees them (tooling: src/testing/all-tables.ts). */
export interface EventsTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_events: WebhookEventsTable;
  webhook_messages: WebhookMessagesTable;
  event_settings: EventSettingsTable;
}

/** Events' view of the database: its own tables, and only those (see `ownTables`). */
export type EventsDb = Kysely<EventsTables>;

/** `db` (the shared connection, or a transaction handed over as `Db`) seen with events' own tables. */
export function eventsDb(db: Db): EventsDb {
  return ownTables<EventsTables>(db);
}
