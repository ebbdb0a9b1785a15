import type Stripe from 'stripe';
import type { Job } from '../platform/jobs.ts';
import { freeAutoTopupSlot, handleEvent } from './events.ts';
import type { TopupRuntime } from './runtime.ts';
import { topupsDb, type TopupsTable } from './schema.ts';

/** What one reconciled top-up came to. */
type Outcome = 'credited' | 'failed' | 'waiting' | 'unreachable';

/**
 * Finishes the auto top-ups whose outcome never arrived: a webhook lost or not configured, or a process that
 * died, or Stripe failed, between claiming the user's auto top-up slot and recording its PaymentIntent. Until
 * then the slot stays taken and no further auto top-up starts, so the user silently runs dry. Nothing is
 * charged here: a payment Stripe never made is given up, not made late.
 *
 * Invariant: money moves only through the webhook's own path (`handleEvent`), fed Stripe's current word on
 * the PaymentIntent as an event whose id names the PaymentIntent and its status. A top-up is credited at most
 * once whatever races it (the webhook's real event, this job in another process): the credit's claim is the
 * conditional `pending|processing|failed → succeeded` update in the movement's transaction.
 */
export function reconcileAutoTopupsJob(rt: TopupRuntime): Job {
  return {
    name: 'reconcile-auto-topups',
    description:
      'Asks Stripe about auto top-ups pending longer than AUTO_TOPUP_RECONCILE_SECONDS and credits or fails them as the webhook would.',
    async run() {
      if (!rt.stripe || !rt.settings.enabled) return { checked: 0 };
      const before = rt.ctx.clock.now() - rt.ctx.config.AUTO_TOPUP_RECONCILE_SECONDS * 1000;
      const stale = await topupsDb(rt.ctx.db)
        .selectFrom('topups')
        .selectAll()
        .where('kind', '=', 'auto')
        .where('status', 'in', ['pending', 'processing'])
        .where('updated_at', '<=', before)
        .orderBy('updated_at')
        .limit(100)
        .execute();
      const counts: Record<Outcome, number> = { credited: 0, failed: 0, waiting: 0, unreachable: 0 };
      for (const topup of stale) counts[await reconcile(rt, topup)]++;
      return { checked: stale.length, ...counts };
    },
  };
}

/** How far before a top-up's creation its PaymentIntent is looked for (clocks differ). */
const CLOCK_SLACK_S = 300;

/**
 * Stripe's PaymentIntent of the top-up, or null when Stripe has none: when none was recorded, the customer's
 * PaymentIntents since the top-up began are searched for the one whose metadata names it. Listing is read from
 * Stripe's records as they are, and this runs long after any attempt to start it could still be retrying.
 */
async function intentOf(rt: TopupRuntime, topup: TopupsTable): Promise<Stripe.PaymentIntent | null> {
  if (topup.payment_intent_id) return rt.stripe!.paymentIntents.retrieve(topup.payment_intent_id);
  const account = await topupsDb(rt.ctx.db)
    .selectFrom('topup_accounts')
    .select('stripe_customer_id')
    .where('user_id', '=', topup.user_id)
    .executeTakeFirst();
  if (!account?.stripe_customer_id) return null;
  const since = Math.floor(topup.created_at / 1000) - CLOCK_SLACK_S;
  for await (const intent of rt.stripe!.paymentIntents.list({
    customer: account.stripe_customer_id,
    created: { gte: since },
    limit: 100,
  }))
    if (intent.metadata?.tollgateTopupId === topup.id) return intent;
  return null;
}

/**
 * A top-up Stripe never heard of (the process died, or Stripe failed, before the payment was made): failed,
 * with the user's auto top-up slot freed and auto top-up left on — nothing was declined, so the next settle
 * below the threshold starts a new one.
 */
async function neverStarted(rt: TopupRuntime, topup: TopupsTable): Promise<Outcome> {
  const now = rt.ctx.clock.now();
  const reason = 'The payment was never started (Stripe has no record of it); the next one starts when needed.';
  const failed = await topupsDb(rt.ctx.db)
    .transaction()
    .execute(async (trx) => {
      const row = await trx
        .updateTable('topups')
        .set({ status: 'failed', failure_reason: reason, updated_at: now })
        .where('id', '=', topup.id)
        .where('status', '=', 'pending')
        .where('payment_intent_id', 'is', null)
        .returning('id')
        .executeTakeFirst();
      if (row) await freeAutoTopupSlot(trx, topup.user_id, topup.id, now);
      return Boolean(row);
    });
  if (!failed) return 'waiting';
  rt.notify({ type: 'topup_failed', userId: topup.user_id, topupId: topup.id, credits: topup.credits, reason });
  return 'failed';
}

async function reconcile(rt: TopupRuntime, topup: TopupsTable): Promise<Outcome> {
  let intent: Stripe.PaymentIntent | null;
  try {
    intent = await intentOf(rt, topup);
  } catch (error) {
    rt.ctx.log.warn({ err: error, topupId: topup.id }, 'an auto top-up could not be reconciled with Stripe');
    return 'unreachable';
  }
  if (!intent) return neverStarted(rt, topup);
  const type =
    intent.status === 'succeeded'
      ? 'payment_intent.succeeded'
      : ['requires_payment_method', 'requires_action', 'canceled'].includes(intent.status)
        ? 'payment_intent.payment_failed'
        : null;
  if (type === null) return 'waiting';
  const failure = intent.last_payment_error?.message ?? `Stripe reports the payment as ${intent.status}.`;
  const event = {
    id: `reconciled:${intent.id}:${intent.status}`,
    object: 'event',
    type,
    data: { object: { ...intent, last_payment_error: { ...intent.last_payment_error, message: failure } } },
  } as unknown as Stripe.Event;
  const ack = await handleEvent(rt, event);
  return ack.effect === 'credited' ? 'credited' : ack.effect === 'failed' ? 'failed' : 'waiting';
}
