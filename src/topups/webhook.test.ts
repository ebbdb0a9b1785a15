import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import Stripe from 'stripe';
import { describeEachDatabase } from '../testing/harness.ts';
import { FakeStripe } from './testing/stripe-server.ts';
import { assertLedgerVerifies, paidTopup, startTopup, topupOf, walletOf } from './testing/scenario.ts';

const fake = await new FakeStripe().start();
after(() => fake.stop());

describeEachDatabase(
  'the Stripe webhook credits each top-up once',
  (env) => {
    before(() => {
      fake.webhookUrl = `${env.baseUrl}/api/webhooks/stripe`;
    });
    const eventCount = async () =>
      Number(
        (
          await env.db
            .selectFrom('stripe_events')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    it('a paid Checkout top-up is credited exactly once, with its Stripe ids, however many copies of its event arrive at once', async () => {
      const user = await env.createUser();
      const started = await startTopup(env, user, 10);
      const completed = fake.event('checkout.session.completed', fake.pay(started.sessionId));
      const answers = await Promise.all(Array.from({ length: 50 }, () => fake.deliver(completed)));
      assert.ok(
        answers.every((a) => a.status === 200),
        JSON.stringify(answers.find((a) => a.status !== 200)),
      );
      assert.equal(answers.filter((a) => !a.body.duplicate).length, 1);
      for (let i = 0; i < 3; i++) assert.equal((await fake.deliver(completed)).body.duplicate, true);
      assert.deepEqual(await walletOf(env, user), { balance: 1000_000_000, reserved: 0, available: 1000_000_000 });
      const topup = await topupOf(env, user, started.topupId);
      assert.equal(topup.status, 'succeeded');
      assert.equal(topup.credits, 1000);
      assert.match(topup.receiptUrl, /\/receipts\/pi_/);
      const movements = await env.db
        .selectFrom('ledger_transactions')
        .select(['type', 'reference'])
        .where('user_id', '=', user.userId)
        .execute();
      assert.deepEqual(
        movements.map((m) => ({ ...m })),
        [{ type: 'topup', reference: `stripe:${completed.id}:${fake.sessions.get(started.sessionId).payment_intent}` }],
      );
      await assertLedgerVerifies(env, user.userId);
    });

    it('an asynchronous payment is credited only by its success event, in whichever order the events arrive', async () => {
      const user = await env.createUser();
      const started = await startTopup(env, user, 5);
      const unpaid = fake.event('checkout.session.completed', fake.pay(started.sessionId, { async: true }));
      const succeeded = fake.event('checkout.session.async_payment_succeeded', {
        ...fake.sessions.get(started.sessionId),
        payment_status: 'paid',
      });
      // Reordered: the success first, then the completion that said "unpaid" (too late to mark it processing), then both again.
      assert.equal((await fake.deliver(succeeded)).body.effect, 'credited');
      assert.deepEqual((await fake.deliver(unpaid)).body, {
        received: true,
        effect: 'ignored',
        topupId: started.topupId,
        status: 'succeeded',
      });
      assert.equal((await fake.deliver(succeeded)).body.duplicate, true);
      assert.equal((await fake.deliver(unpaid)).body.duplicate, true);
      assert.equal((await topupOf(env, user, started.topupId)).status, 'succeeded');
      assert.equal((await walletOf(env, user)).balance, 500_000_000);

      const other = await startTopup(env, user, 5);
      const otherUnpaid = fake.event('checkout.session.completed', fake.pay(other.sessionId, { async: true }));
      assert.equal((await fake.deliver(otherUnpaid)).body.effect, 'processing');
      assert.equal((await topupOf(env, user, other.topupId)).status, 'processing');
      assert.equal((await walletOf(env, user)).balance, 500_000_000, 'an unpaid completion credits nothing');
      const failed = await fake.deliver(
        fake.event('checkout.session.async_payment_failed', fake.sessions.get(other.sessionId)),
      );
      assert.equal(failed.body.effect, 'failed');
      const row = await topupOf(env, user, other.topupId);
      assert.equal(row.status, 'failed');
      assert.equal(row.failureReason, 'The payment failed.');
      // A late success of a failed payment (Stripe does not send one; a forged order must not credit) changes nothing.
      await fake.deliver(
        fake.event('checkout.session.async_payment_succeeded', {
          ...fake.sessions.get(other.sessionId),
          payment_status: 'paid',
        }),
      );
      assert.equal((await walletOf(env, user)).balance, 500_000_000);
      await assertLedgerVerifies(env, user.userId);
    });

    it('an event that finds its top-up past the state it leads from answers ignored with the top-up status, not the effect it would have had', async () => {
      const user = await env.createUser();
      // A success for a top-up already failed: nothing is credited, and the answer says so.
      const failing = await startTopup(env, user, 5);
      await fake.deliver(fake.event('checkout.session.completed', fake.pay(failing.sessionId, { async: true })));
      await fake.deliver(fake.event('checkout.session.async_payment_failed', fake.sessions.get(failing.sessionId)));
      const lateSuccess = fake.event('checkout.session.async_payment_succeeded', {
        ...fake.sessions.get(failing.sessionId),
        payment_status: 'paid',
      });
      const late = await fake.deliver(lateSuccess);
      assert.equal(late.status, 200);
      assert.deepEqual(late.body, { received: true, effect: 'ignored', topupId: failing.topupId, status: 'failed' });
      assert.deepEqual((await fake.deliver(lateSuccess)).body, { ...late.body, duplicate: true });
      assert.equal((await walletOf(env, user)).balance, 0);

      // The second success event of a payment credited by the first; an expiry and a failure after the credit.
      const paid = await startTopup(env, user, 5);
      const session = fake.pay(paid.sessionId);
      const completed = fake.event('checkout.session.completed', session);
      assert.equal((await fake.deliver(completed)).body.effect, 'credited');
      for (const type of [
        'checkout.session.async_payment_succeeded',
        'checkout.session.expired',
        'checkout.session.async_payment_failed',
      ]) {
        const answer = await fake.deliver(fake.event(type, session));
        assert.deepEqual(
          answer.body,
          { received: true, effect: 'ignored', topupId: paid.topupId, status: 'succeeded' },
          type,
        );
      }
      assert.equal((await topupOf(env, user, paid.topupId)).status, 'succeeded');
      assert.equal((await walletOf(env, user)).balance, 500_000_000);
      // A copy of the event that did credit still answers what it did.
      assert.deepEqual((await fake.deliver(completed)).body, {
        received: true,
        effect: 'credited',
        topupId: paid.topupId,
        duplicate: true,
      });
      await assertLedgerVerifies(env, user.userId);
    });

    it('a delivery without a valid signature is refused (400 malformed, 401 unverified) and nothing is recorded', async () => {
      const user = await env.createUser();
      const started = await startTopup(env, user, 10);
      const event = fake.event('checkout.session.completed', fake.pay(started.sessionId));
      const payload = JSON.stringify(event);
      const before = await eventCount();
      const missing = await fake.deliver(event, { header: null });
      assert.equal(missing.status, 400);
      assert.equal(missing.body.error.code, 'WEBHOOK_INVALID');
      assert.equal((await fake.deliver(event, { header: 'garbage' })).status, 400);
      const wrongSecret = await fake.deliver(event, { secret: 'whsec_notTheEndpointsSecret' });
      assert.equal(wrongSecret.status, 401);
      assert.equal(wrongSecret.body.error.code, 'WEBHOOK_UNVERIFIED');
      const tampered = Stripe.webhooks.generateTestHeaderString({ payload, secret: fake.webhookSecret });
      assert.equal((await fake.deliver(payload.replace('"paid"', '"paid" '), { header: tampered })).status, 401);
      assert.equal(
        (await fake.deliver(event, { timestamp: Math.floor(Date.now() / 1000) - 600 })).status,
        401,
        'a signature 10 minutes old',
      );
      assert.equal(
        (await fake.deliver(event, { timestamp: Math.floor(Date.now() / 1000) + 600 })).status,
        401,
        'a signature 10 minutes ahead',
      );
      assert.equal(await eventCount(), before);
      assert.equal((await walletOf(env, user)).balance, 0);
      assert.equal((await topupOf(env, user, started.topupId)).status, 'pending');
      // The genuine delivery still works afterwards.
      assert.equal((await fake.deliver(event)).body.effect, 'credited');
      await assertLedgerVerifies(env, user.userId);
    });

    it('an expired Checkout Session marks its top-up expired and credits nothing', async () => {
      const user = await env.createUser();
      const started = await startTopup(env, user, 10);
      const session = fake.sessions.get(started.sessionId);
      assert.equal(
        (await fake.deliver(fake.event('checkout.session.expired', { ...session, status: 'expired' }))).body.effect,
        'expired',
      );
      assert.equal((await topupOf(env, user, started.topupId)).status, 'expired');
      assert.equal((await walletOf(env, user)).balance, 0);
    });

    it("a paid session whose amount is not the top-up's price credits nothing", async () => {
      const user = await env.createUser();
      const started = await startTopup(env, user, 10);
      const session = { ...fake.pay(started.sessionId), amount_total: 100 };
      assert.equal((await fake.deliver(fake.event('checkout.session.completed', session))).body.effect, 'ignored');
      assert.equal((await walletOf(env, user)).balance, 0);
      assert.equal((await topupOf(env, user, started.topupId)).status, 'pending');
    });

    it("a session of another user's customer, or another session, that names a top-up in its metadata changes nothing of that top-up", async () => {
      const payer = await env.createUser();
      const victim = await env.createUser();
      const paid = await startTopup(env, payer, 10);
      const named = await startTopup(env, victim, 10);
      const session = fake.pay(paid.sessionId);
      const forged = { ...session, metadata: { ...session.metadata, tollgateTopupId: named.topupId } };
      const answer = await fake.deliver(fake.event('checkout.session.completed', forged));
      assert.equal(answer.status, 200);
      assert.equal(answer.body.effect, 'ignored');
      // Another session of the same user's customer is not the top-up's session either.
      const second = await startTopup(env, victim, 10);
      const sameCustomer = { ...fake.pay(second.sessionId), metadata: { tollgateTopupId: named.topupId } };
      assert.equal((await fake.deliver(fake.event('checkout.session.completed', sameCustomer))).body.effect, 'ignored');
      for (const type of ['checkout.session.expired', 'checkout.session.async_payment_failed'])
        assert.equal((await fake.deliver(fake.event(type, forged))).body.effect, 'ignored');
      assert.equal((await walletOf(env, victim)).balance, 0);
      assert.equal((await topupOf(env, victim, named.topupId)).status, 'pending');
      // The victim's own payment still credits their top-up, and the payer's own event theirs.
      assert.equal(
        (await fake.deliver(fake.event('checkout.session.completed', fake.pay(named.sessionId)))).body.effect,
        'credited',
      );
      assert.equal((await fake.deliver(fake.event('checkout.session.completed', session))).body.effect, 'credited');
      assert.equal((await walletOf(env, victim)).balance, 1000_000_000);
      assert.equal((await walletOf(env, payer)).balance, 1000_000_000);
      // A refund of a payment Tollgate never recorded, whose PaymentIntent names the victim's top-up, takes nothing from them.
      const stray = fake.pay((await startTopup(env, payer, 10)).sessionId).payment_intent;
      fake.paymentIntents.get(stray).metadata = { tollgateTopupId: named.topupId };
      const refund = await fake.deliver(fake.event('charge.refunded', fake.charge(stray, 1000)));
      assert.equal(refund.body.effect, 'ignored');
      assert.equal((await walletOf(env, victim)).balance, 1000_000_000);
      assert.equal((await topupOf(env, victim, named.topupId)).refunded, 0);
      await assertLedgerVerifies(env);
    });

    it('events about payments Tollgate did not start are acknowledged without effect', async () => {
      const delivery = await fake.deliver(fake.event('customer.created', { id: 'cus_x', object: 'customer' }));
      assert.equal(delivery.status, 200);
      assert.equal(delivery.body.effect, 'ignored');
      const paid = await paidTopup(env, fake, await env.createUser(), 5);
      assert.ok(paid.paymentIntent.startsWith('pi_'));
    });
  },
  { config: fake.config() },
);
