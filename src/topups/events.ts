import type Stripe from 'stripe';
import { ApiError } from '../platform/errors.ts';
import type { Db } from '../platform/db/connect.ts';
import type { TopupRuntime } from './runtime.ts';
import type { ProcessorOutcome } from '../billing/service.ts';
import { topupsDb, type TopupsDb, type TopupsTable } from './schema.ts';

/** Topups' view of a transaction: its own, or billing's that a movement's hooks join (see `ProcessorHooks`). */
type Trx = TopupsDb;
import { paymentProviderError } from './settings.ts';

/**
 * The acknowledgment of a Stripe event (what operators read in Stripe's delivery log): what it did (`effect`),
 * or that it was processed before. An event that found its top-up past the state it leads from (a success for
 * a failed top-up, an expiry after the credit) is `ignored`, with the top-up's `status`.
 */
export interface EventAck {
  received: true;
  effect:
    | 'credited'
    | 'processing'
    | 'failed'
    | 'expired'
    | 'refunded'
    | 'disputed'
    | 'dispute_won'
    | 'dispute_lost'
    | 'auto_topup_saved'
    | 'ignored';
  duplicate?: true;
  topupId?: string;
  /** The top-up's status, when the event changed nothing of it. */
  status?: TopupsTable['status'];
}

/**
 * The answer about an event of `topup` that leads it to `to` with `effect`: the effect when it applied; else
 * `ignored` with the status the top-up has. A copy (`duplicate`) answers the effect while the top-up is in
 * the state the effect led to: a copy of the event that credited still says `credited`.
 */
async function acknowledge(
  rt: TopupRuntime,
  topup: TopupsTable,
  effect: EventAck['effect'],
  to: TopupsTable['status'],
  outcome: 'applied' | 'unchanged' | 'duplicate',
): Promise<EventAck> {
  if (outcome === 'applied') return { received: true, effect, topupId: topup.id };
  const { status } = await topupsDb(rt.ctx.db)
    .selectFrom('topups')
    .select('status')
    .where('id', '=', topup.id)
    .executeTakeFirstOrThrow();
  if (outcome === 'duplicate')
    return status === to
      ? { received: true, effect, topupId: topup.id, duplicate: true }
      : { received: true, effect: 'ignored', topupId: topup.id, status, duplicate: true };
  return { received: true, effect: 'ignored', topupId: topup.id, status };
}

/**
 * Records the event as processed; false when a copy was processed before (here or on another instance).
 * Called first in the transaction of the event's effect: PostgreSQL makes a concurrent copy wait on the
 * primary key until the first commits, then insert nothing; SQLite runs one writer at a time.
 */
async function claimEvent(trx: Trx, event: Stripe.Event, now: number): Promise<boolean> {
  const inserted = await trx
    .insertInto('stripe_events')
    .values({ event_id: event.id, type: event.type, received_at: now })
    .onConflict((oc) => oc.column('event_id').doNothing())
    .returning('event_id')
    .executeTakeFirst();
  return Boolean(inserted);
}

/** The top-up row under a lock until the transaction ends (PostgreSQL; SQLite's transaction holds the write lock). */
async function lockTopup(rt: TopupRuntime, trx: Trx, id: string): Promise<TopupsTable> {
  const query = trx.selectFrom('topups').selectAll().where('id', '=', id);
  return (rt.ctx.dialect === 'postgres' ? query.forUpdate() : query).executeTakeFirstOrThrow();
}

/** A Stripe reference that may arrive expanded or as an id. */
const idOf = (value: string | { id: string } | null | undefined): string | null =>
  typeof value === 'string' ? value : (value?.id ?? null);

/** Micro-credits of `credits` that `part` of `whole` minor units pay for, rounded down (exact, in BigInt). */
function share(credits: number, part: unknown, whole: number): number {
  if (!Number.isSafeInteger(part) || (part as number) < 0)
    throw new ApiError('WEBHOOK_INVALID', 'The Stripe event lacks a whole amount in minor units.');
  return Number((BigInt(credits) * BigInt(Math.min(part as number, whole))) / BigInt(whole));
}

/**
 * Applies one verified Stripe event, exactly once per event id: the claim, the top-up's new state and the
 * ledger movement commit in one transaction, so duplicates and concurrent copies on any instance change
 * nothing, and a crash leaves the event unclaimed for Stripe's next delivery.
 */
