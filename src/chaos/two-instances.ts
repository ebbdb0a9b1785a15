import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { selectedDatabases, startServeProcess, TestEnv } from '../testing/harness.ts';
import { FakeReplicate } from '../predictions/testing/replicate-server.ts';
import {
  addReplicateModels,
  startPrediction,
  userWithCredits,
  walletMicros,
  webhookUrlOf,
} from '../predictions/testing/scenario.ts';
import type { ChaosProfile } from './profile.ts';
import type { FaultUpstream } from './fault-upstream.ts';
import {
  assertCreditsConserved,
  assertLedgerVerifies,
  chat,
  createChaosUser,
  createKey,
  CREDIT,
  dashboardHeaders,
  grant,
  putChatModel,
  send,
} from './client.ts';
import { count } from './figures.ts';

const REDIS_URL = 'redis://127.0.0.1:6379';
/** Requests per minute per key on both processes: the shared counter must admit exactly this many in all. */
const KEY_RPM = 20;
/** Each race call holds and captures exactly 4 credits (4 words at 1 credit, capped at 4 output tokens). */
const RACE_MODEL = { id: 'chaos/race', upstreamModel: 'drip-4-20', cost: 4 };
const FREE_MODEL = { id: 'chaos/free', upstreamModel: 'ok-1' };
/** Credits of the racing user and the daily limit of its limited key. */
const BALANCE = 40;
const DAILY_LIMIT = 10;
/** What the final Replicate webhook charges (0.01 + 0.5 s-rounded 1.5 s + 2 images; see predictions.test.ts). */
const IMAGE_COST = 10_000 + 500_000 + 60_000;

/**
 * Two `tollgate serve` processes on one PostgreSQL schema and one Redis (issue 7's "Done when", issue 8's
 * overspend race): spending limits, credits, webhook idempotency, request-rate limits and revocation hold
 * across them, under calls sent to both at once.
 */
