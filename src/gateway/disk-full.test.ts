import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { selectedDatabases, TestEnv, type TestResponse } from '../testing/harness.ts';
import { fillDisk, freeDisk } from '../testing/disk-full.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { FakeStripe } from '../topups/testing/stripe-server.ts';
import { startTopup } from '../topups/testing/scenario.ts';
import { FakeReplicate } from '../predictions/testing/replicate-server.ts';
import { addReplicateModels, startPrediction, webhookUrlOf } from '../predictions/testing/scenario.ts';
import {
  assertChargedOnce,
  fundedUser,
  putModel,
  readSseFrames,
  settled,
  usageOf,
  wallet,
  type FundedUser,
} from './testing.ts';

// The database's disk fills up under a running Tollgate (src/testing/disk-full.ts: SQLite's own SQLITE_FULL on
// the server's connection, PostgreSQL's own 53100 disk_full), and is given back without a restart.
const upstream = await startMockUpstream();
// Slow enough that the disk is full well before it answers, however long filling it takes on a loaded machine.
const slowUpstream = await startMockUpstream({ latencyMs: 4000 });
const stripe = await new FakeStripe().start();
const replicate = await new FakeReplicate().start();
after(() => Promise.all([upstream.close(), slowUpstream.close(), stripe.stop(), replicate.stop()]));

const hi = [{ role: 'user', content: 'hi' }];
const DISK_FULL = /disk is full/;

/** Waits until `ready()` holds (checked every 50 ms), or fails after `ms`: what the test waits for is named. */
async function waitUntil(what: string, ready: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ready())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A 503 that says the disk is full, with a Retry-After: SERVICE_UNAVAILABLE in the OpenAI/Tollgate envelope,
 * or the key routes' `{ success: false, error }`.
 */
function assertDiskFull(response: TestResponse): void {
  assert.equal(response.status, 503, response.text);
  if (response.body.success === false) assert.match(response.body.error, DISK_FULL);
  else {
    assert.equal(response.body.error.code, 'SERVICE_UNAVAILABLE');
    assert.match(response.body.error.message, DISK_FULL);
  }
  assert.equal(response.headers.get('retry-after'), '30');
}

