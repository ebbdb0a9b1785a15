import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type DashboardSession, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { putModel } from '../gateway/testing.ts';
import { FakeStripe } from './testing/stripe-server.ts';
import { assertLedgerVerifies, debtOf, paidTopup, startTopup, topupOf, walletOf } from './testing/scenario.ts';

const fake = await new FakeStripe().start();
const mock = await startMockUpstream();
after(() => Promise.all([fake.stop(), mock.close()]));

/** A chat that costs exactly `model`'s request price (the mock's tokens are free). */
async function chat(env: TestEnv, key: string, model: string) {
  return env.request('POST', '/api/v1/chat/completions', {
    token: key,
    body: { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 },
  });
}

async function keyOf(env: TestEnv, user: DashboardSession): Promise<string> {
  const created = await env.dashboard(user, 'POST', '/api/user/api-keys', {
    name: 'spender',
    permissions: ['ai:chat'],
  });
  assert.equal(created.status, 200, created.text);
  return created.body.apiKey.key;
}

const CREDITS = 1_000_000;

describeEachDatabase(
  'refunds and disputes take credits back; what was spent becomes a debt that blocks calls until repaid',
  (env) => {
    before(async () => {
      fake.webhookUrl = `${env.baseUrl}/api/webhooks/stripe`;
      await putModel(env, 'acme/pricey', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { request: 900 },
      });
      await putModel(env, 'acme/cheap', { provider: 'mock', upstreamModel: 'default-model', pricing: { request: 1 } });
    });

    it('a refund after the credits were spent takes what is available, leaves a debt that answers 402 with the owed amount, and the next top-up repays it first', async () => {
      const user = await env.createUser();
      const key = await keyOf(env, user);
      const { topupId, paymentIntent } = await paidTopup(env, fake, user, 10);
      assert.equal((await chat(env, key, 'acme/pricey')).status, 200);
      assert.equal((await walletOf(env, user)).balance, 100 * CREDITS);

      // A partial refund (3 of 10 USD) takes 300 credits: 100 available, 200 owed.
      const partial = await fake.deliver(fake.event('charge.refunded', fake.charge(paymentIntent, 300)));
      assert.equal(partial.body.effect, 'refunded');
      assert.deepEqual(await walletOf(env, user), { balance: 0, reserved: 0, available: 0 });
      assert.equal(await debtOf(env, user.userId), 200 * CREDITS);
      await assertLedgerVerifies(env, user.userId);

      // The full refund (Stripe's amount_refunded is cumulative) takes the other 700 credits, all owed; its copy nothing.
      const full = fake.event('charge.refunded', fake.charge(paymentIntent, 1000));
      assert.equal((await fake.deliver(full)).body.effect, 'refunded');
      assert.equal((await fake.deliver(full)).body.duplicate, true);
      assert.equal(await debtOf(env, user.userId), 900 * CREDITS);
      assert.equal((await topupOf(env, user, topupId)).refunded, 1000);

      const refused = await chat(env, key, 'acme/cheap');
      assert.equal(refused.status, 402);
      assert.equal(refused.body.error.code, 'INSUFFICIENT_CREDITS');
      assert.equal(refused.body.error.required, 900);
      assert.equal(refused.body.error.owed, 900);
      assert.equal(refused.body.error.available, 0);
      assert.match(refused.body.error.message, /owes 900 credits/);
      assert.equal(
        (await env.dashboard(user, 'GET', '/api/wallet/topups')).body.owed,
        900,
        'the wallet page says what is owed',
      );
      await assertLedgerVerifies(env, user.userId);

      // 5 USD = 500 credits: all of it repays the debt, which still blocks.
      await paidTopup(env, fake, user, 5);
      assert.equal(await debtOf(env, user.userId), 400 * CREDITS);
      assert.equal((await walletOf(env, user)).balance, 0);
      assert.equal((await chat(env, key, 'acme/cheap')).body.error.required, 400);
      // 10 USD more: 400 repay the rest, 600 become available, and calls go through again.
      await paidTopup(env, fake, user, 10);
      assert.equal(await debtOf(env, user.userId), 0);
      assert.equal((await walletOf(env, user)).balance, 600 * CREDITS);
      assert.equal((await chat(env, key, 'acme/cheap')).status, 200);
      assert.equal((await walletOf(env, user)).balance, 599 * CREDITS);
      const types = await env.db
        .selectFrom('ledger_transactions')
        .select('type')
        .where('user_id', '=', user.userId)
        .where('type', 'in', ['topup', 'refund'])
        .orderBy('seq')
        .execute();
      assert.deepEqual(
        types.map((t) => t.type),
        ['topup', 'refund', 'refund', 'topup', 'topup'],
      );
      await assertLedgerVerifies(env, user.userId);
    });

    it('a refund that arrives before its payment was credited is refused unrecorded (409), and applies on the later delivery', async () => {
      const user = await env.createUser();
      const started = await startTopup(env, user, 5);
      const paid = fake.pay(started.sessionId);
      // The top-up does not know its PaymentIntent yet: the PaymentIntent's metadata (read from Stripe) names it.
      const refund = fake.event('charge.refunded', fake.charge(paid.payment_intent, 500));
      const early = await fake.deliver(refund);
      assert.equal(early.status, 409);
      assert.equal(early.body.error.code, 'CONFLICT');
      assert.equal((await fake.deliver(fake.event('checkout.session.completed', paid))).body.effect, 'credited');
      assert.equal((await fake.deliver(refund)).body.effect, 'refunded');
      assert.deepEqual(await walletOf(env, user), { balance: 0, reserved: 0, available: 0 });
      assert.equal(await debtOf(env, user.userId), 0);
      await assertLedgerVerifies(env, user.userId);
    });

    it('a dispute takes the credits back (a debt for what was spent), and a won dispute gives them back, repaying the debt first', async () => {
      const user = await env.createUser();
      const key = await keyOf(env, user);
      const { topupId, paymentIntent } = await paidTopup(env, fake, user, 10);
      assert.equal((await chat(env, key, 'acme/pricey')).status, 200);
      const created = await fake.deliver(fake.event('charge.dispute.created', fake.dispute(paymentIntent, 1000)));
      assert.equal(created.body.effect, 'disputed');
      assert.equal(await debtOf(env, user.userId), 900 * CREDITS);
      assert.equal((await walletOf(env, user)).balance, 0);
      assert.equal((await topupOf(env, user, topupId)).disputed, 1000);
      assert.equal((await chat(env, key, 'acme/cheap')).status, 402);
      await assertLedgerVerifies(env, user.userId);

      const won = fake.event('charge.dispute.closed', fake.dispute(paymentIntent, 1000, 'won'));
      assert.equal((await fake.deliver(won)).body.effect, 'dispute_won');
      assert.equal((await fake.deliver(won)).body.duplicate, true);
      assert.equal(await debtOf(env, user.userId), 0);
      assert.equal((await walletOf(env, user)).balance, 100 * CREDITS);
      assert.equal((await topupOf(env, user, topupId)).disputed, 0);
      const movements = await env.db
        .selectFrom('ledger_transactions')
        .select(['type', 'reference'])
        .where('user_id', '=', user.userId)
        .where('type', '=', 'dispute')
        .orderBy('seq')
        .execute();
      assert.equal(movements.length, 2);
      assert.ok(
        movements.every((m) => m.reference?.includes(`dp_${paymentIntent.slice(3)}`)),
        JSON.stringify(movements),
      );
      await assertLedgerVerifies(env, user.userId);
    });

    it('a lost dispute keeps the credits taken; one closed before its creation was seen takes them once', async () => {
      const user = await env.createUser();
      const { paymentIntent } = await paidTopup(env, fake, user, 5);
      const lost = await fake.deliver(fake.event('charge.dispute.closed', fake.dispute(paymentIntent, 500, 'lost')));
      assert.equal(lost.body.effect, 'dispute_lost');
      assert.equal((await walletOf(env, user)).balance, 0);
      // The creation, delivered late, takes nothing more.
      assert.equal(
        (await fake.deliver(fake.event('charge.dispute.created', fake.dispute(paymentIntent, 500)))).status,
        200,
      );
      assert.equal((await walletOf(env, user)).balance, 0);
      assert.equal(await debtOf(env, user.userId), 0);
      await assertLedgerVerifies(env, user.userId);
    });

    it("an operator's grant repays a debt first too", async () => {
      const user = await env.createUser();
      const key = await keyOf(env, user);
      const { paymentIntent } = await paidTopup(env, fake, user, 10);
      assert.equal((await chat(env, key, 'acme/pricey')).status, 200);
      await fake.deliver(fake.event('charge.refunded', fake.charge(paymentIntent, 1000)));
      assert.equal(await debtOf(env, user.userId), 900 * CREDITS);
      const granted = await env.admin('POST', `/api/admin/users/${user.userId}/credits`, {
        amount: 1000,
        reason: 'goodwill',
      });
      assert.equal(granted.status, 200, granted.text);
      assert.equal(granted.body.balance, 100);
      assert.equal(await debtOf(env, user.userId), 0);
      assert.equal((await chat(env, key, 'acme/cheap')).status, 200);
      await assertLedgerVerifies(env, user.userId);
    });

    it('an inquiry (a warning dispute) takes nothing, and its closing gives nothing', async () => {
      const user = await env.createUser();
      const { paymentIntent } = await paidTopup(env, fake, user, 5);
      const inquiry = { ...fake.dispute(paymentIntent, 500), status: 'warning_needs_response' };
      assert.equal((await fake.deliver(fake.event('charge.dispute.created', inquiry))).body.effect, 'ignored');
      assert.equal(
        (await fake.deliver(fake.event('charge.dispute.closed', { ...inquiry, status: 'warning_closed' }))).body.effect,
        'dispute_won',
      );
      assert.equal((await walletOf(env, user)).balance, 500 * CREDITS);
      await assertLedgerVerifies(env, user.userId);
    });
  },
  { config: { ...fake.config(), providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
