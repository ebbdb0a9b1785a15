import type { EventsPlatform } from './deps.ts';
import { eventsDb } from './schema.ts';

/** The bus channel on which a change of someone's endpoints or alert is announced (the user id; '' for the operator). */
export const SUBSCRIPTIONS_CHANNEL = 'events:subscriptions';

/**
 * Who can receive events, kept in memory so the settle path does nothing for everyone else: the users with
 * an enabled endpoint, the users with a low-balance threshold, and whether the operator has an enabled
 * endpoint (then every user's events are recorded). Loaded at start, and one entry reloaded whenever the
 * bus says it changed (in this process or, with Redis, in another).
 */
export class Subscriptions {
  readonly #ctx: EventsPlatform;
  #withEndpoints = new Set<string>();
  #withThreshold = new Set<string>();
  #operator = false;

  constructor(ctx: EventsPlatform) {
    this.#ctx = ctx;
  }

  /** True when an event about `userId` would reach an endpoint. */
  receives(userId: string): boolean {
    return this.#operator || this.#withEndpoints.has(userId);
  }

  /** True when `userId` set a low-balance threshold. */
  hasThreshold(userId: string): boolean {
    return this.#withThreshold.has(userId);
  }

  /** Reads everything (at start). */
  async load(): Promise<void> {
    const db = eventsDb(this.#ctx.db);
    const owners = await db
      .selectFrom('webhook_endpoints')
      .select('owner_user_id')
      .distinct()
      .where('enabled', '=', 1)
      .execute();
    const thresholds = await db
      .selectFrom('event_settings')
      .select('user_id')
      .where('low_balance_threshold', 'is not', null)
      .execute();
    this.#operator = owners.some((row) => row.owner_user_id === null);
    this.#withEndpoints = new Set(owners.flatMap((row) => (row.owner_user_id === null ? [] : [row.owner_user_id])));
    this.#withThreshold = new Set(thresholds.map((row) => row.user_id));
  }

  /** Reads one owner's entries again: a user id, or null for the operator's endpoints. */
  async reload(owner: string | null): Promise<void> {
    const db = eventsDb(this.#ctx.db);
    let endpoints = db.selectFrom('webhook_endpoints').select('id').where('enabled', '=', 1);
    endpoints =
      owner === null ? endpoints.where('owner_user_id', 'is', null) : endpoints.where('owner_user_id', '=', owner);
    const hasEndpoint = (await endpoints.limit(1).execute()).length > 0;
    if (owner === null) {
      this.#operator = hasEndpoint;
      return;
    }
    if (hasEndpoint) this.#withEndpoints.add(owner);
    else this.#withEndpoints.delete(owner);
    const settings = await db
      .selectFrom('event_settings')
      .select('low_balance_threshold')
      .where('user_id', '=', owner)
      .executeTakeFirst();
    if (settings?.low_balance_threshold != null) this.#withThreshold.add(owner);
    else this.#withThreshold.delete(owner);
  }

  /** Reloads an owner here at once, then tells the other instances to. */
  async changed(owner: string | null): Promise<void> {
    await this.reload(owner);
    this.#ctx.bus.publish(SUBSCRIPTIONS_CHANNEL, owner ?? '');
  }

  /** Follows the bus (messages from this process arrive too and reload once more, which is harmless). */
  listen(onError: (error: unknown) => void): void {
    this.#ctx.bus.subscribe(
      SUBSCRIPTIONS_CHANNEL,
      (message) => void this.reload(message === '' ? null : message).catch(onError),
    );
  }
}
