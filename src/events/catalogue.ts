/** The outbound event types (decisions.md "Outbound events"); an endpoint subscribes to some or all of them. */
export const EVENT_TYPES = [
  'wallet.low_balance',
  'wallet.topup_succeeded',
  'wallet.topup_failed',
  'limit.reached',
] as const;
/** One of {@link EVENT_TYPES}. */
export type EventType = (typeof EVENT_TYPES)[number];

/** The event "send test event" sends; every endpoint receives it whatever it subscribed to. */
export const TEST_EVENT_TYPE = 'webhook.test';

/**
 * The body of every delivery: `{ type, timestamp, data }`, `timestamp` being when the event happened (ISO
 * 8601), amounts in credits. Fixed when the event is recorded, so each retry sends the same bytes.
 */
export function eventBody(type: string, at: number, data: Record<string, unknown>): string {
  return JSON.stringify({ type, timestamp: new Date(at).toISOString(), data });
}
