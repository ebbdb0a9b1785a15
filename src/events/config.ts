import Type, { type Static } from 'typebox';
import { TIMER_MAX_SECONDS } from '../platform/config.ts';

/** The outbound event webhooks' settings. Part of the one configuration schema (src/config.ts). */
export const EventsConfigSection = Type.Object({
  WEBHOOK_ALLOW_HTTP: Type.Boolean({
    default: false,
    description: 'Outbound event webhooks: accept `http://` endpoint URLs (off: `https://` only).',
  }),
  WEBHOOK_ALLOW_PRIVATE_ADDRESSES: Type.Boolean({
    default: false,
    description:
      'Outbound event webhooks: let endpoints resolve to loopback, private or link-local addresses (off: refused, at registration and at each connection).',
  }),
  WEBHOOK_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    maximum: 60,
    default: 10,
    description:
      'Outbound event webhooks: time a receiver has to answer one attempt; slower is a failed attempt, retried later.',
  }),
  WEBHOOK_DELIVERY_INTERVAL_SECONDS: Type.Integer({
    minimum: 0,
    maximum: TIMER_MAX_SECONDS,
    default: 5,
    description:
      'Outbound event webhooks: how often each process sends the deliveries that came due (retries); 0 turns the timer off (new events are still sent at once, and `POST /api/admin/cron/deliver-webhooks` sends the due ones).',
  }),
});

/** This section, parsed. */
export type EventsConfig = Static<typeof EventsConfigSection>;
