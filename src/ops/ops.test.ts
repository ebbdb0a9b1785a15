import { it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describeEachDatabase } from '../testing/harness.ts';
import { startRedisRelay } from '../testing/redis-relay.ts';
import { fundedUser } from '../gateway/testing.ts';

describeEachDatabase(
  'health and readiness',
  (env) => {
    it('/healthz answers ok and /readyz reports the database, the migrations, Redis and the database disk ready', async () => {
      const health = await env.request('GET', '/healthz');
      assert.equal(health.status, 200);
      assert.deepEqual(health.body, { status: 'ok' });
      const ready = await env.request('GET', '/readyz');
      assert.equal(ready.status, 200);
      assert.deepEqual(ready.body.checks, {
        database: { ok: true },
        migrations: { ok: true },
        redis: { ok: true },
        disk: { ok: true },
      });
    });

    it('every answer carries the security headers and a request id', async () => {
      const response = await env.request('GET', '/healthz');
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(response.headers.get('x-frame-options'), 'DENY');
      assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
      assert.match(response.headers.get('x-request-id') ?? '', /^[\w-]{8,}$/);
    });
  },
  { config: { REDIS_URL: 'redis://127.0.0.1:6379' } },
);

const redisRelay = await startRedisRelay();

describeEachDatabase(
  'readiness when Redis goes away',
  (env) => {
    it('/readyz stays 200 with Redis gone, saying degraded, answered before a load balancer gives up; ready again once it is back', async () => {
      const readiness = async () => {
        // A load balancer's health check gives up after a few seconds: it must hear an answer, not time out.
        const response = await fetch(`${env.baseUrl}/readyz`, { signal: AbortSignal.timeout(3000) });
        return { status: response.status, body: (await response.json()) as any };
      };
      assert.equal((await readiness()).body.status, 'ready');
      redisRelay.cut();
      try {
        // Some seconds into the outage, when the client's reconnection attempts have spread out.
        await new Promise((resolve) => setTimeout(resolve, 4000));
        const ready = await readiness();
        // Calls are still served (rate limits count in the process): taking every instance out would be an outage.
        assert.equal(ready.status, 200);
        assert.equal(ready.body.status, 'degraded');
        assert.equal(ready.body.checks.redis.ok, false);
        assert.equal(ready.body.checks.database.ok, true);
        assert.equal((await env.request('GET', '/healthz')).status, 200);
      } finally {
        redisRelay.restore();
      }
      let status = '';
      for (let i = 0; i < 100 && status !== 'ready'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = (await readiness()).body.status;
      }
      assert.equal(status, 'ready', 'not ready again after Redis came back');
    });
  },
  { config: { REDIS_URL: redisRelay.url } },
);

const outageRelay = await startRedisRelay();

describeEachDatabase(
  'calls while Redis is away',
  (env) => {
    it('AI calls and sign-ins are answered, counted in this process: a key over its rate is still a 429, never a 500', async () => {
      const user = await fundedUser(env, 5);
      const session = await env.createUser({ password: 'a-long-password' });
      const chat = () =>
        env.request('POST', '/api/v1/chat/completions', {
          token: user.key,
          body: { model: 'tollgate/echo', messages: [{ role: 'user', content: 'hi' }] },
        });
      assert.equal((await chat()).status, 200);
      outageRelay.cut();
      try {
        // The window counted in Redis before the outage is not known here: this process counts afresh.
        const statuses: number[] = [];
        for (let i = 0; i < 4; i++) statuses.push((await chat()).status);
        assert.deepEqual(statuses, [200, 200, 200, 429]);
        const signIn = await env.request('POST', '/api/auth/signin', {
          body: { email: session.email, password: 'a-long-password' },
        });
        assert.equal(signIn.status, 200, signIn.text);
      } finally {
        outageRelay.restore();
      }
      let ready = '';
      for (let i = 0; i < 100 && ready !== 'ready'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        ready = (await env.request('GET', '/readyz')).body.status;
      }
      assert.equal(ready, 'ready', 'Redis is back');
      // Counting in Redis again: its window still holds the call made before the outage.
      const after: number[] = [];
      for (let i = 0; i < 3; i++) after.push((await chat()).status);
      assert.deepEqual(after, [200, 200, 429]);
    });
  },
  // A clock that stands still: every call falls in one rate window, however long the test takes.
  { config: { REDIS_URL: outageRelay.url, RATE_LIMIT_KEY_RPM: 3 }, manualClock: true },
);

const silentRelay = await startRedisRelay();

