import type Stripe from 'stripe';
import type { TopupsDeps } from './deps.ts';
import type { TopupSettings } from './settings.ts';

/**
 * What the top-up observers hear: amounts in micro-credits. `credits_taken_back` is a refund or a dispute
 * that took credits (from available, the rest as debt), `credits_given_back` a won dispute that gave them back.
 */
export type TopupEvent = {
  type: 'topup_succeeded' | 'topup_failed' | 'credits_taken_back' | 'credits_given_back';
  userId: string;
  topupId: string;
  credits: number;
  reason?: string;
};

/** A listener of {@link TopupEvent}s. */
export type TopupObserver = (event: TopupEvent) => void;

/** What the top-up code shares: the context, the settings, the Stripe client (null when off), the observers. */
export interface TopupRuntime {
  ctx: TopupsDeps;
  settings: TopupSettings;
  stripe: Stripe | null;
  notify(event: TopupEvent): void;
}
