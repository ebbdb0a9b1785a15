import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { WebhookReceiver } from '../events/testing/receiver.ts';
import { FakeStripe } from './testing/stripe-server.ts';
import { paidTopup, startTopup } from './testing/scenario.ts';

const fake = await new FakeStripe().start();
const receiver = new WebhookReceiver();
before(() => receiver.start());
after(() => Promise.all([receiver.stop(), fake.stop()]));

describeEachDatabase(
  'top-ups reach the outbound events (wallet.topup_succeeded, wallet.topup_failed)',
  (env) => {
    before(() => {
      fake.webhookUrl = `${env.baseUrl}/api/webhooks/stripe`;
    });

    it('a credited top-up and a failed one each send one event, signed and verified with the standardwebhooks package, however many Stripe deliveries', async () => {
      const user = await env.createUser();
      const endpoint = await env.dashboard(user, 'POST', '/api/user/webhooks', {
        url: receiver.url,
        eventTypes: ['wallet.topup_succeeded', 'wallet.topup_failed'],
      });
      assert.equal(endpoint.status, 201, endpoint.text);
      receiver.secrets.push(endpoint.body.secret);

      const { topupId } = await paidTopup(env, fake, user, 10);
      const failed = await startTopup(env, user, 5);
      const unpaid = fake.event('checkout.session.async_payment_failed', fake.pay(failed.sessionId, { async: true }));
      for (let i = 0; i < 3; i++) assert.equal((await fake.deliver(unpaid)).status, 200);
      await env.service.ctx.events.idle();

      const mine = receiver.bodies().filter((body) => body.data.userId === user.userId);
      assert.deepEqual(mine.map((body) => [body.type, body.data.topupId, body.data.credits]).sort(), [
        ['wallet.topup_failed', failed.topupId, 500],
        ['wallet.topup_succeeded', topupId, 1000],
      ]);
      assert.equal(mine.find((body) => body.type === 'wallet.topup_failed')!.data.reason, 'The payment failed.');
      assert.ok(
        receiver.received.every((delivery) => delivery.verified),
        'every delivery verifies with standardwebhooks',
      );
    });

    it('a refund or a dispute that takes available below the low-balance threshold fires wallet.low_balance once per crossing, as a call does', async () => {
      const user = await env.createUser();
      const endpoint = await env.dashboard(user, 'POST', '/api/user/webhooks', {
        url: receiver.url,
        eventTypes: ['wallet.low_balance'],
      });
      assert.equal(endpoint.status, 201, endpoint.text);
      receiver.secrets.push(endpoint.body.secret);
      const lowBalance = async () => {
        await env.service.ctx.events.idle();
        return receiver
          .bodies()
          .filter((body) => body.type === 'wallet.low_balance' && body.data.userId === user.userId);
      };
      const armed = async () => {
        await env.service.ctx.events.idle();
        return (await env.dashboard(user, 'GET', '/api/user/low-balance-alert')).body.armed;
      };

      // 10 USD = 1000 credits, the alert at 500.
      const first = await paidTopup(env, fake, user, 10);
      const alert = await env.dashboard(user, 'PUT', '/api/user/low-balance-alert', { threshold: 500 });
      assert.equal(alert.body.armed, true, alert.text);
      // A refund of 3 USD leaves 700: above, nothing fires.
      await fake.deliver(fake.event('charge.refunded', fake.charge(first.paymentIntent, 300)));
      assert.equal((await lowBalance()).length, 0);
      // 6 USD refunded in all leaves 400: below, it fires once, however many copies of the event arrive.
      const crossing = fake.event('charge.refunded', fake.charge(first.paymentIntent, 600));
      for (let i = 0; i < 3; i++) assert.equal((await fake.deliver(crossing)).status, 200);
      let fired = await lowBalance();
      assert.deepEqual(
        fired.map((body) => body.data),
        [{ userId: user.userId, threshold: 500, available: 400, balance: 400 }],
      );
      assert.equal(await armed(), false);
      // Still below: a further refund fires nothing.
      await fake.deliver(fake.event('charge.refunded', fake.charge(first.paymentIntent, 800)));
      assert.equal((await lowBalance()).length, 1);

      // A top-up takes it back above (re-armed); a dispute takes it below again: a second crossing, a second event.
      const second = await paidTopup(env, fake, user, 10);
      assert.equal(await armed(), true);
      await fake.deliver(fake.event('charge.dispute.created', fake.dispute(second.paymentIntent, 1000)));
      fired = await lowBalance();
      assert.equal(fired.length, 2);
      assert.deepEqual(fired[1].data, { userId: user.userId, threshold: 500, available: 200, balance: 200 });
      // The dispute won gives the credits back: above again, so the next crossing fires.
      await fake.deliver(fake.event('charge.dispute.closed', fake.dispute(second.paymentIntent, 1000, 'won')));
      assert.equal(await armed(), true);
      assert.equal((await lowBalance()).length, 2);
      assert.ok(receiver.received.every((delivery) => delivery.verified));
    });
  },
  {
    config: {
      ...fake.config(),
      WEBHOOK_ALLOW_HTTP: true,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true,
      WEBHOOK_DELIVERY_INTERVAL_SECONDS: 0,
    },
  },
);