for (const kind of selectedDatabases()) {
  describe(`a full database disk [${kind}]`, () => {
    const logLines: string[] = [];
    const logStream = new PassThrough();
    logStream.on('data', (chunk) => logLines.push(...String(chunk).split('\n').filter(Boolean)));
    const env = new TestEnv(kind, {
      logDestination: logStream,
      config: {
        providers: [
          { name: 'mock', baseUrl: `${upstream.url}/v1` },
          { name: 'slow', baseUrl: `${slowUpstream.url}/v1` },
        ],
        ...stripe.config(),
        REPLICATE_WEBHOOK_SECRET: replicate.secret,
        REPLICATE_BASE_URL: replicate.baseUrl,
        REPLICATE_API_TOKEN: replicate.token,
      },
    });
    before(async () => {
      await env.start();
      stripe.webhookUrl = `${env.baseUrl}/api/webhooks/stripe`;
      const model = { upstreamModel: 'default-model', pricing: { prompt: 1, completion: 2 }, maxOutputTokens: 100 };
      await putModel(env, 'acme/quick', { provider: 'mock', ...model });
      await putModel(env, 'acme/slow', { provider: 'slow', ...model });
      await addReplicateModels(env);
    });
    after(() => env.stop());

    const chat = (user: FundedUser, model: string, stream = false) =>
      env.request('POST', '/api/v1/chat/completions', { token: user.key, body: { model, messages: hi, stream } });
    const streamedChat = (user: FundedUser, model: string) =>
      fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: hi, stream: true, stream_options: { include_usage: true } }),
      });
    const count = async (table: 'holds' | 'usage_records' | 'api_keys' | 'stripe_events' | 'webhook_deliveries') =>
      Number(
        (
          await env.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const heldBy = async (user: FundedUser) => (await wallet(env, user)).reserved > 0;
    /** Two new users' calls on the slow upstream, one streamed, once both hold (their wallets as before them). */
    const slowCallsHolding = async () => {
      const payer = await fundedUser(env, 10);
      const streamer = await fundedUser(env, 10);
      const [payerBefore, streamerBefore] = [await wallet(env, payer), await wallet(env, streamer)];
      const call = chat(payer, 'acme/slow');
      const stream = streamedChat(streamer, 'acme/slow');
      await waitUntil('both calls hold', async () => (await heldBy(payer)) && (await heldBy(streamer)));
      return { payer, payerBefore, streamer, streamerBefore, call, stream };
    };
    const assertLedgerVerifies = async () => {
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.status, 200, report.text);
      assert.equal(report.body.ok, true, report.text);
    };

    it('an AI call is refused before anything goes upstream: 503 SERVICE_UNAVAILABLE saying the disk is full, with Retry-After, in the OpenAI and Anthropic envelopes; nothing held or written; reads go on; served again once space is back, without a restart', async () => {
      const user = await fundedUser(env, 10);
      const before = await wallet(env, user);
      const [holds, records, sent] = [await count('holds'), await count('usage_records'), upstream.requests.length];
      await fillDisk(env);
      const logged = logLines.length;
      try {
        assertDiskFull(await chat(user, 'acme/quick'));
        assertDiskFull(await chat(user, 'acme/quick', true));
        const messages = await env.request('POST', '/api/v1/messages', {
          headers: { 'x-api-key': user.key, 'anthropic-version': '2023-06-01' },
          body: { model: 'acme/quick', max_tokens: 50, messages: hi },
        });
        assert.equal(messages.status, 503, messages.text);
        assert.equal(messages.body.type, 'error');
        assert.match(messages.body.error.message, DISK_FULL);
        assert.equal(messages.headers.get('retry-after'), '30');
        assert.equal(upstream.requests.length, sent, 'nothing went upstream');
        // Reads go on: the wallet is as it was, nothing reserved.
        assert.deepEqual(await wallet(env, user), before);
        assert.equal(await count('holds'), holds);
        assert.equal(await count('usage_records'), records);
        const ready = await env.request('GET', '/readyz');
        assert.equal(ready.status, 200, ready.text);
        assert.equal(ready.body.status, 'degraded');
        assert.equal(ready.body.checks.disk.ok, false);
        assert.match(ready.body.checks.disk.detail, DISK_FULL);
        const metrics = await env.request('GET', '/metrics', { token: env.adminToken });
        assert.match(metrics.text, /^tollgate_database_disk_full 1$/m);
      } finally {
        await freeDisk(env);
      }
      const answered = await chat(user, 'acme/quick');
      assert.equal(answered.status, 200, answered.text);
      assert.equal((await settled(env, user)).balance, before.balance - answered.body.usage.cost * 1_000_000);
      await assertLedgerVerifies();
      if (kind === 'sqlite') {
        // SQLite's commits tell at once that there is room again (PostgreSQL's after a minute without a refusal).
        assert.equal((await env.request('GET', '/readyz')).body.status, 'ready');
        const metrics = await env.request('GET', '/metrics', { token: env.adminToken });
        assert.match(metrics.text, /^tollgate_database_disk_full 0$/m);
      }
      // The operator was told why, once when it filled up, with no secret in the lines.
      const entries = logLines.slice(logged).map((line) => JSON.parse(line));
      assert.equal(entries.filter((e) => /^the database disk is full: writes fail/.test(e.msg)).length, 1);
      assert.ok(entries.some((e) => e.msg === 'request refused (503): the database disk is full'));
      assert.ok(!entries.some((e) => e.msg === 'request failed'), 'no "request failed" with a stack');
      assert.ok(!logLines.join('\n').includes(user.key), 'no API key in the log');
    });

    it('sign-in, key creation and the Stripe and Replicate webhooks answer 503 while the disk is full (the senders retry), write nothing, and succeed once space is back; money exact', async () => {
      const user = await fundedUser(env, 100);
      const started = await startTopup(env, user.session, 5);
      const paid = stripe.event('checkout.session.completed', stripe.pay(started.sessionId));
      const prediction = await startPrediction(env, user.session);
      replicate.update(prediction.replicateId, {
        status: 'succeeded',
        output: ['https://replicate.delivery/a.png'],
        metrics: { predict_time: 1 },
      });
      const completed = replicate.webhookFor(prediction.replicateId);
      const webhookUrl = webhookUrlOf(replicate, prediction.replicateId);
      const before = await wallet(env, user);
      const counts = async () => [
        await count('api_keys'),
        await count('stripe_events'),
        await count('webhook_deliveries'),
      ];
      const countsBefore = await counts();
      const signIn = () =>
        env.request('POST', '/api/auth/signin', {
          body: { email: user.session.email, password: user.session.password },
        });
      const createKey = () =>
        env.dashboard(user.session, 'POST', '/api/user/api-keys', { name: 'while full', permissions: ['ai:chat'] });

      await fillDisk(env);
      try {
        assertDiskFull(await signIn());
        assertDiskFull(await createKey());
        const topup = await stripe.deliver(paid);
        assert.equal(topup.status, 503, JSON.stringify(topup.body));
        assert.match(topup.body.error.message, DISK_FULL);
        const finished = await FakeReplicate.deliver(webhookUrl, completed);
        assert.equal(finished.status, 503, JSON.stringify(finished.body));
        assert.match(finished.body.error.message, DISK_FULL);
        assert.deepEqual(await counts(), countsBefore, 'nothing half-written');
        assert.deepEqual(await wallet(env, user), before);
      } finally {
        await freeDisk(env);
      }
      assert.equal((await signIn()).status, 200);
      assert.equal((await createKey()).status, 200);
      // The senders' retries of the same deliveries are taken as first ones: credited and charged once.
      const topup = await stripe.deliver(paid);
      assert.equal(topup.status, 200, JSON.stringify(topup.body));
      assert.equal(topup.body.effect, 'credited');
      const finished = await FakeReplicate.deliver(webhookUrl, completed);
      assert.equal(finished.status, 200, JSON.stringify(finished.body));
      assert.equal(finished.body.charged, true);
      const charged = (await usageOf(env, user)).find((record) => record.hold_id !== null);
      assert.ok(charged, 'the prediction has its usage record');
      const after = await wallet(env, user);
      assert.equal(after.reserved, 0);
      assert.equal(after.balance, before.balance + 500_000_000 - Number(charged.cost));
      await assertLedgerVerifies();
    });

    it('a call whose settle meets the full disk, the upstream having answered, is settled once space is back within the retries: answered and charged exactly once, streaming or not', async () => {
      const { payer, payerBefore, streamer, streamerBefore, call, stream } = await slowCallsHolding();
      // Held, the upstream thinking: the disk fills; once both settles have met it, it has room again.
      const logged = logLines.length;
      await fillDisk(env);
      await waitUntil(
        'both settles met the full disk',
        () => logLines.slice(logged).filter((line) => line.includes('closing a hold failed; trying again')).length >= 2,
      );
      await freeDisk(env);
      const answered = await call;
      assert.equal(answered.status, 200, answered.text);
      await assertChargedOnce(env, payer, payerBefore, answered.body.usage);
      const frames = await readSseFrames(await stream);
      assert.equal(frames.at(-1)!.data, '[DONE]');
      const usage = frames.map((frame) => (frame.data === '[DONE]' ? null : frame.data.usage)).findLast(Boolean);
      await assertChargedOnce(env, streamer, streamerBefore, usage);
    });

    it('a call whose settle cannot be written while the disk stays full is never answered as complete: 503 after the retries, a stream ends with that error in place of its end; nothing charged, the hold stays until it expires; the ledger verifies', async () => {
      const { payer, payerBefore, streamer, streamerBefore, call, stream } = await slowCallsHolding();
      await fillDisk(env);
      let frames;
      try {
        assertDiskFull(await call);
        frames = await readSseFrames(await stream);
      } finally {
        await freeDisk(env);
      }
      const last = frames.at(-1)!;
      assert.equal(last.event, 'error');
      assert.equal(last.data.error.code, 'SERVICE_UNAVAILABLE');
      assert.match(last.data.error.message, DISK_FULL);
      assert.ok(!frames.some((frame) => frame.data === '[DONE]'), 'no client reads the stream as complete');
      for (const [user, before] of [
        [payer, payerBefore],
        [streamer, streamerBefore],
      ] as const) {
        const now = await wallet(env, user);
        assert.equal(now.balance, before.balance, 'nothing charged');
        assert.ok(now.reserved > 0, 'the hold stays until it expires');
        assert.deepEqual(await usageOf(env, user, 0), []);
      }
      await assertLedgerVerifies();
    });
  });
}
