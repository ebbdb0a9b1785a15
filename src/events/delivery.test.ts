import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { WebhookReceiver } from './testing/receiver.ts';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS, JITTER } from './delivery.ts';
import { recordEvent } from './outbox.ts';

const receiver = new WebhookReceiver();
before(() => receiver.start());
after(() => receiver.stop());

describeEachDatabase(
  'outbound webhook delivery',
  (env) => {
    let user: DashboardSession;
    const cron = async () => {
      const run = await env.admin('POST', '/api/admin/cron/deliver-webhooks');
      assert.equal(run.status, 200, run.text);
      return run.body.result as { attempted: number; delivered: number; retrying: number; failed: number };
    };
    const deliveries = async (endpointId: string) => {
      const listed = await env.dashboard(user, 'GET', `/api/user/webhooks/${endpointId}/deliveries`);
      assert.equal(listed.status, 200, listed.text);
      return listed.body.deliveries as any[];
    };
    const register = async () => {
      const created = await env.dashboard(user, 'POST', '/api/user/webhooks', { url: receiver.url });
      assert.equal(created.status, 201, created.text);
      receiver.secrets = [created.body.secret];
      return created.body as { webhook: { id: string }; secret: string };
    };
    const sendTest = async (endpointId: string) => {
      const sent = await env.dashboard(user, 'POST', `/api/user/webhooks/${endpointId}/test`);
      assert.equal(sent.status, 202, sent.text);
      await env.service.ctx.events.idle();
      return sent.body.deliveryId as string;
    };

    before(async () => {
      user = await env.createUser();
    });

    it('a test event arrives once, verified by the standardwebhooks package, with its own webhook-id and a { type, timestamp, data } body', async () => {
      receiver.received.length = 0;
      receiver.behaviour = () => ({ status: 204 });
      const { webhook, secret } = await register();
      assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
      const first = await sendTest(webhook.id);
      const second = await sendTest(webhook.id);
      assert.notEqual(first, second);
      assert.equal(receiver.received.length, 2);
      assert.deepEqual(
        receiver.received.map((d) => d.verified),
        [true, true],
      );
      assert.deepEqual(
        receiver.received.map((d) => d.headers['webhook-id']),
        [first, second],
      );
      const body = receiver.bodies()[0];
      assert.deepEqual(Object.keys(body), ['type', 'timestamp', 'data']);
      assert.equal(body.type, 'webhook.test');
      assert.equal(body.data.endpointId, webhook.id);
      assert.ok(!Number.isNaN(Date.parse(body.timestamp)));
      const [latest] = await deliveries(webhook.id);
      assert.equal(latest.id, second);
      assert.equal(latest.status, 'delivered');
      assert.equal(latest.attempts, 1);
      assert.equal(latest.lastStatusCode, 204);
    });

    it('a 500 and then a timeout are retried on the backoff schedule (5 s, then 30 s, with ±10% jitter) under one webhook-id, then delivered', async () => {
      receiver.received.length = 0;
      receiver.behaviour = (index) =>
        index === 0
          ? { status: 500, body: `boom ${'x'.repeat(500)}` }
          : index === 1
            ? { hangMs: 3000 }
            : { status: 200 };
      const { webhook } = await register();
      const start = env.manualClock.now();
      const id = await sendTest(webhook.id);
      let [row] = await deliveries(webhook.id);
      assert.equal(row.status, 'pending');
      assert.equal(row.attempts, 1);
      assert.equal(row.lastStatusCode, 500);
      assert.equal(
        row.lastResponseExcerpt,
        `boom ${'x'.repeat(195)}`,
        'only a 200-character excerpt of the answer is kept',
      );
      const firstWait = Date.parse(row.nextAttemptAt) - start;
      assert.ok(firstWait >= 5000 * (1 - JITTER) && firstWait <= 5000 * (1 + JITTER), `first wait ${firstWait} ms`);

      await env.manualClock.advance(4000);
      assert.equal((await cron()).attempted, 0, 'not due before its time');
      await env.manualClock.advance(2000);
      assert.deepEqual(await cron(), { attempted: 1, delivered: 0, retrying: 1, failed: 0 });
      [row] = await deliveries(webhook.id);
      assert.equal(row.attempts, 2);
      assert.equal(row.lastStatusCode, null);
      assert.match(row.lastError, /timeout/);
      const secondWait = Date.parse(row.nextAttemptAt) - env.manualClock.now();
      assert.ok(
        secondWait >= 30_000 * (1 - JITTER) && secondWait <= 30_000 * (1 + JITTER),
        `second wait ${secondWait} ms`,
      );

      await env.manualClock.advance(33_001);
      assert.deepEqual(await cron(), { attempted: 1, delivered: 1, retrying: 0, failed: 0 });
      [row] = await deliveries(webhook.id);
      assert.equal(row.status, 'delivered');
      assert.equal(row.attempts, 3);
      assert.equal(receiver.received.length, 3);
      assert.deepEqual(
        receiver.received.map((d) => d.headers['webhook-id']),
        [id, id, id],
      );
      assert.ok(receiver.received.every((d) => d.verified));
      assert.equal(new Set(receiver.received.map((d) => d.body)).size, 1, 'every attempt sends the same bytes');
    });

    it(`a receiver that never succeeds gets ${MAX_ATTEMPTS} attempts over about a day, then the delivery is failed`, async () => {
      const total = RETRY_DELAYS_MS.reduce((sum, ms) => sum + ms, 0);
      assert.ok(total > 20 * 3600_000 && total < 24 * 3600_000, `schedule spans ${total / 3600_000} h`);
      receiver.received.length = 0;
      receiver.behaviour = () => ({ status: 503 });
      const { webhook } = await register();
      await sendTest(webhook.id);
      for (const delay of RETRY_DELAYS_MS) {
        await env.manualClock.advance(Math.ceil(delay * (1 + JITTER)) + 1);
        assert.equal((await cron()).attempted, 1);
      }
      const [row] = await deliveries(webhook.id);
      assert.equal(row.status, 'failed');
      assert.equal(row.attempts, MAX_ATTEMPTS);
      assert.equal(row.nextAttemptAt, null);
      await env.manualClock.advance(48 * 3600_000);
      assert.equal((await cron()).attempted, 0);
      assert.equal(receiver.received.length, MAX_ATTEMPTS);
    });

    it('an attempt whose sender died (its claim lapsed) is taken over as the next attempt once its claim lapses', async () => {
      receiver.received.length = 0;
      receiver.behaviour = () => ({ status: 200 });
      const { webhook } = await register();
      // Recorded without the kick that would send it at once.
      const recorded = await recordEvent(env.service.ctx, {
        type: 'webhook.test',
        userId: user.userId,
        endpointId: webhook.id,
        data: {},
      });
      const id = recorded!.messageIds[0];
      // As a sender leaves it when it dies mid-attempt: claimed, counted, never finished.
      const now = env.manualClock.now();
      await env.db
        .updateTable('webhook_messages')
        .set({ status: 'sending', claim_token: 'dead', claimed_until: now + 40_000, attempts: 1 })
        .where('id', '=', id)
        .execute();
      assert.equal((await cron()).attempted, 0, 'a live claim is left alone');
      await env.manualClock.advance(40_000);
      assert.deepEqual(await cron(), { attempted: 1, delivered: 1, retrying: 0, failed: 0 });
      const [row] = await deliveries(webhook.id);
      assert.deepEqual([row.id, row.status, row.attempts], [id, 'delivered', 2]);
      assert.equal(receiver.received.length, 1);
    });

    it('after a rotation deliveries are signed with the new secret and, for a day, the old one too', async () => {
      receiver.received.length = 0;
      receiver.behaviour = () => ({ status: 200 });
      const { webhook, secret: old } = await register();
      const rotated = await env.dashboard(user, 'POST', `/api/user/webhooks/${webhook.id}/rotate-secret`);
      assert.equal(rotated.status, 200, rotated.text);
      assert.notEqual(rotated.body.secret, old);
      receiver.secrets = [rotated.body.secret];
      await sendTest(webhook.id);
      receiver.secrets = [old];
      await sendTest(webhook.id);
      assert.deepEqual(
        receiver.received.map((d) => d.verified),
        [true, true],
      );
      assert.equal(String(receiver.received[0].headers['webhook-signature']).split(' ').length, 2);
      await env.manualClock.advance(24 * 3600_000 + 1);
      await sendTest(webhook.id);
      assert.equal(receiver.received[2].verified, false, 'the old secret no longer signs');
      assert.equal(String(receiver.received[2].headers['webhook-signature']).split(' ').length, 1);
    });
  },
  {
    manualClock: true,
    config: {
      WEBHOOK_ALLOW_HTTP: true,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true,
      WEBHOOK_TIMEOUT_SECONDS: 1,
      WEBHOOK_DELIVERY_INTERVAL_SECONDS: 0,
    },
  },
);

