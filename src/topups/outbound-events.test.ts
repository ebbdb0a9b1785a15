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
