import { randomUUID } from 'node:crypto';
import type { EventsPlatform } from './deps.ts';
import { signatureHeader } from '../webhooks/standard-webhooks.ts';
import { signingKeys } from './endpoints.ts';
import { sendAttempt, type AttemptResult } from './send.ts';
import { eventsDb } from './schema.ts';

/**
 * The wait after each failed attempt (the n-th entry after attempt n), before jitter: 5 s, 30 s, 2 min,
 * 10 min, 1 h, 2 h, 4 h, 8 h, 8 h — about 23 hours in all. After the last, the message is failed.
 */
export const RETRY_DELAYS_MS = [
  5_000, 30_000, 120_000, 600_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000, 28_800_000,
] as const;

/** Attempts a message gets: the first and one per retry delay. */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** Jitter: each wait is drawn within ±10% of its schedule, so receivers that failed together are not retried together. */
export const JITTER = 0.1;

/** The wait after failed attempt number `attempt` (1-based); `random` in [0, 1). */
export function retryDelay(attempt: number, random: () => number = Math.random): number {
  const base = RETRY_DELAYS_MS[Math.min(attempt, RETRY_DELAYS_MS.length) - 1];
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}

/** Most messages one run of the sender claims (it runs again soon: the timer, or the next event's kick). */
const BATCH = 50;

/** What one run of {@link deliverDue} did. */
export interface DeliveryRun {
  attempted: number;
  delivered: number;
  retrying: number;
  failed: number;
}

interface DueMessage {
  id: string;
  attempts: number;
  status: string;
  body: string;
  endpoint_id: string;
  url: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_expires_at: number | null;
}

/**
 * Sends every message that is due: pending and past its `next_attempt_at`, or claimed by a sender whose claim
 * lapsed (it crashed or was cut mid-attempt).
 *
 * Security/consistency invariant: an attempt is sent only by the process whose conditional update moved the
 * message from the state it read (status, attempt count) to `sending` with its own claim token; every other
 * process's update finds the row changed and skips it. So several instances never send one attempt twice,
 * and the attempt's outcome is written only under that token.
 */
export async function deliverDue(ctx: EventsPlatform): Promise<DeliveryRun> {
  const now = ctx.clock.now();
  const due = await eventsDb(ctx.db)
    .selectFrom('webhook_messages as m')
    .innerJoin('webhook_events as e', 'e.id', 'm.event_id')
    .innerJoin('webhook_endpoints as p', 'p.id', 'm.endpoint_id')
    .select([
      'm.id',
      'm.attempts',
      'm.status',
      'e.body',
      'm.endpoint_id',
      'p.url',
      'p.secret_sealed',
      'p.previous_secret_sealed',
      'p.previous_expires_at',
    ])
    .where((eb) =>
      eb.or([
        eb.and([eb('m.status', '=', 'pending'), eb('m.next_attempt_at', '<=', now)]),
        eb.and([eb('m.status', '=', 'sending'), eb('m.claimed_until', '<=', now)]),
      ]),
    )
    .orderBy('m.next_attempt_at')
    .limit(BATCH)
    .execute();

  const run: DeliveryRun = { attempted: 0, delivered: 0, retrying: 0, failed: 0 };
  const claimed: Array<{ message: DueMessage; token: string }> = [];
  for (const message of due) {
    if (message.attempts >= MAX_ATTEMPTS) {
      // A lapsed claim on the last attempt: that attempt was made (or died), so the message is over.
      await eventsDb(ctx.db)
        .updateTable('webhook_messages')
        .set({ status: 'failed', claim_token: null, claimed_until: null })
        .where('id', '=', message.id)
        .where('status', '=', message.status as 'sending')
        .where('attempts', '=', message.attempts)
        .execute();
      continue;
    }
    const token = randomUUID();
    const result = await eventsDb(ctx.db)
      .updateTable('webhook_messages')
      .set({
        status: 'sending',
        claim_token: token,
        claimed_until: now + ctx.config.WEBHOOK_TIMEOUT_SECONDS * 1000 + 30_000,
        attempts: message.attempts + 1,
        last_attempt_at: now,
      })
      .where('id', '=', message.id)
      .where('status', '=', message.status as 'pending' | 'sending')
      .where('attempts', '=', message.attempts)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 1) claimed.push({ message, token });
  }

  await Promise.all(
    claimed.map(async ({ message, token }) => {
      const attempt = message.attempts + 1;
      const outcome = await attemptOnce(ctx, message);
      const at = ctx.clock.now();
      const success = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
      const final = !success && attempt >= MAX_ATTEMPTS;
      await eventsDb(ctx.db)
        .updateTable('webhook_messages')
        .set({
          status: success ? 'delivered' : final ? 'failed' : 'pending',
          next_attempt_at: success || final ? at : at + retryDelay(attempt),
          delivered_at: success ? at : null,
          claim_token: null,
          claimed_until: null,
          last_status_code: outcome.status,
          last_error: outcome.error,
          last_response_excerpt: outcome.excerpt,
        })
        .where('id', '=', message.id)
        .where('claim_token', '=', token)
        .execute();
      run.attempted++;
      if (success) run.delivered++;
      else if (final) run.failed++;
      else run.retrying++;
      // Ids and outcome only: never the URL (it may carry a token of the receiver's), the secret or the body.
      const result = success ? 'delivered' : final ? 'failed' : 'retrying';
      const fields = {
        messageId: message.id,
        endpointId: message.endpoint_id,
        attempt,
        status: outcome.status,
        error: outcome.error ?? undefined,
      };
      ctx.log.info({ ...fields, outcome: result }, 'webhook attempt');
    }),
  );
  return run;
}

/** Signs and sends one attempt of a message. */
function attemptOnce(ctx: EventsPlatform, message: DueMessage): Promise<AttemptResult> {
  const body = Buffer.from(message.body);
  // The receiver checks the timestamp against its own wall clock (5 minutes' tolerance), so it is wall time,
  // not the service clock that schedules the retries.
  const timestamp = Math.floor(Date.now() / 1000);
  const keys = signingKeys(message, ctx.secrets.encryptionKey, ctx.clock.now());
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Tollgate-Webhooks/1',
    'webhook-id': message.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(keys, message.id, timestamp, body),
  };
  return sendAttempt(message.url, headers, body, ctx.config.WEBHOOK_TIMEOUT_SECONDS * 1000, {
    allowHttp: ctx.config.WEBHOOK_ALLOW_HTTP,
    allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE_ADDRESSES,
  });
}