describeEachDatabase(
  'calls while Redis is connected but silent',
  (env) => {
    it('only the calls that meet the silence wait for the command timeout; the next ones count in this process at once, and Redis counting resumes when it answers', async () => {
      const user = await fundedUser(env, 5);
      const chat = async () => {
        const startedAt = performance.now();
        const response = await env.request('POST', '/api/v1/chat/completions', {
          token: user.key,
          body: { model: 'tollgate/echo', messages: [{ role: 'user', content: 'hi' }] },
        });
        return { status: response.status, ms: performance.now() - startedAt };
      };
      assert.equal((await chat()).status, 200);
      silentRelay.freeze();
      try {
        // The first call waits for the command timeout (1 s) and is counted in this process.
        assert.equal((await chat()).status, 200);
        // The next ones do not wait for Redis again: each took another second while the connection stayed silent.
        const later: Array<{ status: number; ms: number }> = [];
        for (let i = 0; i < 4; i++) later.push(await chat());
        assert.deepEqual(
          later.map((call) => call.status),
          [200, 200, 429, 429],
        );
        assert.ok(
          later.every((call) => call.ms < 500),
          `calls after the first waited for Redis: ${later.map((c) => Math.round(c.ms))} ms`,
        );
      } finally {
        silentRelay.thaw();
      }
      // Redis answers again: this process's own count is over the rate, so a call answered 200 was counted in
      // Redis, whose window holds the call made before the silence (and the timed-out one, run once thawed).
      let status = 0;
      for (let i = 0; i < 50 && status !== 200; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = (await chat()).status;
      }
      assert.equal(status, 200, 'counting in Redis again');
    });
  },
  // A clock that stands still: every call falls in one rate window, however long the test takes.
  { config: { REDIS_URL: silentRelay.url, RATE_LIMIT_KEY_RPM: 3 }, manualClock: true },
);

describeEachDatabase('metrics', (env) => {
  it('/metrics is for operators only', async () => {
    assert.equal((await env.request('GET', '/metrics')).status, 401);
    const session = await env.createUser();
    assert.equal((await env.request('GET', '/metrics', { headers: { cookie: session.cookie } })).status, 401);
  });

  it('counts requests by route and status and measures their latency', async () => {
    await env.request('GET', '/api/user/me');
    await env.request('GET', '/api/user/me');
    const metrics = await env.request('GET', '/metrics', { token: env.adminToken });
    assert.equal(metrics.status, 200);
    const line = metrics.text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('tollgate_http_requests_total{') &&
          l.includes('route="/api/user/me"') &&
          l.includes('status="401"'),
      );
    assert.ok(line, 'a counter line for GET /api/user/me 401');
    assert.equal(Number(line!.split(' ').at(-1)), 2);
    assert.match(
      metrics.text,
      /tollgate_http_request_duration_seconds_bucket\{le="0.005",route="\/api\/user\/me",method="GET"\}/,
    );
  });
});

const logLines: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk) => logLines.push(...String(chunk).split('\n').filter(Boolean)));

describeEachDatabase(
  'logs',
  (env) => {
    it('write one JSON line per request with its id and the caller ids, and never a secret', async () => {
      const session = await env.createUser();
      const secrets = [
        'Bearer-secret-token-value-123',
        session.cookie.split('=')[1],
        'v1,c2lnbmF0dXJlLXNlY3JldA==',
        session.password,
        session.csrfToken,
      ];
      await env.request('GET', '/api/user/me', { token: secrets[0] });
      await env.request('GET', '/api/user/me', {
        headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken },
      });
      await env.request('POST', '/api/auth/signin', { body: { email: session.email, password: session.password } });
      await env.request('POST', '/api/webhooks/replicate', {
        raw: '{}',
        headers: {
          'content-type': 'application/json',
          'webhook-signature': secrets[2],
          'webhook-id': 'msg_1',
          'webhook-timestamp': '1',
        },
      });
      await new Promise((resolve) => setImmediate(resolve));
      const text = logLines.join('\n');
      for (const secret of secrets)
        assert.ok(!text.includes(secret), `a log line contains a secret (${secret.slice(0, 6)}…)`);
      const entries = logLines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request');
      const me = entries.find(
        (entry) => entry.route === '/api/user/me' && entry.status === 200 && entry.userId === session.userId,
      );
      assert.ok(me, 'the authenticated request is logged');
      assert.equal(me.userId, session.userId);
      assert.match(me.reqId, /^[\w-]{8,}$/);
    });
  },
  { logDestination: logStream },
);
