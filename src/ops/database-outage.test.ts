import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { selectedDatabases, TEST_POSTGRES_URL, TestEnv } from '../testing/harness.ts';
import { startTcpRelay, type Relay } from '../testing/redis-relay.ts';
import { assertChargedOnce, fundedUser, putModel, wallet, type FundedUser } from '../gateway/testing.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';

// The server's own connection to PostgreSQL goes through a relay the test cuts (connections reset, new ones
// refused) and freezes (connections open, nothing answered), without touching the PostgreSQL others share.
if (selectedDatabases().includes('postgres')) {
  const relay: Relay = await startTcpRelay(Number(new URL(TEST_POSTGRES_URL).port || 5432));
  const relayed = new URL(TEST_POSTGRES_URL);
  relayed.port = String(relay.port);

  // An upstream that takes its time, so that the database can go away while a call waits on it.
  const slowUpstream = await startMockUpstream({ latencyMs: 1500 });
  after(() => slowUpstream.close());

  describe('calls while PostgreSQL is unreachable [postgres]', () => {
    const logLines: string[] = [];
    const logStream = new PassThrough();
    logStream.on('data', (chunk) => logLines.push(...String(chunk).split('\n').filter(Boolean)));
    const env = new TestEnv('postgres', {
      logDestination: logStream,
      config: {
        DATABASE_URL: relayed.toString(),
        providers: [{ name: 'slow', baseUrl: `${slowUpstream.url}/v1` }],
      },
    });
    let user: FundedUser;
    before(async () => {
      await env.start();
      user = await fundedUser(env, 10);
    });
    after(() => env.stop());
    const chat = () =>
      env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'tollgate/echo', messages: [{ role: 'user', content: 'hi' }] },
      });

    it('an AI call and a wallet read are a 503 SERVICE_UNAVAILABLE naming the database, in their envelopes, not a 500 "Internal error", each logged as one warning line without a stack; served again once it is back', async () => {
      assert.equal((await chat()).status, 200);
      const logged = logLines.length;
      relay.cut();
      try {
        const refused = await chat();
        assert.equal(refused.status, 503, refused.text);
        assert.equal(refused.body.error.code, 'SERVICE_UNAVAILABLE');
        assert.match(refused.body.error.message, /database/i);
        assert.ok(refused.headers.get('retry-after'), 'Retry-After says when to try again');
        const wallet = await env.dashboard(user.session, 'GET', '/api/wallet/balance');
        assert.equal(wallet.status, 503, wallet.text);
        assert.equal(wallet.body.error.code, 'SERVICE_UNAVAILABLE');
        assert.equal((await env.request('GET', '/readyz')).status, 503);
        // The operator reads why in one line a request, not an error with a stack as if Tollgate had a bug.
        const entries = logLines.slice(logged).map((line) => JSON.parse(line));
        const refusals = entries.filter((e) => e.msg === 'request refused (503): the database is not reachable');
        assert.deepEqual(
          refusals.map((e) => [e.level, e.route, 'err' in e]),
          [
            [40, '/api/v1/chat/completions', false],
            [40, '/api/wallet/balance', false],
          ],
        );
        assert.ok(!entries.some((e) => e.msg === 'request failed'), 'no "request failed" with a stack');
      } finally {
        relay.restore();
      }
      assert.equal((await chat()).status, 200);
    });

    it('a call whose settle meets the database gone is settled once it is back: answered, charged exactly once, one usage record', async () => {
      await putModel(env, 'acme/slow', {
        provider: 'slow',
        upstreamModel: 'default-model',
        pricing: { prompt: 1, completion: 2 },
        maxOutputTokens: 100,
      });
      const payer = await fundedUser(env, 10);
      const before = await wallet(env, payer);
      const call = env.request('POST', '/api/v1/chat/completions', {
        token: payer.key,
        body: { model: 'acme/slow', messages: [{ role: 'user', content: 'hi' }] },
      });
      // The hold is placed, the upstream is thinking: the database goes, and comes back after the answer.
      await new Promise((resolve) => setTimeout(resolve, 400));
      relay.cut();
      await new Promise((resolve) => setTimeout(resolve, 1600));
      relay.restore();
      const answered = await call;
      assert.equal(answered.status, 200, answered.text);
      await assertChargedOnce(env, payer, before, answered.body.usage);
    });

    it('/readyz answers 503 within a few seconds while PostgreSQL is silent, before a load balancer gives up', async () => {
      relay.freeze();
      try {
        const startedAt = performance.now();
        const ready = await fetch(`${env.baseUrl}/readyz`, { signal: AbortSignal.timeout(5000) });
        assert.equal(ready.status, 503);
        const body = (await ready.json()) as { status: string; checks: { database: { ok: boolean; detail: string } } };
        assert.equal(body.status, 'not ready');
        assert.equal(body.checks.database.ok, false);
        assert.ok(performance.now() - startedAt < 4000);
      } finally {
        relay.thaw();
      }
      assert.equal((await chat()).status, 200);
    });
  });
}
