import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describeEachDatabase, type DashboardSession } from '../testing/harness.ts';
import { fundedUser } from '../gateway/testing.ts';
import { WebhookReceiver } from './testing/receiver.ts';
import { MAX_ENDPOINTS_PER_OWNER } from './endpoints.ts';

const receiver = new WebhookReceiver();
before(() => receiver.start());
after(() => receiver.stop());

const ALLOW_LOCAL = {
  WEBHOOK_ALLOW_HTTP: true,
  WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true,
  WEBHOOK_DELIVERY_INTERVAL_SECONDS: 0,
};

// Every line the service logs, to prove what never appears in them.
let logText = '';
const logSink = new Writable({
  write(chunk, _encoding, done) {
    logText += chunk;
    done();
  },
});

describeEachDatabase(
  'webhook endpoints: ownership, validation, secrets',
  (env) => {
    let owner: DashboardSession;
    let other: DashboardSession;
    let endpointId: string;
    let secret: string;

    before(async () => {
      owner = await env.createUser();
      other = await env.createUser();
      const created = await env.dashboard(owner, 'POST', '/api/user/webhooks', {
        url: receiver.url,
        eventTypes: ['limit.reached', 'wallet.low_balance'],
      });
      assert.equal(created.status, 201, created.text);
      endpointId = created.body.webhook.id;
      secret = created.body.secret;
      assert.deepEqual(created.body.webhook.eventTypes, ['limit.reached', 'wallet.low_balance']);
      assert.equal(created.body.webhook.scope, 'user');
    });

    it("another user's endpoint is a 404 on every route, and it does not appear in their list", async () => {
      const base = `/api/user/webhooks/${endpointId}`;
      for (const [method, path, body] of [
        ['PATCH', base, { enabled: false }],
        ['DELETE', base, undefined],
        ['POST', `${base}/rotate-secret`, undefined],
        ['GET', `${base}/deliveries`, undefined],
        ['POST', `${base}/test`, undefined],
      ] as const) {
        const answer = await env.dashboard(other, method, path, body);
        assert.equal(answer.status, 404, `${method} ${path}: ${answer.text}`);
        assert.equal(answer.body.error.code, 'NOT_FOUND');
      }
      assert.deepEqual((await env.dashboard(other, 'GET', '/api/user/webhooks')).body.webhooks, []);
      // The operator's routes manage the operator's endpoints only.
      assert.equal((await env.admin('GET', `${base.replace('/user/', '/admin/')}/deliveries`)).status, 404);
      assert.equal((await env.dashboard(owner, 'GET', '/api/user/webhooks')).body.webhooks.length, 1);
    });

    it('an API key (or an app token) cannot manage webhooks: 403, the dashboard only', async () => {
      const { key } = await fundedUser(env, 0, ['ai:chat', 'billing:read']);
      const listed = await env.request('GET', '/api/user/webhooks', { token: key });
      assert.equal(listed.status, 403, listed.text);
      assert.equal(listed.body.error.code, 'PERMISSION_DENIED');
      assert.equal(
        (await env.request('POST', '/api/user/webhooks', { token: key, body: { url: receiver.url } })).status,
        403,
      );
      assert.equal((await env.request('GET', '/api/user/webhooks')).status, 401);
    });

    it('bad input is a 400 with a stable code: unknown event type, no event type, extra field, not a URL', async () => {
      for (const body of [
        { url: receiver.url, eventTypes: ['wallet.nope'] },
        { url: receiver.url, eventTypes: [] },
        { url: receiver.url, secret: 'whsec_mine' },
        { url: 'not a url' },
        {},
      ]) {
        const answer = await env.dashboard(owner, 'POST', '/api/user/webhooks', body);
        assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
        assert.ok(['INVALID_REQUEST', 'WEBHOOK_URL_REFUSED'].includes(answer.body.error.code), answer.text);
      }
    });

    it(`a user registers at most ${MAX_ENDPOINTS_PER_OWNER} endpoints, also when creations race: the rest are a 400 storing nothing`, async () => {
      const racer = await env.createUser();
      const answers = await Promise.all(
        Array.from({ length: MAX_ENDPOINTS_PER_OWNER + 100 }, () =>
          env.dashboard(racer, 'POST', '/api/user/webhooks', { url: receiver.url }),
        ),
      );
      const statuses = answers.map((answer) => answer.status);
      assert.equal(statuses.filter((status) => status === 201).length, MAX_ENDPOINTS_PER_OWNER, statuses.join(' '));
      assert.deepEqual(
        answers.filter((answer) => answer.status !== 201).map((answer) => [answer.status, answer.body.error.code]),
        Array.from({ length: 100 }, () => [400, 'INVALID_REQUEST']),
      );
      const listed = await env.dashboard(racer, 'GET', '/api/user/webhooks');
      assert.equal(listed.body.webhooks.length, MAX_ENDPOINTS_PER_OWNER);
    });

    it('updates url, event types and enabled; a disabled endpoint receives nothing; delete removes it', async () => {
      const created = await env.dashboard(owner, 'POST', '/api/user/webhooks', { url: receiver.url });
      const id = created.body.webhook.id;
      const changed = await env.dashboard(owner, 'PATCH', `/api/user/webhooks/${id}`, {
        url: `${receiver.url}?v=2`,
        eventTypes: ['wallet.topup_failed'],
        enabled: false,
      });
      assert.equal(changed.status, 200, changed.text);
      assert.deepEqual(
        [changed.body.webhook.url, changed.body.webhook.eventTypes, changed.body.webhook.enabled],
        [`${receiver.url}?v=2`, ['wallet.topup_failed'], false],
      );
      const events = env.service.ctx.events;
      assert.equal(
        await events.emit({ type: 'wallet.topup_failed', userId: owner.userId, data: {} }),
        null,
        'no enabled endpoint takes it',
      );
      assert.equal((await env.dashboard(owner, 'DELETE', `/api/user/webhooks/${id}`)).status, 200);
      assert.equal((await env.dashboard(owner, 'GET', `/api/user/webhooks/${id}/deliveries`)).status, 404);
    });

    it('the secret is stored sealed, and neither it nor the URL reaches the logs while deliveries are made', async () => {
      receiver.secrets = [secret];
      receiver.received.length = 0;
      const row = await env.db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where('id', '=', endpointId)
        .executeTakeFirstOrThrow();
      const key = secret.slice('whsec_'.length);
      assert.ok(!JSON.stringify(row).includes(key), 'the row holds no clear secret');
      assert.equal(
        (await env.dashboard(owner, 'GET', '/api/user/webhooks')).text.includes(key),
        false,
        'the list never shows it',
      );
      assert.equal((await env.dashboard(owner, 'POST', `/api/user/webhooks/${endpointId}/test`)).status, 202);
      await env.service.ctx.events.idle();
      assert.equal(receiver.received[0]?.verified, true);
      assert.match(logText, /webhook attempt/, 'the attempt was logged');
      assert.ok(!logText.includes(key), 'the secret is not in the logs');
      assert.ok(!logText.includes(receiver.url), 'the URL is not in the logs');
    });
  },
  { config: ALLOW_LOCAL, logDestination: logSink },
);

