import type { AppContext } from '../platform/context.ts';
import type { Billing } from '../billing/service.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { EventsConfig } from './config.ts';

/**
 * What the top-ups feature's observer reports (its `topups.observe`). `credits` is in micro-credits, like
 * every amount billing's own observer reports. `credits_taken_back` (a refund or dispute) and
 * `credits_given_back` (a won dispute) move the balance, so the low-balance alert checks it after them.
 */
export interface TopupEvent {
  type: 'topup_succeeded' | 'topup_failed' | 'credits_taken_back' | 'credits_given_back';
  userId: string;
  topupId: string;
  credits: number;
  reason?: string;
}

/** The platform with the events' section of the config: what the outbox, endpoints and sender use. */
export interface EventsPlatform extends AppContext {
  config: PlatformConfig & EventsConfig;
}

/**
 * What the events feature is built from: the platform, billing (balances, and its observer: low balance and
 * limits reached) and the top-ups' observer (`wallet.topup_*`).
 */
export interface EventsDeps extends EventsPlatform {
  billing: Billing;
  observeTopups(listener: (event: TopupEvent) => void): void;
}
