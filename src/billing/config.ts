import Type, { type Static } from 'typebox';
import { TIMER_MAX_SECONDS } from '../platform/config.ts';

/** Billing's settings: how long a hold lives without its heartbeat. Part of the one configuration schema (src/config.ts). */
export const BillingConfigSection = Type.Object({
  HOLD_TTL_SECONDS: Type.Integer({
    minimum: 10,
    maximum: TIMER_MAX_SECONDS,
    default: 600,
    description:
      "Lifetime of a hold for a synchronous call without a heartbeat (a running call's meter extends it every third of it); the sweep releases it after.",
  }),
});

/** This section, parsed. */
export type BillingConfig = Static<typeof BillingConfigSection>;
