import type Stripe from 'stripe';
import { sql } from 'kysely';
import { newId } from '../platform/ids.ts';
import { userContact } from '../accounts/users.ts';
import { errors } from '../platform/errors.ts';
import { paymentProviderError, priceOf, topupsDisabled } from './settings.ts';
import type { TopupRuntime } from './runtime.ts';
import { topupsDb, type TopupsTable } from './schema.ts';

/** The Stripe client, or the 403 that says how to turn top-ups on. */
export function requireStripe(rt: TopupRuntime): Stripe {
  if (!rt.settings.enabled || !rt.stripe) throw topupsDisabled();
  return rt.stripe;
}

/**
 * The user's Stripe customer, created once. Two first top-ups at once send the same idempotency key, so
 * Stripe answers both with one customer; the row keeps the first id written.
 */
export async function ensureCustomer(rt: TopupRuntime, userId: string): Promise<string> {
  const db = topupsDb(rt.ctx.db);
  const { clock } = rt.ctx;
  const existing = await db
    .selectFrom('topup_accounts')
    .select('stripe_customer_id')
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (existing?.stripe_customer_id) return existing.stripe_customer_id;
  const user = await userContact(rt.ctx.db, userId);
  if (!user) throw new Error(`no user ${userId}`);
  let customer: Stripe.Customer;
  try {
    customer = await requireStripe(rt).customers.create(
      { email: user.email, name: user.name || undefined, metadata: { tollgateUserId: userId } },
      { idempotencyKey: `tollgate-customer-${userId}` },
    );
  } catch (error) {
    throw paymentProviderError(error);
  }
  await db
    .insertInto('topup_accounts')
    .values({ ...blankAccount(userId, clock.now()), stripe_customer_id: customer.id })
    .onConflict((oc) =>
      oc.column('user_id').doUpdateSet({
        stripe_customer_id: sql`coalesce(topup_accounts.stripe_customer_id, excluded.stripe_customer_id)`,
      }),
    )
    .execute();
  const row = await db
    .selectFrom('topup_accounts')
    .select('stripe_customer_id')
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return row.stripe_customer_id!;
}

/** Where Stripe sends the user back: the wallet page, told which top-up to watch. */
function walletUrl(rt: TopupRuntime, query: string): string {
  return `${rt.ctx.config.PUBLIC_BASE_URL}/#/wallet?${query}`;
}

/** A new top-up row, pending: its amount and credits fixed now, nothing from Stripe yet. */
export function pendingTopup(
  userId: string,
  kind: TopupsTable['kind'],
  price: { amountMinor: number; currency: string; credits: number; now: number },
): TopupsTable {
  return {
    id: newId('top'),
    user_id: userId,
    kind,
    status: 'pending',
    amount_minor: price.amountMinor,
    currency: price.currency,
    credits: price.credits,
    checkout_session_id: null,
    payment_intent_id: null,
    checkout_url: null,
    receipt_url: null,
    failure_reason: null,
    refunded: 0,
    disputed: 0,
    dispute_status: null,
    transaction_id: null,
    created_at: price.now,
    updated_at: price.now,
    credited_at: null,
  };
}

/**
 * Starts a top-up: records it as pending, then creates its Checkout Session (payment mode) with an
 * idempotency key per top-up, so a retried request never makes a second session for it. The credits are
 * fixed now; the webhook credits exactly them.
 */
export async function startCheckout(
  rt: TopupRuntime,
  userId: string,
  amount: number,
): Promise<{ topup: TopupsTable; url: string }> {
  const stripe = requireStripe(rt);
  const price = priceOf(rt.settings, amount);
  const customer = await ensureCustomer(rt, userId);
  const now = rt.ctx.clock.now();
  const topup = pendingTopup(userId, 'checkout', {
    amountMinor: price.amountMinor,
    currency: rt.settings.currency,
    credits: price.credits,
    now,
  });
  await topupsDb(rt.ctx.db).insertInto('topups').values(topup).execute();
  let session: Stripe.Checkout.Session;
  try {
    session = await stripe.checkout.sessions.create(
      {
        mode: 'payment',
        customer,
        client_reference_id: userId,
        line_items: [
          {
            quantity: 1,
            price_data: {
              currency: rt.settings.currency,
              unit_amount: price.amountMinor,
              product_data: { name: `${price.credits / 1_000_000} Tollgate credits` },
            },
          },
        ],
        payment_intent_data: { metadata: { tollgateTopupId: topup.id, tollgateUserId: userId } },
        metadata: { tollgateTopupId: topup.id, tollgateUserId: userId },
        success_url: walletUrl(rt, `topup=${topup.id}`),
        cancel_url: walletUrl(rt, `topup=${topup.id}&cancelled=1`),
      },
      { idempotencyKey: `tollgate-topup-${topup.id}` },
    );
  } catch (error) {
    await topupsDb(rt.ctx.db)
      .updateTable('topups')
      .set({ status: 'failed', failure_reason: 'Stripe refused to start the checkout', updated_at: rt.ctx.clock.now() })
      .where('id', '=', topup.id)
      .execute();
    throw paymentProviderError(error);
  }
  if (!session.url) throw paymentProviderError(new Error('no checkout URL'));
  await topupsDb(rt.ctx.db)
    .updateTable('topups')
    .set({ checkout_session_id: session.id, checkout_url: session.url, updated_at: rt.ctx.clock.now() })
    .where('id', '=', topup.id)
    .execute();
  return { topup: { ...topup, checkout_session_id: session.id, checkout_url: session.url }, url: session.url };
}

/** One of the user's top-ups; 404 for another user's. */
export async function getTopup(rt: TopupRuntime, userId: string, id: string): Promise<TopupsTable> {
  const row = await topupsDb(rt.ctx.db)
    .selectFrom('topups')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (!row) throw errors.notFound('Top-up');
  return row;
}

/** A user's Stripe row before anything is set. */
export function blankAccount(userId: string, now: number) {
  return {
    user_id: userId,
    stripe_customer_id: null,
    payment_method_id: null,
    auto_enabled: 0,
    auto_threshold: 0,
    auto_amount_minor: 0,
    auto_in_flight: null,
    auto_failure: null,
    auto_failed_at: null,
    updated_at: now,
  };
}
