import type Stripe from 'stripe';
import type { Job } from '../platform/jobs.ts';
import { chargeAutoTopup } from './auto.ts';
import { handleEvent } from './events.ts';
import type { TopupRuntime } from './runtime.ts';
import { topupsDb, type TopupsTable } from './schema.ts';

/** What one reconciled top-up came to. */
type Outcome = 'credited' | 'failed' | 'waiting' | 'unreachable';

/**
 * Finishes the auto top-ups whose outcome never arrived: a webhook lost or not configured, or a process that
 * died between claiming the user's auto top-up slot and recording its PaymentIntent. Until then the slot
 * stays taken and no further auto top-up starts, so the user silently runs dry.
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

/** Stripe's PaymentIntent of the top-up, asked again by the same idempotency key when none was recorded. */
async function intentOf(rt: TopupRuntime, topup: TopupsTable): Promise<Stripe.PaymentIntent | null> {
  if (topup.payment_intent_id) return rt.stripe!.paymentIntents.retrieve(topup.payment_intent_id);
  const account = await topupsDb(rt.ctx.db)
    .selectFrom('topup_accounts')
    .select(['stripe_customer_id', 'payment_method_id', 'auto_in_flight'])
    .where('user_id', '=', topup.user_id)
    .executeTakeFirst();
  // The slot is this top-up's while it is unrecorded; the payer is the one the claim charged.
  if (account?.auto_in_flight !== topup.id || !account.stripe_customer_id || !account.payment_method_id) return null;
  const charged = await chargeAutoTopup(rt, topup, {
    customer: account.stripe_customer_id,
    paymentMethod: account.payment_method_id,
  });
  if (charged.status === 'failed' || !charged.payment_intent_id) return null;
  return rt.stripe!.paymentIntents.retrieve(charged.payment_intent_id);
}

async function reconcile(rt: TopupRuntime, topup: TopupsTable): Promise<Outcome> {
  let intent: Stripe.PaymentIntent | null;
  try {
    intent = await intentOf(rt, topup);
  } catch (error) {
    rt.ctx.log.warn({ err: error, topupId: topup.id }, 'an auto top-up could not be reconciled with Stripe');
    return 'unreachable';
  }
  if (!intent) return 'failed';
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