export function twoInstanceSuite(profile: ChaosProfile, upstream: FaultUpstream): void {
  if (!selectedDatabases().includes('postgres')) return;
  describe('two gateway processes on one PostgreSQL and one Redis [postgres]', () => {
    let fake: FakeReplicate;
    let env: TestEnv;
    const gateways: Array<Awaited<ReturnType<typeof startServeProcess>>> = [];
    const urls = () => gateways.map((g) => g.baseUrl);

    before(async () => {
      fake = await new FakeReplicate().start();
      const shared = {
        REDIS_URL,
        OPENAI_BASE_URL: upstream.baseUrl,
        REPLICATE_WEBHOOK_SECRET: fake.secret,
        REPLICATE_BASE_URL: fake.baseUrl,
        REPLICATE_API_TOKEN: fake.token,
      };
      env = new TestEnv('postgres', { config: shared });
      await env.start();
      await putChatModel(env.baseUrl, env.adminToken, RACE_MODEL.id, RACE_MODEL.upstreamModel, RACE_MODEL.cost);
      const free = await send(env.baseUrl, 'PUT', `/api/admin/models/${FREE_MODEL.id}`, {
        token: env.adminToken,
        body: { provider: 'openai', upstreamModel: FREE_MODEL.upstreamModel, pricing: {}, maxOutputTokens: 8 },
      });
      assert.equal(free.status, 200, free.text);
      await addReplicateModels(env);
      gateways.push(
        ...(await Promise.all(
          [1, 2].map(() => startServeProcess(env, { ...shared, RATE_LIMIT_KEY_RPM: String(KEY_RPM) })),
        )),
      );
    });
    after(async () => {
      await Promise.all(gateways.map((g) => g.stop()));
      await env?.stop();
      await fake?.stop();
    });

    it(`${profile.overspendCalls} calls to both at once against one small balance and one daily limit: overspend 0`, async () => {
      const [a, b] = urls();
      const user = await createChaosUser(a, env.adminToken, {
        credits: BALANCE,
        keyLimit: { limit: DAILY_LIMIT, period: 'daily' },
      });
      // Credits granted through one process are what the other sees.
      assert.equal(
        (await send(b, 'GET', '/api/wallet/balance', { headers: { cookie: user.cookie } })).body.available,
        BALANCE,
      );
      // The limited key takes up to KEY_RPM calls; the others go to unlimited keys of the same wallet, each
      // under the request-rate limit, so only money can refuse them.
      const others = await Promise.all(
        Array.from({ length: Math.ceil(Math.max(0, profile.overspendCalls - KEY_RPM) / KEY_RPM) }, () =>
          createKey(b, user),
        ),
      );
      const keys = [user.key, ...others.map((k) => k.key)];
      const calls = Array.from({ length: profile.overspendCalls }, (_, i) => ({
        key: keys[Math.floor(i / KEY_RPM)],
        base: i % 2 ? b : a,
        stream: i % 4 < 2,
      }));
      const seen = await Promise.all(
        calls.map((c) =>
          chat(c.base, c.key, {
            model: RACE_MODEL.id,
            stream: c.stream,
            messages: [{ role: 'user', content: 'race' }],
          }),
        ),
      );

      let succeeded = 0;
      let limitedKeySucceeded = 0;
      seen.forEach((s, i) => {
        const what = JSON.stringify(s).slice(0, 300);
        assert.equal(s.cut, false, what);
        if (s.status === 200) {
          succeeded++;
          if (calls[i].key === user.key) limitedKeySucceeded++;
          return;
        }
        // Refusals are restriction errors, never a rate limit (each key stays under it) and never a crash.
        assert.ok(
          (s.status === 402 && s.body.error.code === 'INSUFFICIENT_CREDITS') ||
            (s.status === 429 && s.body.error.code === 'SPENDING_LIMIT_EXCEEDED'),
          what,
        );
      });
      assert.ok(
        limitedKeySucceeded * RACE_MODEL.cost <= DAILY_LIMIT,
        `the limited key spent ${limitedKeySucceeded * RACE_MODEL.cost} of a ${DAILY_LIMIT} daily limit`,
      );
      assert.equal(succeeded, BALANCE / RACE_MODEL.cost, 'the balance is spent exactly, never beyond');

      const keySpend = await env.db
        .selectFrom('holds')
        .select((eb) => eb.fn.sum<string | number>('captured').as('spent'))
        .where('key_id', '=', user.keyId)
        .executeTakeFirstOrThrow();
      assert.ok(Number(keySpend.spent ?? 0) <= DAILY_LIMIT * CREDIT, 'the daily limit held across both processes');
      const { captured } = await assertCreditsConserved(env.db, new Map([[user.userId, BALANCE * CREDIT]]));
      assert.equal(captured, BALANCE * CREDIT);
      for (const base of [a, b]) {
        const wallet = await send(base, 'GET', '/api/wallet/balance', { headers: { cookie: user.cookie } });
        assert.deepEqual([wallet.body.balance, wallet.body.reserved, wallet.body.available], [0, 0, 0]);
        await assertLedgerVerifies(base, env.adminToken);
      }
    });

    it('credits granted on one process are spent on the other, and the balance each shows agrees', async () => {
      const [a, b] = urls();
      const user = await createChaosUser(a, env.adminToken, { credits: 0 });
      const refused = await chat(b, user.key, { model: RACE_MODEL.id, messages: [{ role: 'user', content: 'x' }] });
      assert.equal(refused.status, 402);
      await grant(a, env.adminToken, user.userId, 10);
      assert.equal(
        (await chat(b, user.key, { model: RACE_MODEL.id, messages: [{ role: 'user', content: 'x' }] })).status,
        200,
      );
      for (const base of [a, b])
        assert.equal(
          (await send(base, 'GET', '/api/wallet/balance', { headers: { cookie: user.cookie } })).body.available,
          10 - RACE_MODEL.cost,
        );
    });

    it('the same webhook delivered to both processes at once charges once', async () => {
      const [a, b] = urls();
      const session = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, session);
      const path = new URL(webhookUrlOf(fake, prediction.replicateId)).pathname;
      fake.update(prediction.replicateId, {
        status: 'succeeded',
        output: ['https://replicate.delivery/a.png', 'https://replicate.delivery/b.png'],
        metrics: { predict_time: 1.5 },
      });
      const completed = fake.webhookFor(prediction.replicateId);
      const copies = 20;
      const answers = await Promise.all(
        Array.from({ length: copies }, (_, i) => {
          count('requestsSent');
          return FakeReplicate.deliver(`${i % 2 ? b : a}${path}`, completed);
        }),
      );
      assert.ok(
        answers.every((answer) => answer.status === 200),
        JSON.stringify(answers.find((answer) => answer.status !== 200)),
      );
      assert.equal(answers.filter((answer) => answer.body.charged === true).length, 1);
      assert.equal(answers.filter((answer) => answer.body.duplicate === true).length, copies - 1);
      for (const base of [a, b])
        assert.deepEqual(await walletMicros(env, session, base), {
          balance: 100 * CREDIT - IMAGE_COST,
          reserved: 0,
          available: 100 * CREDIT - IMAGE_COST,
        });
      await assertLedgerVerifies(a, env.adminToken);
    });

    it(`the request-rate limit is shared through Redis: ${KEY_RPM} per minute across both processes`, async () => {
      const [a, b] = urls();
      const user = await createChaosUser(a, env.adminToken, { credits: 0 });
      // The limit counts in fixed one-minute windows: a round that straddles two windows is run again.
      for (let round = 0; ; round++) {
        const { key } = round === 0 ? user : await createKey(a, user);
        const window = Math.floor(Date.now() / 60_000);
        const statuses = await Promise.all(
          Array.from({ length: KEY_RPM * 3 }, (_, i) =>
            send(i % 2 ? b : a, 'GET', '/api/v1/models', { token: key }).then(
              (r) => [r.status, r.body?.error?.code] as const,
            ),
          ),
        );
        if (Math.floor(Date.now() / 60_000) !== window && round < 3) continue;
        assert.equal(statuses.filter(([status]) => status === 200).length, KEY_RPM);
        assert.ok(
          statuses.every(([status, code]) => status === 200 || (status === 429 && code === 'RATE_LIMITED')),
          JSON.stringify(statuses),
        );
        return;
      }
    });

    it('a key revoked on one process is refused by the other at its next use', async () => {
      const [a, b] = urls();
      const user = await createChaosUser(a, env.adminToken, { credits: 0 });
      assert.equal(
        (await send(b, 'GET', '/api/v1/models', { token: user.key })).status,
        200,
        'the other process knows (and caches) the key',
      );
      const revoked = await send(a, 'DELETE', `/api/user/api-keys/${user.keyId}`, { headers: dashboardHeaders(user) });
      assert.equal(revoked.status, 200, revoked.text);
      assert.equal((await send(a, 'GET', '/api/v1/models', { token: user.key })).status, 401);
      // The revocation crosses Redis pub/sub while this request crosses HTTP: it is allowed a few
      // milliseconds, far below the 10-second cache lifetime that would end the key without the bus.
      let status = (await send(b, 'GET', '/api/v1/models', { token: user.key })).status;
      for (let attempt = 0; status !== 401 && attempt < 20; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        status = (await send(b, 'GET', '/api/v1/models', { token: user.key })).status;
      }
      assert.equal(status, 401);
    });
  });
}
