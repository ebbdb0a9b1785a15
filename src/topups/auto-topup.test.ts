import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type DashboardSession, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { putModel } from '../gateway/testing.ts';
import { FakeStripe } from './testing/stripe-server.ts';
import { assertLedgerVerifies, paidTopup, topupOf, walletOf } from './testing/scenario.ts';
import type { TopupEvent } from './service.ts';

const fake = await new FakeStripe().start();
const mock = await startMockUpstream();
after(() => Promise.all([fake.stop(), mock.close()]));
const CREDITS = 1_000_000;

/** Saves a payment method through Checkout in setup mode, as the dashboard does; auto top-up is then on. */
async function setUpAutoTopup(env: TestEnv, user: DashboardSession, threshold: number, amount: number): Promise<void> {
  const setup = await env.dashboard(user, 'POST', '/api/wallet/auto-topup/setup', { threshold, amount });
  assert.equal(setup.status, 201, setup.text);
  const session = fake.pay(new URL(setup.body.url).pathname.split('/').at(-1)!);
  assert.equal(session.mode, 'setup');
  assert.equal((await fake.deliver(fake.event('checkout.session.completed', session))).body.effect, 'auto_topup_saved');
}

/** Waits for the work billing's observers started (the auto top-up check after each settle). */
async function observersDone(env: TestEnv): Promise<void> {
  while (env.service.ctx.inflight.size > 0) await Promise.all([...env.service.ctx.inflight]);
}

