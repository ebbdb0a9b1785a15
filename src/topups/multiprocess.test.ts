import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { selectedDatabases, startServeProcess, TestEnv } from '../testing/harness.ts';
import { FakeStripe } from './testing/stripe-server.ts';
import { assertLedgerVerifies, debtOf, startTopup, walletOf } from './testing/scenario.ts';

// Two `tollgate serve` processes on one PostgreSQL schema: only the database can make an event count once
// across processes. (SQLite is one process's file; its concurrent copies are in webhook.test.ts.)
if (selectedDatabases().includes('postgres')) {
  const fake = await new FakeStripe().start();

  describe('Stripe events across two processes [postgres]', () => {
    const env = new TestEnv('postgres', { config: fake.config() });
    let second: Awaited<ReturnType<typeof startServeProcess>>;
    before(async () => {
      await env.start();
      second = await startServeProcess(env, fake.config());
    });
    after(async () => {
      await second?.stop();
      await env.stop();
      await fake.stop();
    });
    const urls = () => [`${env.baseUrl}/api/webhooks/stripe`, `${second.baseUrl}/api/webhooks/stripe`];

    it('50 concurrent copies of one payment event, sent to both processes, credit it exactly once; 50 copies of its refund take back once', async () => {
      const user = await env.createUser();
      const started = await startTopup(env, user, 10);
      const paid = fake.pay(started.sessionId);
      const completed = fake.event('checkout.session.completed', paid);
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => fake.deliver(completed, { url: urls()[i % 2] })),
      );
      assert.ok(
        answers.every((a) => a.status === 200),
        JSON.stringify(answers.find((a) => a.status !== 200)),
      );
      assert.equal(answers.filter((a) => a.body.effect === 'credited' && !a.body.duplicate).length, 1);
      assert.equal(answers.filter((a) => a.body.duplicate).length, 49);
      assert.equal((await walletOf(env, user)).balance, 1000_000_000);

      const refund = fake.event('charge.refunded', fake.charge(paid.payment_intent, 400));
      const refunds = await Promise.all(
        Array.from({ length: 50 }, (_, i) => fake.deliver(refund, { url: urls()[i % 2] })),
      );
      assert.ok(
        refunds.every((a) => a.status === 200),
        JSON.stringify(refunds.find((a) => a.status !== 200)),
      );
      assert.equal(refunds.filter((a) => !a.body.duplicate).length, 1);
      assert.equal((await walletOf(env, user)).balance, 600_000_000);
      assert.equal(await debtOf(env, user.userId), 0);
      const rows = await env.db
        .selectFrom('stripe_events')
        .select('event_id')
        .where('event_id', 'in', [completed.id, refund.id])
        .execute();
      assert.equal(rows.length, 2);
      await assertLedgerVerifies(env, user.userId);
    });

    it("a payment's two success events (completed and async-succeeded), 25 copies each across both processes, credit it once", async () => {
      const user = await env.createUser();
      const started = await startTopup(env, user, 5);
      const paid = fake.pay(started.sessionId);
      const events = [
        fake.event('checkout.session.completed', paid),
        fake.event('checkout.session.async_payment_succeeded', paid),
      ];
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => fake.deliver(events[i % 2], { url: urls()[Math.floor(i / 2) % 2] })),
      );
      assert.ok(answers.every((a) => a.status === 200));
      assert.equal(answers.filter((a) => !a.body.duplicate).length, 2, 'each event id is processed once');
      assert.equal((await walletOf(env, user)).balance, 500_000_000, 'and the payment credited once');
      await assertLedgerVerifies(env, user.userId);
    });
  });
}
