import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import pg from 'pg';
import { selectedDatabases, TEST_POSTGRES_URL, TestEnv } from '../testing/harness.ts';
import { startTcpRelay, type Relay } from '../testing/redis-relay.ts';
import { assertChargedOnce, fundedUser, holdsOf, putModel, wallet, type FundedUser } from '../gateway/testing.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';

// A PostgreSQL that stops answering without closing its connections (a partition, a paused VM, a firewall
// dropping packets): the server's connections go through a relay that the test freezes (everything held) or
// whose open connections lose their replies. Before the pool bounded its waits, such calls hung for as long as
// the silence lasted; each call here is given far longer than the short timeouts this server runs with, and a
// call still waiting then fails the test.
const HANG = 20_000;

if (selectedDatabases().includes('postgres')) {
  const relay: Relay = await startTcpRelay(Number(new URL(TEST_POSTGRES_URL).port || 5432));
  const relayed = new URL(TEST_POSTGRES_URL);
  relayed.port = String(relay.port);

  // An upstream that takes its time, so that the database can fall silent while a call waits on it.
  const slowUpstream = await startMockUpstream({ latencyMs: 1500 });
  after(() => slowUpstream.close());

  const logLines: Array<{ msg?: string }> = [];
  const logStream = new PassThrough();
  logStream.on('data', (chunk) =>
    logLines.push(
      ...String(chunk)
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
    ),
  );

  describe('calls while PostgreSQL is silent [postgres]', () => {
    const env = new TestEnv('postgres', {
      config: {
        DATABASE_URL: relayed.toString(),
        // A small pool, so that the calls made during the silence are more than it holds.
        DATABASE_POOL_SIZE: 2,
        DATABASE_CONNECT_TIMEOUT_SECONDS: 2,
        DATABASE_QUERY_TIMEOUT_SECONDS: 2,
        providers: [{ name: 'slow', baseUrl: `${slowUpstream.url}/v1` }],
      },
      logDestination: logStream,
    });
    let user: FundedUser;
    before(async () => {
      await env.start();
      user = await fundedUser(env, 10);
      await putModel(env, 'acme/slow', {
        provider: 'slow',
        upstreamModel: 'default-model',
        pricing: { prompt: 1, completion: 2 },
        maxOutputTokens: 100,
      });
    });
    // Connections left waiting on a lost answer (a regression) are reset, so that the server can stop.
    after(async () => {
      relay.cut();
      await env.stop();
    });

    const retried = () =>
      logLines.some((line) => line.msg?.includes('the database connection was lost while closing a hold'));

    /** A chat call, given {@link HANG} ms to answer: a call still waiting then fails the test. */
    async function chat(key: string, model = 'tollgate/echo') {
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
        signal: AbortSignal.timeout(HANG),
      });
      const text = await response.text();
      return { status: response.status, headers: response.headers, text, body: JSON.parse(text) };
    }

    it('AI calls made while PostgreSQL is silent answer 503 SERVICE_UNAVAILABLE with Retry-After, more calls than the pool holds included, instead of hanging; once it answers again calls are served and the ledger verifies', async () => {
      assert.equal((await chat(user.key)).status, 200);
      relay.freeze();
      try {
        const answers = await Promise.all(Array.from({ length: 5 }, () => chat(user.key)));
        for (const answer of answers) {
          assert.equal(answer.status, 503, answer.text);
          assert.equal(answer.body.error.code, 'SERVICE_UNAVAILABLE');
          assert.match(answer.body.error.message, /database/i);
          assert.ok(answer.headers.get('retry-after'), 'Retry-After says when to try again');
        }
      } finally {
        relay.thaw();
      }
      assert.equal((await chat(user.key)).status, 200);
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.body.ok, true, report.text);
    });

    it('a call whose settle committed but whose answer was lost is retried on another connection and charged exactly once, with one usage record; the ledger verifies', async () => {
      const payer = await fundedUser(env, 10);
      const before = await wallet(env, payer);
      const call = chat(payer.key, 'acme/slow');
      // The hold is placed, the upstream is thinking: the connections open now lose their replies, so the
      // settle's statement reaches PostgreSQL and commits, and the answer never comes back.
      for (let i = 0; (await holdsOf(env, payer)).length === 0; i++) {
        assert.ok(i < 500, 'the call placed its hold');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      relay.loseReplies();
      // Read past the relay: the settle's statement committed, its answer lost.
      const direct = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await direct.connect();
      try {
        for (let i = 0; ; i++) {
          const { rows } = await direct.query(`select status from "${env.space.schema}".holds where user_id = $1`, [
            payer.session.userId,
          ]);
          if (rows[0]?.status !== 'open') break;
          assert.ok(i < 500, 'the settle reached PostgreSQL');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      } finally {
        await direct.end();
      }
      assert.ok(!retried(), 'the first settle committed, before its answer timed out');
      const answered = await call;
      assert.equal(answered.status, 200, answered.text);
      assert.ok(retried(), 'the settle timed out and was tried again');
      await assertChargedOnce(env, payer, before, answered.body.usage);
    });
  });
}
