import type { TopupsDeps } from './deps.ts';
import { getTopup, startCheckout } from './checkout.ts';
import { listTopups, type TopupsPage } from './history.ts';
import { autoTopupState, maybeAutoTopup, startAutoTopupSetup, updateAutoTopup, type AutoTopupState } from './auto.ts';
import { handleEvent, type EventAck } from './events.ts';
import { stripeClient, topupSettings, type StripePackage, type TopupSettings } from './settings.ts';
import type { TopupEvent, TopupObserver, TopupRuntime } from './runtime.ts';
import type { TopupsTable } from './schema.ts';
import type Stripe from 'stripe';
import type { Job } from '../platform/jobs.ts';
import { reconcileAutoTopupsJob } from './reconcile.ts';

export type { TopupEvent, TopupObserver };

/**
 * Self-serve top-ups through Stripe (the top-ups feature's `topups`): Checkout for one-off purchases, a saved payment
 * method for auto top-up, and the webhook's events. Money moves only through billing's processor movements.
 */
export interface Topups {
  readonly settings: TopupSettings;
  /** The background jobs: `reconcile-auto-topups` (see reconcile.ts). */
  readonly jobs: Job[];
  /** Creates a pending top-up and its Checkout Session; resolves with the URL to send the user to. */
  startCheckout(userId: string, amount: number): Promise<{ topup: TopupsTable; url: string }>;
  /** A page of the user's top-ups, newest first (see history.ts). */
  list(userId: string, page?: { limit?: number; cursor?: string }): Promise<TopupsPage>;
  get(userId: string, id: string): Promise<TopupsTable>;
  autoTopup(userId: string): Promise<AutoTopupState>;
  updateAutoTopup(
    userId: string,
    change: { enabled: boolean; threshold: number; amount: number },
  ): Promise<AutoTopupState>;
  startAutoTopupSetup(userId: string, threshold: number, amount: number): Promise<{ url: string }>;
  /** Applies a verified Stripe event exactly once (see events.ts). */
  handleEvent(event: Stripe.Event): Promise<EventAck>;
  /** Checks the user's auto top-up after a settle; the billing observer calls it (tests may await it). */
  checkAutoTopup(userId: string): Promise<TopupsTable | null>;
  /**
   * Listens to top-ups that succeeded (credited) or failed, after their commit; amounts in micro-credits. For
   * the outbound events (`wallet.topup_succeeded`, `wallet.topup_failed`). A listener's error is logged.
   */
  observe(listener: TopupObserver): void;
}

/** Builds the service; with Stripe configured it also watches billing's settles for auto top-up. */
export function createTopups(ctx: TopupsDeps, StripeClass: StripePackage | null): Topups {
  const observers: TopupObserver[] = [];
  const rt: TopupRuntime = {
    ctx,
    settings: topupSettings(ctx.config),
    stripe: stripeClient(ctx.config, StripeClass),
    notify: (event: TopupEvent) => {
      for (const observer of observers) {
        try {
          observer(event);
        } catch (error) {
          ctx.log.error({ err: error, event: event.type }, 'a top-up observer failed');
        }
      }
    },
  };
  const checkAutoTopup = (userId: string) => maybeAutoTopup(rt, userId);
  if (rt.settings.enabled) {
    ctx.billing.observe((event) => {
      if (event.type !== 'settled' || event.captured === 0) return;
      const work = checkAutoTopup(event.userId).catch((error) =>
        ctx.log.error({ err: error, userId: event.userId }, 'auto top-up failed to start'),
      );
      ctx.inflight.add(work);
      void work.finally(() => ctx.inflight.delete(work));
    });
  }
  return {
    settings: rt.settings,
    jobs: [reconcileAutoTopupsJob(rt)],
    startCheckout: (userId, amount) => startCheckout(rt, userId, amount),
    list: (userId, page) => listTopups(rt, userId, page),
    get: (userId, id) => getTopup(rt, userId, id),
    autoTopup: (userId) => autoTopupState(rt, userId),
    updateAutoTopup: (userId, change) => updateAutoTopup(rt, userId, change),
    startAutoTopupSetup: (userId, threshold, amount) => startAutoTopupSetup(rt, userId, threshold, amount),
    handleEvent: (event) => handleEvent(rt, event),
    checkAutoTopup,
    observe: (listener) => void observers.push(listener),
  };
}
