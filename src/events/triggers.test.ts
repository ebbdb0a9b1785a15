import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { fundedUser, settled, wallet, type FundedUser } from '../gateway/testing.ts';
import { WebhookReceiver } from './testing/receiver.ts';
import { subscribeTopupEvents, type TopupEvent } from './service.ts';

const receiver = new WebhookReceiver();
before(() => receiver.start());
after(() => receiver.stop());

const chat = { model: 'tollgate/echo', max_tokens: 16, messages: [{ role: 'user', content: 'hello there' }] };

describeEachDatabase(
  'outbound events: what fires them',
  (env) => {
    const events = () => env.service.ctx.events;
    const ofType = (type: string, userId: string) =>
      receiver.bodies().filter((b) => b.type === type && b.data.userId === userId);
    const subscribe = async (user: FundedUser, eventTypes?: string[]) => {
      const created = await env.dashboard(user.session, 'POST', '/api/user/webhooks', {
        url: receiver.url,
        eventTypes,
      });
      assert.equal(created.status, 201, created.text);
      receiver.secrets.push(created.body.secret);
    };
    const call = (user: FundedUser) => env.request('POST', '/api/v1/chat/completions', { token: user.key, body: chat });
    const setThreshold = async (user: FundedUser, threshold: number | null) => {
      const answer = await env.dashboard(user.session, 'PUT', '/api/user/low-balance-alert', { threshold });
      assert.equal(answer.status, 200, answer.text);
      return answer.body as { threshold: number | null; armed: boolean };
    };
    const credit = async (user: FundedUser, amount: number) => {
      const answer = await env.admin('POST', `/api/admin/users/${user.session.userId}/credits`, {
        amount,
        reason: 'test',
      });
      assert.equal(answer.status, 200, answer.text);
    };

    it('wallet.low_balance fires once when 20 concurrent calls take available below the threshold, and again only after it was back above', async () => {
      const user = await fundedUser(env, 10);
      await subscribe(user);
      assert.deepEqual(await setThreshold(user, 10), { threshold: 10, armed: true });

      const answers = await Promise.all(Array.from({ length: 20 }, () => call(user)));
      assert.deepEqual(
        answers.map((a) => a.status),
        Array(20).fill(200),
      );
      await settled(env, user);
      await events().idle();
      assert.equal(ofType('wallet.low_balance', user.session.userId).length, 1);
      assert.equal((await env.dashboard(user.session, 'GET', '/api/user/low-balance-alert')).body.armed, false);

      // Still below: more calls fire nothing.
      await Promise.all(Array.from({ length: 5 }, () => call(user)));
      await settled(env, user);
      await events().idle();
      assert.equal(ofType('wallet.low_balance', user.session.userId).length, 1);

      // Back above (a grant), a call's settle re-arms it; then concurrent calls cross it again: it fires once more.
      await credit(user, 1);
      await call(user);
      await settled(env, user);
      await events().idle();
      assert.equal((await env.dashboard(user.session, 'GET', '/api/user/low-balance-alert')).body.armed, true);
      assert.equal(ofType('wallet.low_balance', user.session.userId).length, 1);
      // Leave 10 micro-credits above the threshold, less than one call costs: the first of the concurrent calls to
      // settle crosses it for good. (With a wider margin, holds in flight could take `available` below and back
      // above it, and each such crossing fires: the alert follows `available`, as it is specified.)
      const { available } = await wallet(env, user);
      await credit(user, -(available - 10_000_010) / 1_000_000);
      assert.equal((await wallet(env, user)).available, 10_000_010);
      await Promise.all(Array.from({ length: 10 }, () => call(user)));
      await settled(env, user);
      await events().idle();
      const fired = ofType('wallet.low_balance', user.session.userId);
      assert.equal(fired.length, 2);
      assert.equal(fired[1].data.threshold, 10);
      assert.ok(fired[1].data.available < 10);
      assert.ok(receiver.received.every((d) => d.verified));
    });

    it('limit.reached fires on a 429 from a key spending limit, once per limit and period, and on a 402 from the wallet', async () => {
      const user = await fundedUser(env, 5);
      await subscribe(user, ['limit.reached']);
      const limited = await env.dashboard(user.session, 'POST', '/api/user/api-keys', {
        name: 'capped',
        permissions: ['ai:chat'],
        limit: 0.00001,
        limitPeriod: 'daily',
      });
      assert.equal(limited.status, 200, limited.text);
      const capped = { ...user, key: limited.body.apiKey.key };
      for (let i = 0; i < 3; i++) assert.equal((await call(capped)).status, 429);
      await events().idle();
      let reached = ofType('limit.reached', user.session.userId);
      assert.equal(reached.length, 1);
      assert.equal(reached[0].data.subject, 'key');
      assert.equal(reached[0].data.status, 429);
      assert.equal(reached[0].data.code, 'SPENDING_LIMIT_EXCEEDED');
      assert.equal(reached[0].data.limitType, 'daily');
      assert.equal(reached[0].data.limit, 0.00001);
      assert.equal(reached[0].data.keyId, limited.body.apiKey.id);
      assert.equal(typeof reached[0].data.resetsAt, 'string');

      const broke = await fundedUser(env, 0);
      await subscribe(broke, ['limit.reached']);
      for (let i = 0; i < 2; i++) assert.equal((await call(broke)).status, 402);
      await events().idle();
      reached = ofType('limit.reached', broke.session.userId);
      assert.equal(reached.length, 1);
      assert.deepEqual(
        [reached[0].data.subject, reached[0].data.status, reached[0].data.available],
        ['wallet', 402, 0],
      );
    });

    it('nothing is recorded for a user with no endpoint and no threshold, unless the operator has an endpoint (then every user is covered)', async () => {
      const quiet = await fundedUser(env, 0);
      assert.equal((await call(quiet)).status, 402);
      await events().idle();
      const before = await env.db
        .selectFrom('webhook_events')
        .select('id')
        .where('user_id', '=', quiet.session.userId)
        .execute();
      assert.equal(before.length, 0);

      const operator = await env.admin('POST', '/api/admin/webhooks', {
        url: receiver.url,
        eventTypes: ['limit.reached'],
      });
      assert.equal(operator.status, 201, operator.text);
      assert.equal(operator.body.webhook.scope, 'operator');
      receiver.secrets.push(operator.body.secret);
      const other = await fundedUser(env, 0);
      assert.equal((await call(other)).status, 402);
      await events().idle();
      const seen = ofType('limit.reached', other.session.userId);
      assert.equal(seen.length, 1);
      const deliveries = await env.admin('GET', `/api/admin/webhooks/${operator.body.webhook.id}/deliveries`);
      assert.equal(deliveries.body.deliveries[0].status, 'delivered');
      assert.equal((await env.admin('DELETE', `/api/admin/webhooks/${operator.body.webhook.id}`)).status, 200);
    });

    it('top-up outcomes from the top-ups observer become wallet.topup_succeeded and wallet.topup_failed, once per top-up', async () => {
      const user = await fundedUser(env, 0);
      await subscribe(user, ['wallet.topup_succeeded', 'wallet.topup_failed']);
      const listeners: Array<(event: TopupEvent) => void> = [];
      subscribeTopupEvents(events(), (listener) => listeners.push(listener));
      const emit = (event: TopupEvent) => listeners.forEach((listener) => listener(event));
      emit({ type: 'topup_succeeded', userId: user.session.userId, topupId: 'top_1', credits: 25_000_000 });
      emit({ type: 'topup_succeeded', userId: user.session.userId, topupId: 'top_1', credits: 25_000_000 });
      emit({
        type: 'topup_failed',
        userId: user.session.userId,
        topupId: 'top_2',
        credits: 10_000_000,
        reason: 'card_declined',
      });
      await events().idle();
      assert.deepEqual(
        ofType('wallet.topup_succeeded', user.session.userId).map((b) => b.data),
        [{ userId: user.session.userId, topupId: 'top_1', credits: 25 }],
      );
      assert.deepEqual(
        ofType('wallet.topup_failed', user.session.userId).map((b) => b.data),
        [{ userId: user.session.userId, topupId: 'top_2', credits: 10, reason: 'card_declined' }],
      );
    });
  },
  { config: { WEBHOOK_ALLOW_HTTP: true, WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true, WEBHOOK_DELIVERY_INTERVAL_SECONDS: 0 } },
);
