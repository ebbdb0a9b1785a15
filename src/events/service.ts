import type { EventsDeps, TopupEvent } from './deps.ts';

export type { TopupEvent };
import type { BillingEvent } from '../billing/service.ts';
import { microsToCredits } from '../platform/money.ts';
import { deliverDue, type DeliveryRun } from './delivery.ts';
import { recordEvent, type NewEvent, type RecordedEvent } from './outbox.ts';
import { checkLowBalance } from './low-balance.ts';
import { Subscriptions } from './subscriptions.ts';

/** Outbound events (the events feature's `events`): record an event for the endpoints that receive it, and send it. */
export interface EventsService {
  /** Who can receive events (the settle path's cheap gate), kept fresh through the bus. */
  readonly subscriptions: Subscriptions;
  /** Records an event and starts sending it at once; null when no endpoint receives it (or it was deduplicated). */
  emit(event: NewEvent): Promise<RecordedEvent | null>;
  /** Sends what is due now (what the timer and the kick after each event do). */
  deliver(): Promise<DeliveryRun>;
  /** Resolves when the work started by observers and kicks so far has finished (tests, shutdown). */
  idle(): Promise<void>;
  /** Acts on one of billing's observed moments; what `billing.observe` is given. */
  onBilling(event: BillingEvent): void;
  /** Acts on one of the top-ups observer's events. */
  onTopup(event: TopupEvent): void;
}

/**
 * Connects the top-ups feature's observer to the events service: `subscribeTopupEvents(events,
 * deps.observeTopups)` is the whole wiring.
 */
export function subscribeTopupEvents(
  events: EventsService,
  observe: (listener: (event: TopupEvent) => void) => void,
): void {
  observe((event) => events.onTopup(event));
}

/** Builds the service; the feature hooks billing's and the top-ups' observers to it. */
export function createEventsService(ctx: EventsDeps): EventsService {
  const subscriptions = new Subscriptions(ctx);
  const running = new Set<Promise<unknown>>();
  const background = (work: () => Promise<unknown>) => {
    const promise = work()
      .catch((error) => ctx.log.error({ err: error }, 'outbound event work failed'))
      .finally(() => running.delete(promise));
    running.add(promise);
  };

  // One sender run at a time per process; a kick during a run asks for one more run after it.
  let sending: Promise<DeliveryRun> | null = null;
  let again = false;
  const deliver = (): Promise<DeliveryRun> => {
    if (sending) {
      again = true;
      return sending;
    }
    sending = deliverDue(ctx).finally(() => {
      sending = null;
      if (again) {
        again = false;
        background(deliver);
      }
    });
    return sending;
  };

  const emit = async (event: NewEvent) => {
    const recorded = await recordEvent(ctx, event);
    if (recorded) background(deliver);
    return recorded;
  };

  const onLimit = async (event: Extract<BillingEvent, { type: 'restricted' }>) => {
    const subject = event.subject;
    const now = ctx.clock.now();
    // At most once per limit per period: a spending limit's period ends at its resetsAt (a total limit
    // never does); the wallet has no period of its own, so it counts per UTC day.
    const period =
      subject === 'wallet' ? new Date(now).toISOString().slice(0, 10) : String(event.details.resetsAt ?? 'total');
    const owner =
      subject === 'wallet' ? event.userId : subject === 'app' ? `${event.userId}:${event.appId}` : event.keyId;
    await emit({
      type: 'limit.reached',
      userId: event.userId,
      dedupeKey: `limit.reached:${subject}:${owner}:${event.details.limitType ?? 'wallet'}:${period}`,
      data: {
        userId: event.userId,
        subject,
        code: event.code,
        status: event.code === 'INSUFFICIENT_CREDITS' ? 402 : 429,
        appId: event.appId,
        keyId: event.keyId,
        ...event.details,
      },
    });
  };

  return {
    subscriptions,
    emit,
    deliver,
    async idle() {
      while (running.size > 0 || sending) await Promise.allSettled([...running, sending]);
    },
    onBilling(event) {
      if (event.type === 'settled') {
        if (subscriptions.hasThreshold(event.userId)) background(() => checkLowBalance(ctx, event.userId, emit));
      } else if (subscriptions.receives(event.userId)) background(() => onLimit(event));
    },
    onTopup(event) {
      // Every movement of a top-up's credits can cross the threshold, either way: a refund or a dispute fires it
      // (once per crossing, as a settle does), a top-up or a won dispute re-arms it.
      if (subscriptions.hasThreshold(event.userId) && event.type !== 'topup_failed')
        background(() => checkLowBalance(ctx, event.userId, emit));
      if (event.type !== 'topup_succeeded' && event.type !== 'topup_failed') return;
      if (!subscriptions.receives(event.userId)) return;
      const data: Record<string, unknown> = {
        userId: event.userId,
        topupId: event.topupId,
        credits: microsToCredits(event.credits),
      };
      if (event.type === 'topup_failed') data.reason = event.reason ?? null;
      background(() =>
        emit({
          type: `wallet.${event.type}`,
          userId: event.userId,
          dedupeKey: `wallet.${event.type}:${event.topupId}`,
          data,
        }),
      );
    },
  };
}