describeEachDatabase('webhook endpoints: the SSRF guard by default', (env) => {
  it('refuses http://, and hosts that are or resolve to loopback, private or link-local addresses (400 WEBHOOK_URL_REFUSED)', async () => {
    const user = await env.createUser();
    for (const url of [
      'http://example.com/hook',
      'https://127.0.0.1/hook',
      'https://localhost:8443/hook',
      'https://[::1]/hook',
      'https://10.1.2.3/hook',
      'https://192.168.1.10/hook',
      'https://172.20.0.5/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::ffff:127.0.0.1]/hook',
      'https://[fd00::1]/hook',
      'https://0.0.0.0/hook',
      'https://user:pw@93.184.215.14/hook',
      'ftp://93.184.215.14/hook',
    ]) {
      const answer = await env.dashboard(user, 'POST', '/api/user/webhooks', { url });
      assert.equal(answer.status, 400, `${url}: ${answer.text}`);
      assert.equal(answer.body.error.code, 'WEBHOOK_URL_REFUSED', url);
    }
    assert.equal((await env.dashboard(user, 'GET', '/api/user/webhooks')).body.webhooks.length, 0);
    // A public address literal passes (nothing is sent at registration).
    const accepted = await env.dashboard(user, 'POST', '/api/user/webhooks', { url: 'https://93.184.215.14/hook' });
    assert.equal(accepted.status, 201, accepted.text);
  });
});