export async function handleEvent(rt: TopupRuntime, event: Stripe.Event): Promise<EventAck> {
  const object = event.data.object as any;
  switch (event.type) {
    case 'checkout.session.completed': {
      if (object.mode === 'setup') return saveAutoTopup(rt, event, object);
      const topup = await topupOfSession(rt, object);
      if (!topup) return recordOnly(rt, event);
      if (object.payment_status === 'paid') {
        return paidAsPriced(rt, topup, object.amount_total, object.currency)
          ? credit(rt, event, topup, idOf(object.payment_intent))
          : recordOnly(rt, event);
      }
      // An asynchronous method (a bank debit): credited by its success event only.
      return transition(
        rt,
        event,
        topup,
        ['pending'],
        { status: 'processing', payment_intent_id: idOf(object.payment_intent) },
        'processing',
      );
    }
    case 'checkout.session.async_payment_succeeded': {
      const topup = await topupOfSession(rt, object);
      if (!topup || !paidAsPriced(rt, topup, object.amount_total, object.currency)) return recordOnly(rt, event);
      return credit(rt, event, topup, idOf(object.payment_intent));
    }
    case 'checkout.session.async_payment_failed': {
      const topup = await topupOfSession(rt, object);
      return topup ? fail(rt, event, topup, 'The payment failed.') : recordOnly(rt, event);
    }
    case 'checkout.session.expired': {
      const topup = await topupOfSession(rt, object);
      return topup
        ? transition(rt, event, topup, ['pending'], { status: 'expired' }, 'expired')
        : recordOnly(rt, event);
    }
    case 'payment_intent.succeeded':
    case 'payment_intent.payment_failed': {
      // Checkout's own payments are handled by the Checkout events; these only settle auto top-ups.
      const topup = await topupOfAutoPayment(rt, object);
      if (!topup) return recordOnly(rt, event);
      if (event.type === 'payment_intent.succeeded') {
        return paidAsPriced(rt, topup, object.amount, object.currency)
          ? credit(rt, event, topup, object.id)
          : recordOnly(rt, event);
      }
      return fail(rt, event, topup, object.last_payment_error?.message ?? 'The saved payment method was declined.');
    }
    case 'charge.refunded':
      return refund(rt, event, object as Stripe.Charge);
    case 'charge.dispute.created':
    case 'charge.dispute.closed':
      return dispute(rt, event, object as Stripe.Dispute);
    default:
      return recordOnly(rt, event);
  }
}

/**
 * Whether the payment is the price the top-up was created with: credits are only given for that price (a
 * session changed outside Tollgate credits nothing, and the log says so).
 */
function paidAsPriced(rt: TopupRuntime, topup: TopupsTable, amount: unknown, currency: unknown): boolean {
  if (amount === topup.amount_minor && currency === topup.currency) return true;
  rt.ctx.log.error(
    { topupId: topup.id, amount, currency },
    "a Stripe payment does not match its top-up's price: not credited",
  );
  return false;
}