describeEachDatabase(
  'outbound webhook delivery: the per-process timer and the retention sweep',
  (env) => {
    it('the timer of each process sends retries as they come due, and finished deliveries are pruned after 30 days', async () => {
      receiver.received.length = 0;
      receiver.behaviour = (index) => (index === 0 ? { status: 502 } : { status: 200 });
      const user = await env.createUser();
      const created = await env.dashboard(user, 'POST', '/api/user/webhooks', { url: receiver.url });
      assert.equal(created.status, 201, created.text);
      const rows = () =>
        env.db.selectFrom('webhook_messages').selectAll().where('endpoint_id', '=', created.body.webhook.id).execute();
      assert.equal(
        (await env.dashboard(user, 'POST', `/api/user/webhooks/${created.body.webhook.id}/test`)).status,
        202,
      );
      await env.service.ctx.events.idle();
      assert.equal((await rows())[0].status, 'pending');
      // This suite's WEBHOOK_DELIVERY_INTERVAL_SECONDS is 5: moving the clock fires the timer, with no cron call.
      await env.manualClock.advance(5_000);
      await env.manualClock.advance(5_000);
      await env.service.ctx.events.idle();
      const [row] = await rows();
      assert.deepEqual([row.status, row.attempts, receiver.received.length], ['delivered', 2, 2]);

      await env.manualClock.advance(29 * 24 * 3600_000);
      const early = await env.admin('POST', '/api/admin/cron/prune-webhook-deliveries');
      assert.equal(early.status, 200, early.text);
      assert.equal((await rows()).length, 1);
      await env.manualClock.advance(2 * 24 * 3600_000);
      const pruned = await env.admin('POST', '/api/admin/cron/prune-webhook-deliveries');
      assert.deepEqual(pruned.body.result, { deliveries: 1, events: 1 });
      assert.equal((await rows()).length, 0);
    });
  },
  {
    manualClock: true,
    config: { WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true, WEBHOOK_DELIVERY_INTERVAL_SECONDS: 5 },
  },
);
