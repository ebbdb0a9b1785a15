import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, request, startServeProcess } from '../testing/harness.ts';
import { fundedUser } from '../gateway/testing.ts';
import { createService, type Service } from '../service.ts';
import { createLogger } from '../platform/logger.ts';
import { recordEvent } from './outbox.ts';
import { WebhookReceiver } from './testing/receiver.ts';

const receiver = new WebhookReceiver();
before(() => receiver.start());
after(() => receiver.stop());

const MESSAGES = 120;
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describeEachDatabase(
  'outbound webhooks on two instances',
  (env) => {
    let second: Service;
    before(async () => {
      // A second instance on the same database (its own pool, its own process state), as a scaled deployment runs.
      second = await createService({
        config: env.config(),
        clock: env.clock,
        timers: false,
        log: createLogger('silent'),
      });
    });
    after(() => second?.close());

    it(`two instances sending at once never send one attempt twice (${MESSAGES} messages, each received exactly once)`, async () => {
      const user = await env.createUser();
      const created = await env.dashboard(user, 'POST', '/api/user/webhooks', { url: receiver.url });
      assert.equal(created.status, 201, created.text);
      receiver.secrets = [created.body.secret];
      receiver.received.length = 0;
      // Recorded without the kick that would send them at once, so both instances find them all due.
      const ids: string[] = [];
      for (let i = 0; i < MESSAGES; i++) {
        const recorded = await recordEvent(env.service.ctx, {
          type: 'wallet.topup_succeeded',
          userId: user.userId,
          data: { n: i },
        });
        ids.push(...recorded!.messageIds);
      }
      const instances = [env.service.ctx, second.ctx, env.service.ctx, second.ctx];
      let attempted = 0;
      const byInstance = [0, 0];
      for (let round = 0; round < 20 && attempted < MESSAGES; round++) {
        const runs = await Promise.all(instances.map((ctx) => ctx.events.deliver()));
        // One instance's two concurrent calls share its one run: count each instance once.
        byInstance[0] += runs[0].attempted;
        byInstance[1] += runs[1].attempted;
        attempted = byInstance[0] + byInstance[1];
      }
      assert.ok(byInstance[0] > 0 && byInstance[1] > 0, `both instances sent some (${byInstance})`);
      const seen = receiver.received.map((d) => String(d.headers['webhook-id']));
      assert.equal(seen.length, MESSAGES);
      assert.deepEqual([...new Set(seen)].sort(), [...ids].sort());
      assert.ok(receiver.received.every((d) => d.verified));
      const rows = await env.db
        .selectFrom('webhook_messages')
        .select(['status', 'attempts'])
        .where('id', 'in', ids)
        .execute();
      assert.ok(rows.every((row) => row.status === 'delivered' && row.attempts === 1));
    });

    it('a process started before an endpoint existed learns of it through the Redis bus; two processes sending at once send each message once', async () => {
      const local = {
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
        WEBHOOK_DELIVERY_INTERVAL_SECONDS: '0',
        REDIS_URL,
      };
      const other = await startServeProcess(env, local);
      try {
        const { session, key } = await fundedUser(env, 0);
        const created = await env.dashboard(session, 'POST', '/api/user/webhooks', {
          url: receiver.url,
          eventTypes: ['limit.reached'],
        });
        assert.equal(created.status, 201, created.text);
        receiver.secrets = [created.body.secret];
        receiver.received.length = 0;
        // Refused calls on the other process: the first one after the bus message is recorded and sent (once).
        const chat = { model: 'tollgate/echo', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
        for (let i = 0; i < 50 && receiver.received.length === 0; i++) {
          assert.equal(
            (await request(other.baseUrl, 'POST', '/api/v1/chat/completions', { token: key, body: chat })).status,
            402,
          );
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const [delivery] = await receiver.waitFor(1);
        assert.equal(delivery.verified, true);
        assert.equal(JSON.parse(delivery.body).data.userId, session.userId);

        // Two processes sending at once through their cron routes: each message still arrives exactly once.
        receiver.received.length = 0;
        const ids: string[] = [];
        for (let i = 0; i < 60; i++)
          ids.push(
            ...(await recordEvent(env.service.ctx, { type: 'limit.reached', userId: session.userId, data: { n: i } }))!
              .messageIds,
          );
        for (let round = 0; round < 10 && receiver.received.length < ids.length; round++) {
          const runs = await Promise.all(
            [env.baseUrl, other.baseUrl, env.baseUrl, other.baseUrl].map((base) =>
              request(base, 'POST', '/api/admin/cron/deliver-webhooks', { token: env.adminToken }),
            ),
          );
          assert.deepEqual(
            runs.map((run) => run.status),
            [200, 200, 200, 200],
          );
        }
        const seen = receiver.received.map((d) => String(d.headers['webhook-id']));
        assert.equal(seen.length, ids.length);
        assert.deepEqual([...new Set(seen)].sort(), [...ids].sort());
      } finally {
        await other.stop();
      }
    });
  },
  {
    config: {
      WEBHOOK_ALLOW_HTTP: true,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true,
      WEBHOOK_DELIVERY_INTERVAL_SECONDS: 0,
      REDIS_URL,
    },
  },
);
