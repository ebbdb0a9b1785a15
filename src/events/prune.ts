import type { EventsPlatform } from './deps.ts';
import { eventsDb } from './schema.ts';

/** How long finished deliveries (delivered or failed) stay listed before they are deleted. */
export const DELIVERY_RETENTION_MS = 30 * 24 * 3600 * 1000;

/**
 * Deletes finished deliveries older than {@link DELIVERY_RETENTION_MS}, then the events left with no delivery.
 * An event keeps its dedupe key as long as it lives, so a limit's event is deleted long after its period.
 * Safe in several processes at once (plain deletes of rows nobody sends any more).
 */
export async function pruneDeliveries(ctx: EventsPlatform): Promise<{ deliveries: number; events: number }> {
  const before = ctx.clock.now() - DELIVERY_RETENTION_MS;
  const deliveries = await eventsDb(ctx.db)
    .deleteFrom('webhook_messages')
    .where('status', 'in', ['delivered', 'failed'])
    .where('created_at', '<', before)
    .executeTakeFirst();
  const events = await eventsDb(ctx.db)
    .deleteFrom('webhook_events')
    .where('created_at', '<', before)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('webhook_messages')
            .select('webhook_messages.id')
            .whereRef('webhook_messages.event_id', '=', 'webhook_events.id'),
        ),
      ),
    )
    .executeTakeFirst();
  return { deliveries: Number(deliveries.numDeletedRows), events: Number(events.numDeletedRows) };
}
