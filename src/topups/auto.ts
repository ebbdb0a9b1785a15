import type Stripe from 'stripe';
import { newId } from '../platform/ids.ts';
import { errors } from '../platform/errors.ts';
import { creditsToMicros, CREDITS_RULE } from '../platform/money.ts';
import { blankAccount, ensureCustomer, pendingTopup, requireStripe } from './checkout.ts';
import { disableAutoTopup } from './events.ts';
import { paymentProviderError, priceOf } from './settings.ts';
import type { TopupRuntime } from './runtime.ts';
import { topupsDb, type TopupsTable } from './schema.ts';

/** Auto top-up as the dashboard shows it; amounts in micro-credits and minor units. */
export interface AutoTopupState {
  enabled: boolean;
  threshold: number;
  amountMinor: number;
  hasPaymentMethod: boolean;
  inFlight: string | null;
  failure: { reason: string; at: number } | null;
}

/** The user's auto top-up settings (off, with no method, when never set up). */
export async function autoTopupState(rt: TopupRuntime, userId: string): Promise<AutoTopupState> {
  const row = await topupsDb(rt.ctx.db)
    .selectFrom('topup_accounts')
    .selectAll()
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return {
    enabled: Boolean(row?.auto_enabled),
    threshold: row?.auto_threshold ?? 0,
    amountMinor: row?.auto_amount_minor ?? 0,
    hasPaymentMethod: Boolean(row?.payment_method_id),
    inFlight: row?.auto_in_flight ?? null,
    failure: row?.auto_failure ? { reason: row.auto_failure, at: row.auto_failed_at ?? 0 } : null,
  };
}

/** Checks a threshold (credits) and an amount (currency units) and converts them. */
function autoValues(rt: TopupRuntime, threshold: number, amount: number): { threshold: number; amountMinor: number } {
  const micros = creditsToMicros(threshold);
  if (micros === null || micros < 0)
    throw errors.invalid(`The threshold must be a non-negative number of credits ${CREDITS_RULE}.`, {
      param: 'threshold',
    });
  return { threshold: micros, amountMinor: priceOf(rt.settings, amount).amountMinor };
}

/**
 * Starts Checkout in setup mode: the user saves a payment method for off-session top-ups; its completion
 * event turns auto top-up on with this threshold and amount.
 */
export async function startAutoTopupSetup(
  rt: TopupRuntime,
  userId: string,
  threshold: number,
  amount: number,
): Promise<{ url: string }> {
  const stripe = requireStripe(rt);
  const values = autoValues(rt, threshold, amount);
  const customer = await ensureCustomer(rt, userId);
  const attempt = newId('top');
  try {
    const session = await stripe.checkout.sessions.create(
      {
        mode: 'setup',
        customer,
        currency: rt.settings.currency,
        metadata: {
          tollgateUserId: userId,
          tollgateThreshold: String(values.threshold),
          tollgateAmountMinor: String(values.amountMinor),
        },
        success_url: `${rt.ctx.config.PUBLIC_BASE_URL}/#/wallet?autotopup=saved`,
        cancel_url: `${rt.ctx.config.PUBLIC_BASE_URL}/#/wallet?autotopup=cancelled`,
      },
      { idempotencyKey: `tollgate-setup-${attempt}` },
    );
    return { url: session.url! };
  } catch (error) {
    throw paymentProviderError(error);
  }
}

/**
 * Changes the settings. Turning it on needs a saved payment method (400 otherwise: set it up first); turning
 * it off always works and clears a failure notice.
 */
export async function updateAutoTopup(
  rt: TopupRuntime,
  userId: string,
  change: { enabled: boolean; threshold: number; amount: number },
): Promise<AutoTopupState> {
  requireStripe(rt);
  const values = autoValues(rt, change.threshold, change.amount);
  const now = rt.ctx.clock.now();
  const state = await autoTopupState(rt, userId);
  if (change.enabled && !state.hasPaymentMethod) {
    throw errors.invalid(
      'Save a payment method first (POST /api/wallet/auto-topup/setup): auto top-up charges it off-session.',
    );
  }
  await topupsDb(rt.ctx.db)
    .insertInto('topup_accounts')
    .values(blankAccount(userId, now))
    .onConflict((oc) => oc.column('user_id').doNothing())
    .execute();
  await topupsDb(rt.ctx.db)
    .updateTable('topup_accounts')
    .set({
      auto_enabled: change.enabled ? 1 : 0,
      auto_threshold: values.threshold,
      auto_amount_minor: values.amountMinor,
      auto_failure: null,
      auto_failed_at: null,
      updated_at: now,
    })
    .where('user_id', '=', userId)
    .execute();
  return autoTopupState(rt, userId);
}

/**
 * After a settle: when the user's available credits fell below their auto top-up threshold, starts ONE
 * off-session payment. The claim is a conditional update of the user's row (`auto_in_flight IS NULL`) in
 * the transaction that inserts the pending top-up (and a unique index allows one pending auto top-up per
 * user), so concurrent settles on any number of instances start one payment; the idempotency key is the
 * top-up's id. The webhook credits it and frees the slot; a failure turns auto top-up off.
 */