describeEachDatabase(
  'auto top-up: one off-session payment when a settle leaves the wallet below the threshold',
  (env) => {
    const heard: TopupEvent[] = [];
    let key = '';
    let user: DashboardSession;
    before(async () => {
      fake.webhookUrl = `${env.baseUrl}/api/webhooks/stripe`;
      env.service.ctx.topups.observe((event) => heard.push(event));
      await putModel(env, 'acme/hundred', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { request: 100 },
      });
      user = await env.createUser();
      key = (await env.dashboard(user, 'POST', '/api/user/api-keys', { name: 'k', permissions: ['ai:chat'] })).body
        .apiKey.key;
    });
    const spend = (count: number) =>
      Promise.all(
        Array.from({ length: count }, () =>
          env.request('POST', '/api/v1/chat/completions', {
            token: key,
            body: { model: 'acme/hundred', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 },
          }),
        ),
      );
    const intents = () => fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/payment_intents');

    it('turning it on needs a saved payment method; Checkout in setup mode saves one and turns it on', async () => {
      const off = await env.dashboard(user, 'PUT', '/api/wallet/auto-topup', {
        enabled: true,
        threshold: 250,
        amount: 10,
      });
      assert.equal(off.status, 400);
      assert.match(off.body.error.message, /Save a payment method first/);
      await setUpAutoTopup(env, user, 250, 10);
      const state = await env.dashboard(user, 'GET', '/api/wallet/auto-topup');
      assert.deepEqual(state.body, {
        enabled: true,
        threshold: 250,
        amount: 10,
        hasPaymentMethod: true,
        pending: false,
        failure: null,
      });
    });

    it('concurrent calls that drop the wallet below the threshold start exactly one payment, credited by its webhook', async () => {
      await paidTopup(env, fake, user, 10);
      fake.holdOffSession = true;
      const before = intents().length;
      const answers = await spend(9);
      assert.ok(
        answers.every((a) => a.status === 200),
        answers.map((a) => a.text).join(),
      );
      await observersDone(env);
      // More settles and checks while the payment is in flight start nothing.
      await spend(3);
      await Promise.all(Array.from({ length: 20 }, () => env.service.ctx.topups.checkAutoTopup(user.userId)));
      await observersDone(env);
      const started = intents().slice(before);
      assert.equal(started.length, 1);
      assert.equal(started[0].params.off_session, 'true');
      assert.equal(started[0].params.amount, '1000');
      const topupId = started[0].params.metadata.tollgateTopupId;
      assert.equal(started[0].idempotencyKey, `tollgate-auto-topup-${topupId}`);
      assert.equal((await env.dashboard(user, 'GET', '/api/wallet/auto-topup')).body.pending, true);

      const intent = [...fake.paymentIntents.values()].find((p) => p.metadata.tollgateTopupId === topupId);
      const succeeded = fake.event('payment_intent.succeeded', { ...intent, status: 'succeeded' });
      assert.equal((await fake.deliver(succeeded)).body.effect, 'credited');
      assert.equal((await fake.deliver(succeeded)).body.duplicate, true);
      const topup = await topupOf(env, user, topupId);
      assert.equal(topup.kind, 'auto');
      assert.equal(topup.status, 'succeeded');
      assert.equal((await env.dashboard(user, 'GET', '/api/wallet/auto-topup')).body.pending, false);
      assert.ok(
        heard.some((e) => e.type === 'topup_succeeded' && e.topupId === topupId && e.credits === 1000 * CREDITS),
      );
      await assertLedgerVerifies(env, user.userId);
    });

    it('a declined payment turns auto top-up off and the dashboard says why', async () => {
      fake.holdOffSession = false;
      fake.declineOffSession = true;
      const { available } = await walletOf(env, user);
      const before = intents().length;
      await spend(Math.ceil((available - 200 * CREDITS) / (100 * CREDITS)));
      await observersDone(env);
      assert.equal(intents().length, before + 1);
      const state = (await env.dashboard(user, 'GET', '/api/wallet/auto-topup')).body;
      assert.equal(state.enabled, false);
      assert.equal(state.pending, false);
      assert.equal(state.failure.reason, 'Your card has insufficient funds.');
      const failed = heard.find((e) => e.type === 'topup_failed');
      assert.ok(failed, JSON.stringify(heard));
      assert.equal((await topupOf(env, user, failed.topupId)).status, 'failed');
      // Off: later settles start nothing.
      await spend(1);
      await observersDone(env);
      assert.equal(intents().length, before + 1);
      await assertLedgerVerifies(env, user.userId);
    });

    it('a payment that fails later (payment_intent.payment_failed) turns it off too; setting it up again clears the notice', async () => {
      fake.declineOffSession = false;
      fake.holdOffSession = true;
      await setUpAutoTopup(env, user, 100_000, 5);
      const before = intents().length;
      await spend(1);
      await observersDone(env);
      assert.equal(intents().length, before + 1);
      const topupId = intents().at(-1)!.params.metadata.tollgateTopupId;
      const intent = [...fake.paymentIntents.values()].find((p) => p.metadata.tollgateTopupId === topupId);
      const failed = await fake.deliver(
        fake.event('payment_intent.payment_failed', {
          ...intent,
          status: 'requires_payment_method',
          last_payment_error: { message: 'Your card was declined.' },
        }),
      );
      assert.equal(failed.body.effect, 'failed');
      const state = (await env.dashboard(user, 'GET', '/api/wallet/auto-topup')).body;
      assert.equal(state.enabled, false);
      assert.equal(state.failure.reason, 'Your card was declined.');
      const back = await env.dashboard(user, 'PUT', '/api/wallet/auto-topup', {
        enabled: true,
        threshold: 1,
        amount: 5,
      });
      assert.equal(back.status, 200);
      assert.equal(back.body.failure, null);
      assert.equal(back.body.enabled, true);
      fake.holdOffSession = false;
    });

    it('an auto top-up whose webhook never comes is finished by the reconcile job, once, even racing the late webhook', async () => {
      const reconcile = async () => {
        const run = await env.admin('POST', '/api/admin/cron/reconcile-auto-topups');
        assert.equal(run.status, 200, run.text);
        return run.body.result;
      };
      const pendingTopup = async () => {
        fake.holdOffSession = true;
        const before = intents().length;
        // Spend until the wallet is below the 250-credit threshold (each call costs 100 credits).
        const { available } = await walletOf(env, user);
        await spend(Math.floor((available - 250 * CREDITS) / (100 * CREDITS)) + 1);
        await observersDone(env);
        const started = intents().slice(before);
        assert.equal(started.length, 1);
        const topupId = started[0].params.metadata.tollgateTopupId as string;
        const intent = [...fake.paymentIntents.values()].find((p) => p.metadata.tollgateTopupId === topupId);
        return { topupId, intent };
      };
      fake.declineOffSession = false;
      const on = await env.dashboard(user, 'PUT', '/api/wallet/auto-topup', {
        enabled: true,
        threshold: 250,
        amount: 10,
      });
      assert.equal(on.status, 200, on.text);
      if ((await walletOf(env, user)).available < 500 * CREDITS) await paidTopup(env, fake, user, 10);
      const credited = (topupId: string) => heard.filter((e) => e.type === 'topup_succeeded' && e.topupId === topupId);

      // Still processing at Stripe: the job leaves it pending.
      const first = await pendingTopup();
      assert.equal((await reconcile()).waiting, 1);
      assert.equal((await topupOf(env, user, first.topupId)).status, 'pending');
      // Stripe has taken the money, and the webhook is lost: the job credits it and frees the slot.
      first.intent.status = 'succeeded';
      const balance = (await walletOf(env, user)).balance;
      assert.equal((await reconcile()).credited, 1);
      assert.equal((await topupOf(env, user, first.topupId)).status, 'succeeded');
      assert.equal((await walletOf(env, user)).balance, balance + 1000 * CREDITS);
      assert.equal((await env.dashboard(user, 'GET', '/api/wallet/auto-topup')).body.pending, false);
      // The webhook arrives after all: nothing more is credited.
      const late = await fake.deliver(fake.event('payment_intent.succeeded', first.intent));
      assert.equal(late.status, 200);
      assert.equal((await walletOf(env, user)).balance, balance + 1000 * CREDITS);
      assert.equal(credited(first.topupId).length, 1);

      // A process that died before recording its PaymentIntent: the job finds it among the customer's
      // PaymentIntents by the top-up id in its metadata, and races the webhook: credited once.
      const second = await pendingTopup();
      await env.service.ctx.db
        .updateTable('topups' as never)
        .set({ payment_intent_id: null } as never)
        .where('id' as never, '=', second.topupId as never)
        .execute();
      second.intent.status = 'succeeded';
      const paymentsBefore = fake.paymentIntents.size;
      const balanceBefore = (await walletOf(env, user)).balance;
      await Promise.all([
        reconcile(),
        fake.deliver(fake.event('payment_intent.succeeded', second.intent)),
        reconcile(),
      ]);
      assert.equal(fake.paymentIntents.size, paymentsBefore, 'no second payment was made');
      assert.equal((await topupOf(env, user, second.topupId)).status, 'succeeded');
      assert.equal((await walletOf(env, user)).balance, balanceBefore + 1000 * CREDITS);
      assert.equal(credited(second.topupId).length, 1);

      // Stripe fails while the payment is being started (500s past the client's retries): not a decline, so the
      // top-up stays pending and auto top-up on. Stripe has no PaymentIntent for it: the job gives it up (nothing is
      // charged late) and frees the slot, so the next settle below the threshold starts a new one.
      fake.holdOffSession = false;
      fake.failIntentRequests = 3;
      const { available } = await walletOf(env, user);
      await spend(Math.floor((available - 250 * CREDITS) / (100 * CREDITS)) + 1);
      await observersDone(env);
      assert.equal(fake.failIntentRequests, 0);
      const unanswered = (await env.dashboard(user, 'GET', '/api/wallet/topups')).body.topups.find(
        (t: { kind: string; status: string }) => t.kind === 'auto' && t.status === 'pending',
      );
      assert.ok(unanswered, 'the auto top-up is left pending');
      assert.equal((await env.dashboard(user, 'GET', '/api/wallet/auto-topup')).body.enabled, true);
      const paymentsBeforeGivingUp = fake.paymentIntents.size;
      assert.equal((await reconcile()).failed, 1);
      assert.equal(fake.paymentIntents.size, paymentsBeforeGivingUp, 'nothing was charged late');
      const givenUp = await topupOf(env, user, unanswered.id);
      assert.equal(givenUp.status, 'failed');
      assert.match(givenUp.failureReason, /never started/);
      const afterOutage = (await env.dashboard(user, 'GET', '/api/wallet/auto-topup')).body;
      assert.deepEqual([afterOutage.enabled, afterOutage.pending, afterOutage.failure], [true, false, null]);
      const balanceAfterOutage = (await walletOf(env, user)).balance;
      await spend(1);
      await observersDone(env);
      assert.equal((await reconcile()).credited, 1);
      assert.equal((await walletOf(env, user)).balance, balanceAfterOutage - 100 * CREDITS + 1000 * CREDITS);
      fake.holdOffSession = true;

      // Stripe says it failed: failed as its webhook would say, auto top-up off with the reason.
      const third = await pendingTopup();
      Object.assign(third.intent, {
        status: 'requires_payment_method',
        last_payment_error: { message: 'Your card was declined.' },
      });
      assert.equal((await reconcile()).failed, 1);
      assert.equal((await topupOf(env, user, third.topupId)).status, 'failed');
      const state = (await env.dashboard(user, 'GET', '/api/wallet/auto-topup')).body;
      assert.deepEqual([state.enabled, state.failure?.reason], [false, 'Your card was declined.']);
      assert.ok(heard.some((e) => e.type === 'topup_failed' && e.topupId === third.topupId));
      await assertLedgerVerifies(env, user.userId);
      fake.holdOffSession = false;
    });
  },
  {
    config: {
      ...fake.config(),
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }],
      AUTO_TOPUP_RECONCILE_SECONDS: 0,
    },
  },
);
