import type { EventsPlatform } from './deps.ts';
import type { Db } from '../platform/db/connect.ts';
import { eventsDb, type EventsDb } from './schema.ts';
import { newId } from '../platform/ids.ts';
import { eventBody } from './catalogue.ts';

/** An event to record: its type, the user it is about (null: none), its data (credits), and how to limit it. */
export interface NewEvent {
  type: string;
  userId: string | null;
  data: Record<string, unknown>;
  /** Recorded at most once under this key, whatever runs concurrently (the key's insert is the guard). */
  dedupeKey?: string;
  /** Send to this endpoint only, whatever it subscribed to (the test event). */
  endpointId?: string;
  /**
   * Runs first, in the same transaction; the event is recorded only when it answers true. A state change
   * that must happen exactly when the event does (disarming the low-balance alert) goes here.
   */
  guard?: (trx: EventsDb) => Promise<boolean>;
}

/** What {@link recordEvent} recorded: the event and one message per endpoint; null when nothing was. */
export interface RecordedEvent {
  eventId: string;
  messageIds: string[];
}

/**
 * Records an event and, in the same transaction, one outbox message per endpoint that receives it: the
 * user's own enabled endpoints subscribed to the type, and the operator's. When none receives it, nothing is
 * written (and a dedupe key is not used up). The messages are due at once; the sender takes them from here.
 */
export async function recordEvent(ctx: EventsPlatform, event: NewEvent): Promise<RecordedEvent | null> {
  let query = eventsDb(ctx.db).selectFrom('webhook_endpoints').select(['id', 'event_types']);
  if (event.endpointId) query = query.where('id', '=', event.endpointId);
  else {
    query = query.where('enabled', '=', 1);
    const userId = event.userId;
    query =
      userId === null
        ? query.where('owner_user_id', 'is', null)
        : query.where((eb) => eb.or([eb('owner_user_id', '=', userId), eb('owner_user_id', 'is', null)]));
  }
  const endpoints = (await query.execute()).filter(
    (row) => event.endpointId || (JSON.parse(row.event_types) as string[]).includes(event.type),
  );
  if (endpoints.length === 0) return null;

  const now = ctx.clock.now();
  const eventId = newId('evt');
  return eventsDb(ctx.db)
    .transaction()
    .execute(async (trx) => {
      if (event.guard && !(await event.guard(trx))) return null;
      const inserted = await trx
        .insertInto('webhook_events')
        .values({
          id: eventId,
          user_id: event.userId,
          type: event.type,
          dedupe_key: event.dedupeKey ?? null,
          body: eventBody(event.type, now, event.data),
          created_at: now,
        })
        .onConflict((oc) => oc.column('dedupe_key').doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return null;
      const messages = endpoints.map((endpoint) => ({
        id: newId('msg'),
        event_id: eventId,
        endpoint_id: endpoint.id,
        status: 'pending' as const,
        attempts: 0,
        next_attempt_at: now,
        claim_token: null,
        claimed_until: null,
        last_attempt_at: null,
        last_status_code: null,
        last_error: null,
        last_response_excerpt: null,
        delivered_at: null,
        created_at: now,
      }));
      await trx.insertInto('webhook_messages').values(messages).execute();
      return { eventId, messageIds: messages.map((m) => m.id) };
    });
}