export async function maybeAutoTopup(rt: TopupRuntime, userId: string): Promise<TopupsTable | null> {
  const db = topupsDb(rt.ctx.db);
  const { clock } = rt.ctx;
  const account = await db
    .selectFrom('topup_accounts')
    .selectAll()
    .where('user_id', '=', userId)
    .where('auto_enabled', '=', 1)
    .where('auto_in_flight', 'is', null)
    .executeTakeFirst();
  if (!account?.payment_method_id || !account.stripe_customer_id || !rt.stripe || !rt.settings.enabled) return null;
  const { available } = await rt.ctx.billing.getBalance(userId);
  if (available >= account.auto_threshold) return null;
  const now = clock.now();
  const topup = pendingTopup(userId, 'auto', {
    amountMinor: account.auto_amount_minor,
    currency: rt.settings.currency,
    credits: account.auto_amount_minor * rt.settings.creditsPerUnit * 10_000,
    now,
  });
  const claimed = await db.transaction().execute(async (trx) => {
    const slot = await trx
      .updateTable('topup_accounts')
      .set({ auto_in_flight: topup.id, updated_at: now })
      .where('user_id', '=', userId)
      .where('auto_enabled', '=', 1)
      .where('auto_in_flight', 'is', null)
      .returning('user_id')
      .executeTakeFirst();
    if (!slot) return false;
    await trx.insertInto('topups').values(topup).execute();
    return true;
  });
  if (!claimed) return null;
  return chargeAutoTopup(rt, topup, {
    customer: account.stripe_customer_id,
    paymentMethod: account.payment_method_id,
  });
}

/**
 * Charges a claimed auto top-up off-session and records its PaymentIntent (idempotency key: the top-up's id,
 * so the client's own retries charge once). A refusal marks the top-up failed and turns auto top-up off; no
 * answer leaves it pending for the reconcile job (reconcile.ts).
 */
async function chargeAutoTopup(
  rt: TopupRuntime,
  topup: TopupsTable,
  payer: { customer: string; paymentMethod: string },
): Promise<TopupsTable> {
  const db = topupsDb(rt.ctx.db);
  const { clock } = rt.ctx;
  const userId = topup.user_id;
  let intent: Stripe.PaymentIntent;
  try {
    intent = await rt.stripe!.paymentIntents.create(
      {
        amount: topup.amount_minor,
        currency: topup.currency,
        customer: payer.customer,
        payment_method: payer.paymentMethod,
        off_session: true,
        confirm: true,
        metadata: { tollgateTopupId: topup.id, tollgateUserId: userId },
        description: `Tollgate auto top-up ${topup.id}`,
      },
      { idempotencyKey: `tollgate-auto-topup-${topup.id}` },
    );
  } catch (error) {
    if (outcomeUnknown(error)) {
      // No answer, or Stripe's own failure: the payment may have been made. The top-up stays pending, its
      // slot taken, until the reconcile job finds out from Stripe.
      rt.ctx.log.warn({ err: error, topupId: topup.id }, 'Stripe did not answer an auto top-up: left pending');
      return topup;
    }
    // A decline answers with an error; its webhook (payment_intent.payment_failed) would say the same.
    const reason = (error as { message?: string }).message ?? 'The saved payment method was declined.';
    const intentId = (error as { raw?: { payment_intent?: { id?: string } } }).raw?.payment_intent?.id ?? null;
    const failed = await db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('topups')
        .set({ status: 'failed', failure_reason: reason, payment_intent_id: intentId, updated_at: clock.now() })
        .where('id', '=', topup.id)
        .where('status', '=', 'pending')
        .returning('id')
        .executeTakeFirst();
      if (row) await disableAutoTopup(trx, userId, topup.id, reason, clock.now());
      return Boolean(row);
    });
    if (failed) rt.notify({ type: 'topup_failed', userId, topupId: topup.id, credits: topup.credits, reason });
    return { ...topup, status: 'failed' };
  }
  await db
    .updateTable('topups')
    .set({ payment_intent_id: intent.id, updated_at: clock.now() })
    .where('id', '=', topup.id)
    .where('payment_intent_id', 'is', null)
    .execute();
  return { ...topup, payment_intent_id: intent.id };
}

/**
 * Whether a failed Stripe request leaves the payment's outcome unknown: the connection broke, Stripe erred
 * (5xx), or it refused to run the request now (another request with the same idempotency key in flight, a
 * rate limit). Any other error is Stripe's answer: the payment was not made.
 */
export function outcomeUnknown(error: unknown): boolean {
  const { type, statusCode } = error as { type?: string; statusCode?: number };
  if (type === 'StripeConnectionError' || type === 'StripeAPIError' || type === 'StripeIdempotencyError') return true;
  if (type === 'StripeRateLimitError') return true;
  return statusCode === undefined ? type === undefined : statusCode >= 500 || statusCode === 409 || statusCode === 429;
}