async function topupOf(rt: TopupRuntime, id: unknown): Promise<TopupsTable | undefined> {
  if (typeof id !== 'string') return undefined;
  return topupsDb(rt.ctx.db).selectFrom('topups').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The Stripe customer Tollgate made for the user, or null before their first top-up. */
async function customerOf(rt: TopupRuntime, userId: string): Promise<string | null> {
  const row = await topupsDb(rt.ctx.db)
    .selectFrom('topup_accounts')
    .select('stripe_customer_id')
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row?.stripe_customer_id ?? null;
}

/**
 * Security invariant: metadata alone never picks the top-up an event moves. Any session or PaymentIntent of
 * the Stripe account can carry any metadata (another integration, one edited in the Stripe dashboard), so the
 * top-up it names is used only when the object is its own: paid by the customer Tollgate made for the top-up's
 * user, and the very session (or PaymentIntent) recorded for it once known. Otherwise one payment could credit
 * (or expire, or fail) another user's top-up, and that top-up's own payment would then credit nothing.
 */
async function ownTopup(
  rt: TopupRuntime,
  object: { id?: unknown; customer?: string | { id: string } | null; metadata?: Record<string, string> | null },
  kind: TopupsTable['kind'] | null,
  recorded: (topup: TopupsTable) => string | null,
): Promise<TopupsTable | undefined> {
  const topup = await topupOf(rt, object.metadata?.tollgateTopupId);
  // A Checkout top-up's own PaymentIntent events are not for the auto top-up path (nor logged: every one has them).
  if (!topup || (kind !== null && topup.kind !== kind)) return undefined;
  const own =
    idOf(object.customer) !== null &&
    idOf(object.customer) === (await customerOf(rt, topup.user_id)) &&
    (recorded(topup) === null || recorded(topup) === object.id);
  if (own) return topup;
  rt.ctx.log.error(
    { topupId: topup.id, object: object.id },
    'a Stripe event names a top-up in its metadata but is not about that top-up: ignored',
  );
  return undefined;
}

/** The Checkout top-up a session event is about (see {@link ownTopup}). */
const topupOfSession = (rt: TopupRuntime, session: Stripe.Checkout.Session) =>
  ownTopup(rt, session, 'checkout', (topup) => topup.checkout_session_id);

/** The auto top-up a PaymentIntent event is about (see {@link ownTopup}). */
const topupOfAutoPayment = (rt: TopupRuntime, intent: Stripe.PaymentIntent) =>
  ownTopup(rt, intent, 'auto', (topup) => topup.payment_intent_id);

/**
 * The top-up a charge or dispute is about, by its PaymentIntent; when no top-up knows that PaymentIntent yet (its
 * Checkout event has not arrived), the PaymentIntent's own metadata, read from Stripe, names the top-up.
 */
async function topupOfPayment(rt: TopupRuntime, paymentIntent: string | null): Promise<TopupsTable | undefined> {
  if (!paymentIntent) return undefined;
  const known = await topupsDb(rt.ctx.db)
    .selectFrom('topups')
    .selectAll()
    .where('payment_intent_id', '=', paymentIntent)
    .executeTakeFirst();
  if (known) return known;
  let intent: Stripe.PaymentIntent;
  try {
    intent = await rt.stripe!.paymentIntents.retrieve(paymentIntent);
  } catch (error) {
    throw paymentProviderError(error);
  }
  return ownTopup(rt, intent, null, (topup) => topup.payment_intent_id);
}

/** An event with nothing to do here, recorded so its copies are answered as duplicates. */
async function recordOnly(rt: TopupRuntime, event: Stripe.Event): Promise<EventAck> {
  const fresh = await topupsDb(rt.ctx.db)
    .transaction()
    .execute((trx) => claimEvent(trx, event, rt.ctx.clock.now()));
  return fresh ? { received: true, effect: 'ignored' } : { received: true, effect: 'ignored', duplicate: true };
}

/** A state change without money: applied when the top-up is in one of `from`, with the event's claim. */
async function transition(
  rt: TopupRuntime,
  event: Stripe.Event,
  topup: TopupsTable,
  from: TopupsTable['status'][],
  change: Partial<TopupsTable> & { status: TopupsTable['status'] },
  effect: EventAck['effect'],
): Promise<EventAck> {
  const now = rt.ctx.clock.now();
  const outcome = await topupsDb(rt.ctx.db)
    .transaction()
    .execute(async (trx) => {
      if (!(await claimEvent(trx, event, now))) return 'duplicate' as const;
      const changed = await trx
        .updateTable('topups')
        .set({ ...change, updated_at: now })
        .where('id', '=', topup.id)
        .where('status', 'in', from)
        .returning('id')
        .executeTakeFirst();
      return changed ? ('applied' as const) : ('unchanged' as const);
    });
  return acknowledge(rt, topup, effect, change.status, outcome);
}

/**
 * Credits a paid top-up once: the claim of the event and the conditional `pending|processing → succeeded`
 * update run in the movement's transaction, so two different success events of one payment (Checkout's
 * completed and async-succeeded, in either order) credit it once. An auto top-up marked failed is credited
 * too when Stripe says its payment succeeded: Tollgate marks it failed when starting it errs, which a lost
 * answer can make look like a failure; Stripe's word on the money wins.
 */
async function credit(
  rt: TopupRuntime,
  event: Stripe.Event,
  topup: TopupsTable,
  paymentIntent: string | null,
): Promise<EventAck> {
  const now = rt.ctx.clock.now();
  let duplicate = false;
  const major = topup.amount_minor / 100;
  const outcome = await rt.ctx.billing.creditPayment(
    'topup',
    {
      userId: topup.user_id,
      amount: topup.credits,
      description: `Top-up: ${major.toFixed(2)} ${topup.currency.toUpperCase()}`,
      reference: `stripe:${event.id}:${paymentIntent ?? topup.checkout_session_id ?? topup.id}`,
    },
    {
      claim: async (shared) => {
        const trx = topupsDb(shared);
        if (!(await claimEvent(trx, event, now))) return !(duplicate = true);
        const claimed = await trx
          .updateTable('topups')
          .set({
            status: 'succeeded',
            credited_at: now,
            updated_at: now,
            ...(paymentIntent ? { payment_intent_id: paymentIntent } : {}),
          })
          .where('id', '=', topup.id)
          .where(
            'status',
            'in',
            topup.kind === 'auto' ? ['pending', 'processing', 'failed'] : ['pending', 'processing'],
          )
          .returning('id')
          .executeTakeFirst();
        return Boolean(claimed);
      },
      companionWrites: async (shared, moved) => {
        const trx = topupsDb(shared);
        await trx
          .updateTable('topups')
          .set({ transaction_id: moved.transactionId })
          .where('id', '=', topup.id)
          .execute();
        if (topup.kind === 'auto') await freeAutoTopupSlot(trx, topup.user_id, topup.id, now);
      },
    },
  );
  if (!outcome.applied) {
    const ack = await acknowledge(rt, topup, 'credited', 'succeeded', duplicate ? 'duplicate' : 'unchanged');
    // Stripe took the money of a top-up Tollgate gave up on: the operator refunds it (or grants the credits).
    if (!duplicate && ack.status !== 'succeeded')
      rt.ctx.log.error(
        { topupId: topup.id, status: ack.status, paymentIntent },
        'Stripe reports a payment of a top-up that is no longer payable: not credited; refund it in Stripe or grant the credits',
      );
    return ack;
  }
  rt.notify({ type: 'topup_succeeded', userId: topup.user_id, topupId: topup.id, credits: topup.credits });
  if (paymentIntent) await recordReceipt(rt, topup.id, paymentIntent);
  return { received: true, effect: 'credited', topupId: topup.id };
}

/** Keeps the receipt link of the payment's charge; best effort (the history shows none when Stripe fails). */
async function recordReceipt(rt: TopupRuntime, topupId: string, paymentIntent: string): Promise<void> {
  try {
    const intent = await rt.stripe!.paymentIntents.retrieve(paymentIntent, { expand: ['latest_charge'] });
    const receipt = typeof intent.latest_charge === 'object' ? intent.latest_charge?.receipt_url : null;
    if (receipt)
      await topupsDb(rt.ctx.db).updateTable('topups').set({ receipt_url: receipt }).where('id', '=', topupId).execute();
  } catch (error) {
    rt.ctx.log.warn({ err: error, topupId }, 'the receipt of a top-up could not be read from Stripe');
  }
}

/** A payment that failed: the top-up is marked failed; an auto top-up is turned off with the reason shown to the user. */
async function fail(rt: TopupRuntime, event: Stripe.Event, topup: TopupsTable, reason: string): Promise<EventAck> {
  const now = rt.ctx.clock.now();
  const outcome = await topupsDb(rt.ctx.db)
    .transaction()
    .execute(async (trx) => {
      if (!(await claimEvent(trx, event, now))) return 'duplicate' as const;
      const failed = await trx
        .updateTable('topups')
        .set({ status: 'failed', failure_reason: reason, updated_at: now })
        .where('id', '=', topup.id)
        .where('status', 'in', ['pending', 'processing'])
        .returning('id')
        .executeTakeFirst();
      if (failed && topup.kind === 'auto') await disableAutoTopup(trx, topup.user_id, topup.id, reason, now);
      return failed ? ('failed' as const) : ('unchanged' as const);
    });
  if (outcome === 'failed')
    rt.notify({ type: 'topup_failed', userId: topup.user_id, topupId: topup.id, credits: topup.credits, reason });
  return acknowledge(rt, topup, 'failed', 'failed', outcome === 'failed' ? 'applied' : outcome);
}

/** Frees the user's one auto top-up slot if this top-up still holds it, so the next one can start. */
export async function freeAutoTopupSlot(trx: Trx, userId: string, topupId: string, now: number): Promise<void> {
  await trx
    .updateTable('topup_accounts')
    .set({ auto_in_flight: null, updated_at: now })
    .where('user_id', '=', userId)
    .where('auto_in_flight', '=', topupId)
    .execute();
}

/** Turns auto top-up off after its payment failed, keeping why for the dashboard. */
export async function disableAutoTopup(
  trx: Trx,
  userId: string,
  topupId: string,
  reason: string,
  now: number,
): Promise<void> {
  await trx
    .updateTable('topup_accounts')
    .set((eb) => ({
      auto_enabled: 0,
      auto_failure: reason,
      auto_failed_at: now,
      updated_at: now,
      auto_in_flight: eb.case().when('auto_in_flight', '=', topupId).then(null).else(eb.ref('auto_in_flight')).end(),
    }))
    .where('user_id', '=', userId)
    .execute();
}

/** A refund or dispute about a payment that is not credited yet: not recorded, so Stripe delivers it again later. */
function notCreditedYet(topup: TopupsTable): ApiError {
  return new ApiError(
    'CONFLICT',
    `The payment of top-up ${topup.id} is not credited yet; this event is not recorded, and Stripe's next delivery applies it.`,
  );
}

/**
 * `charge.refunded`: takes back the credits of what has been refunded so far (Stripe's cumulative
 * `amount_refunded`, so partial refunds and duplicates add up right), at most what is available; the rest
 * becomes debt.
 */
async function refund(rt: TopupRuntime, event: Stripe.Event, charge: Stripe.Charge): Promise<EventAck> {
  const topup = await topupOfPayment(rt, idOf(charge.payment_intent));
  if (!topup) return recordOnly(rt, event);
  if (topup.status !== 'succeeded') throw notCreditedYet(topup);
  const now = rt.ctx.clock.now();
  let duplicate = false;
  const outcome = await rt.ctx.billing.debitPayment(
    'refund',
    {
      userId: topup.user_id,
      amount: 0,
      description: 'Top-up refunded',
      reference: `stripe:${event.id}:${charge.id}`,
    },
    {
      claim: async (shared) => {
        const trx = topupsDb(shared);
        if (!(await claimEvent(trx, event, now))) return !(duplicate = true);
        const row = await lockTopup(rt, trx, topup.id);
        const target = Math.min(
          share(row.credits, charge.amount_refunded, row.amount_minor),
          row.credits - row.disputed,
        );
        if (target <= row.refunded) return false;
        await trx.updateTable('topups').set({ refunded: target, updated_at: now }).where('id', '=', row.id).execute();
        return target - row.refunded;
      },
    },
  );
  notifyMoved(rt, topup, outcome);
  return { received: true, effect: 'refunded', topupId: topup.id, ...(duplicate ? { duplicate: true as const } : {}) };
}

/**
 * `charge.dispute.created` takes the disputed credits back (at most available, the rest debt);
 * `charge.dispute.closed` gives them back unless the dispute was lost. Either order of the two works: a
 * dispute closed before its creation was seen takes (lost) or keeps (won) nothing more.
 */
async function dispute(rt: TopupRuntime, event: Stripe.Event, object: Stripe.Dispute): Promise<EventAck> {
  const topup = await topupOfPayment(rt, idOf(object.payment_intent));
  if (!topup) return recordOnly(rt, event);
  if (topup.status !== 'succeeded') throw notCreditedYet(topup);
  const now = rt.ctx.clock.now();
  let duplicate = false;
  const claimThen = (decide: (row: TopupsTable, trx: Trx) => Promise<number>) => async (shared: Db) => {
    const trx = topupsDb(shared);
    if (!(await claimEvent(trx, event, now))) return !(duplicate = true);
    return decide(await lockTopup(rt, trx, topup.id), trx);
  };
  const take = async (row: TopupsTable, trx: Trx, status: 'open' | 'lost') => {
    const amount = Math.min(share(row.credits, object.amount, row.amount_minor), row.credits - row.refunded);
    await trx
      .updateTable('topups')
      .set({ disputed: amount, dispute_status: status, updated_at: now })
      .where('id', '=', row.id)
      .execute();
    return amount;
  };
  const movement = { userId: topup.user_id, amount: 0, reference: `stripe:${event.id}:${object.id}` };
  // An inquiry (`warning_…`) withdraws no funds: it takes nothing, and its closing gives nothing back. A
  // dispute closed any way but lost gives back what its creation took.
  if (event.type === 'charge.dispute.created' && String(object.status ?? '').startsWith('warning_'))
    return recordOnly(rt, event);
  const won = event.type === 'charge.dispute.closed' && object.status !== 'lost';
  const effect: EventAck['effect'] =
    event.type === 'charge.dispute.created' ? 'disputed' : won ? 'dispute_won' : 'dispute_lost';
  let outcome: ProcessorOutcome;
  if (won) {
    outcome = await rt.ctx.billing.creditPayment(
      'dispute',
      { ...movement, description: 'Dispute won: credits given back' },
      {
        claim: claimThen(async (row, trx) => {
          const giveBack = row.dispute_status === 'open' ? row.disputed : 0;
          await trx
            .updateTable('topups')
            .set({ disputed: 0, dispute_status: 'won', updated_at: now })
            .where('id', '=', row.id)
            .execute();
          return giveBack;
        }),
      },
    );
  } else {
    outcome = await rt.ctx.billing.debitPayment(
      'dispute',
      { ...movement, description: 'Top-up disputed' },
      {
        claim: claimThen(async (row, trx) => {
          if (row.dispute_status === null)
            return take(row, trx, event.type === 'charge.dispute.created' ? 'open' : 'lost');
          if (event.type === 'charge.dispute.closed' && row.dispute_status === 'open') {
            await trx
              .updateTable('topups')
              .set({ dispute_status: 'lost', updated_at: now })
              .where('id', '=', row.id)
              .execute();
          }
          return 0;
        }),
      },
    );
  }
  notifyMoved(rt, topup, outcome);
  return { received: true, effect, topupId: topup.id, ...(duplicate ? { duplicate: true as const } : {}) };
}

/**
 * Tells the observers that a refund or dispute moved credits (after its commit): the balance changed outside
 * a call's settle, and the low-balance alert must see it.
 */
function notifyMoved(rt: TopupRuntime, topup: TopupsTable, outcome: ProcessorOutcome): void {
  if (!outcome.applied) return;
  // A debit takes from available and adds the rest to the debt; a credit repays the debt and adds the rest.
  const moved = outcome.available - outcome.debt;
  if (moved === 0) return;
  rt.notify({
    type: moved < 0 ? 'credits_taken_back' : 'credits_given_back',
    userId: topup.user_id,
    topupId: topup.id,
    credits: Math.abs(moved),
  });
}

/**
 * Checkout in setup mode completed: the payment method it saved becomes the user's auto top-up method, with
 * the threshold and amount the user chose when starting it (kept in the session's metadata).
 */
async function saveAutoTopup(
  rt: TopupRuntime,
  event: Stripe.Event,
  session: Stripe.Checkout.Session,
): Promise<EventAck> {
  const userId = session.metadata?.tollgateUserId;
  const threshold = Number(session.metadata?.tollgateThreshold);
  const amountMinor = Number(session.metadata?.tollgateAmountMinor);
  const account = userId
    ? await topupsDb(rt.ctx.db)
        .selectFrom('topup_accounts')
        .selectAll()
        .where('user_id', '=', userId)
        .executeTakeFirst()
    : undefined;
  // The session must be for the customer Tollgate made for this user: metadata alone is not trusted.
  const valid =
    account &&
    account.stripe_customer_id === idOf(session.customer) &&
    Number.isSafeInteger(threshold) &&
    Number.isSafeInteger(amountMinor);
  if (!account || !valid) return recordOnly(rt, event);
  const setupIntent = await rt.stripe!.setupIntents.retrieve(idOf(session.setup_intent)!).catch((error) => {
    throw paymentProviderError(error);
  });
  const paymentMethod = idOf(setupIntent.payment_method);
  if (!paymentMethod) return recordOnly(rt, event);
  const now = rt.ctx.clock.now();
  const fresh = await topupsDb(rt.ctx.db)
    .transaction()
    .execute(async (trx) => {
      if (!(await claimEvent(trx, event, now))) return false;
      await trx
        .updateTable('topup_accounts')
        .set({
          payment_method_id: paymentMethod,
          auto_enabled: 1,
          auto_threshold: threshold,
          auto_amount_minor: amountMinor,
          auto_failure: null,
          auto_failed_at: null,
          updated_at: now,
        })
        .where('user_id', '=', account.user_id)
        .execute();
      return true;
    });
  return { received: true, effect: 'auto_topup_saved', ...(fresh ? {} : { duplicate: true as const }) };
}
