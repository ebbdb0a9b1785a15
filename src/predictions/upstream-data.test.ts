import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { FakeReplicate } from './testing/replicate-server.ts';
import type { DashboardSession } from '../testing/harness.ts';
import {
  addReplicateModels,
  assertLedgerVerifies,
  IMAGE_MODEL,
  startPrediction,
  userWithCredits,
  walletMicros,
  webhookUrlOf,
} from './testing/scenario.ts';
import { RECONCILE_AFTER_MS } from './reconcile.ts';

/**
 * Odd but signed upstream data: what Replicate (or anything holding its signing secret) may send that is not
 * a well-formed prediction. Whatever it sends, a prediction is billed exactly, within its hold, and never free.
 * The image model: 0.01 per call, 0.333333 per second (60 s held), 0.03 per image; 2 images asked.
 */

const fake = await new FakeReplicate().start();
after(() => fake.stop());

const REQUEST = 10_000;
const SECOND = 333_333;
const IMAGE = 30_000;
const HELD = REQUEST + SECOND * 60 + IMAGE * 2;
/** Seconds of compute priced, to the micro-credit rounded up. */
const compute = (seconds: number) => Math.ceil(SECOND * seconds);
const images = (n: number) => Array.from({ length: n }, (_, i) => `https://replicate.delivery/${i}.png`);

/** What the user paid for the prediction, read from the wallet: nothing must stay reserved. */
async function paid(env: TestEnv, user: DashboardSession, balanceBefore: number): Promise<number> {
  const wallet = await walletMicros(env, user);
  assert.equal(wallet.reserved, 0, 'the hold is closed');
  return balanceBefore - wallet.balance;
}

/** Delivers a signed webhook of exactly `body` (raw text: 1e309 has no JSON.stringify form). */
async function deliverRaw(replicateId: string, body: string) {
  const ack = await FakeReplicate.deliver(webhookUrlOf(fake, replicateId), fake.sign(body));
  assert.equal(ack.status, 200, JSON.stringify(ack.body));
  assert.equal(ack.body.charged, true, JSON.stringify(ack.body));
}

describeEachDatabase(
  'predictions billed on odd upstream data',
  (env) => {
    before(async () => {
      fake.now = () => env.clock.now();
      await addReplicateModels(env);
    });

    it('a succeeded webhook whose predict_time is a string, negative, null or missing is charged the time Tollgate measured from create to completion, never 0 s', async () => {
      for (const metrics of [{ predict_time: '1.5' }, { predict_time: -3 }, { predict_time: null }, {}]) {
        const user = await userWithCredits(env, 100);
        const prediction = await startPrediction(env, user);
        env.manualClock.advance(4_000);
        fake.update(prediction.replicateId, { status: 'succeeded', output: images(2), metrics });
        await deliverRaw(prediction.replicateId, JSON.stringify(fake.wire(prediction.replicateId)));
        assert.equal(
          await paid(env, user, 100_000_000),
          REQUEST + compute(4) + IMAGE * 2,
          `predict_time ${JSON.stringify(metrics)}`,
        );
        const read = await env.dashboard(user, 'GET', `/api/v1/predictions/${prediction.id}`);
        assert.deepEqual(read.body.metrics, { predict_time: 4 }, 'the time billed is the one shown');
      }
      await assertLedgerVerifies(env);
    });

    it('a failed notice whose error text holds a NUL is recorded, the NUL shown as U+FFFD, and the hold released (PostgreSQL refuses U+0000 in text)', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      const body = JSON.stringify({
        ...fake.wire(prediction.replicateId),
        status: 'failed',
        error: 'CUDA error\u0000 at step 3',
      });
      const ack = await FakeReplicate.deliver(webhookUrlOf(fake, prediction.replicateId), fake.sign(body));
      assert.equal(ack.status, 200, JSON.stringify(ack.body));
      assert.equal(ack.body.status, 'failed', JSON.stringify(ack.body));
      const read = await env.dashboard(user, 'GET', `/api/v1/predictions/${prediction.id}`);
      assert.equal(read.body.status, 'failed');
      assert.equal(read.body.error, 'CUDA error\uFFFD at step 3');
      assert.equal(await paid(env, user, 100_000_000), 0);
      await assertLedgerVerifies(env);
    });

    it("a predict_time beyond the hold's seconds (99999, 1e308, 1e309) is charged the hold's 60 s, not 0 s, and not the image that was not produced", async () => {
      for (const predictTime of ['1e308', '1e309', '99999']) {
        const user = await userWithCredits(env, 100);
        const prediction = await startPrediction(env, user);
        const body = JSON.stringify({ ...fake.wire(prediction.replicateId), status: 'succeeded', output: images(1) });
        await deliverRaw(
          prediction.replicateId,
          body.replace('"metrics":{}', `"metrics":{"predict_time":${predictTime}}`),
        );
        assert.equal(await paid(env, user, 100_000_000), REQUEST + SECOND * 60 + IMAGE, `predict_time ${predictTime}`);
      }
      await assertLedgerVerifies(env);
    });

    it('a read of the prediction and reconciliation fall back to the measured time the same way, capped at the hold', async () => {
      const reader = await userWithCredits(env, 100);
      const read = await startPrediction(env, reader);
      env.manualClock.advance(4_000);
      fake.update(read.replicateId, { status: 'succeeded', output: images(2), metrics: { predict_time: 'soon' } });
      const done = await env.dashboard(reader, 'GET', `/api/v1/predictions/${read.id}`);
      assert.equal(done.body.status, 'succeeded');
      assert.equal(done.body.cost, (REQUEST + compute(4) + IMAGE * 2) / 1_000_000);
      assert.equal(await paid(env, reader, 100_000_000), REQUEST + compute(4) + IMAGE * 2);

      // Reconciliation sees the end 10 minutes after the start: measured 600 s, billed the 60 s held.
      const late = await userWithCredits(env, 100);
      const lost = await startPrediction(env, late);
      fake.update(lost.replicateId, { status: 'succeeded', output: images(1), metrics: { predict_time: null } });
      env.manualClock.advance(RECONCILE_AFTER_MS + 1);
      const run = await env.admin('POST', '/api/admin/cron/reconcile-predictions');
      assert.equal(run.status, 200, run.text);
      assert.equal(await paid(env, late, 100_000_000), REQUEST + SECOND * 60 + IMAGE);
      await assertLedgerVerifies(env);
    });

    it('a create Replicate answers already succeeded, with no usable predict_time, is charged the time the create took', async () => {
      const user = await userWithCredits(env, 100);
      fake.createNextAs = { status: 'succeeded', output: images(2), metrics: { predict_time: 'fast' } };
      fake.onCreate = () => env.manualClock.advance(4_000);
      try {
        const created = await env.dashboard(user, 'POST', '/api/v1/predictions', {
          model: IMAGE_MODEL.id,
          input: { prompt: 'a lighthouse', num_outputs: 2 },
        });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body.status, 'succeeded');
      } finally {
        fake.onCreate = null;
      }
      assert.equal(await paid(env, user, 100_000_000), REQUEST + compute(4) + IMAGE * 2);
      await assertLedgerVerifies(env);
    });

    it('a prediction the caller canceled before Replicate started it pays the request only; one that started, with no usable predict_time, the measured time', async () => {
      const user = await userWithCredits(env, 100);
      const queued = await startPrediction(env, user);
      env.manualClock.advance(4_000);
      const canceled = await env.dashboard(user, 'POST', `/api/v1/predictions/${queued.id}/cancel`);
      assert.equal(canceled.body.status, 'canceled');
      assert.equal(await paid(env, user, 100_000_000), REQUEST);

      const other = await userWithCredits(env, 100);
      const running = await startPrediction(env, other);
      fake.update(running.replicateId, { status: 'processing', output: images(1), metrics: { predict_time: 'n/a' } });
      env.manualClock.advance(4_000);
      await env.dashboard(other, 'POST', `/api/v1/predictions/${running.id}/cancel`);
      assert.equal(await paid(env, other, 100_000_000), REQUEST + compute(4) + IMAGE);
      await assertLedgerVerifies(env);
    });

    it('a succeeded prediction whose output is null is charged one output, as README says ("else 1"): it is not free on a model priced per image', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      fake.update(prediction.replicateId, { status: 'succeeded', output: null, metrics: { predict_time: 1.5 } });
      await deliverRaw(prediction.replicateId, JSON.stringify(fake.wire(prediction.replicateId)));
      assert.equal(await paid(env, user, 100_000_000), REQUEST + compute(1.5) + IMAGE);
      await assertLedgerVerifies(env);
    });

    it('a final webhook without an output is charged the output the prediction already showed', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      fake.update(prediction.replicateId, { status: 'processing', output: images(2) });
      const running = JSON.stringify(fake.wire(prediction.replicateId));
      const ack = await FakeReplicate.deliver(webhookUrlOf(fake, prediction.replicateId), fake.sign(running));
      assert.equal(ack.body.charged, false);
      const final: Record<string, unknown> = {
        ...fake.wire(prediction.replicateId),
        status: 'succeeded',
        metrics: { predict_time: 1.5 },
      };
      delete final.output;
      await deliverRaw(prediction.replicateId, JSON.stringify(final));
      const read = await env.dashboard(user, 'GET', `/api/v1/predictions/${prediction.id}`);
      assert.deepEqual(read.body.output, images(2), 'the output shown');
      assert.equal(await paid(env, user, 100_000_000), REQUEST + compute(1.5) + IMAGE * 2, 'is the output charged');
      await assertLedgerVerifies(env);
    });

    it('a prediction is never charged more outputs than it asked for (and held for), whatever Replicate returns', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      fake.update(prediction.replicateId, { status: 'succeeded', output: images(5), metrics: { predict_time: 1.5 } });
      await deliverRaw(prediction.replicateId, JSON.stringify(fake.wire(prediction.replicateId)));
      assert.equal(await paid(env, user, 100_000_000), REQUEST + compute(1.5) + IMAGE * 2);
      assert.ok(REQUEST + compute(1.5) + IMAGE * 5 < HELD, 'the old charge of 5 images fitted in the hold');
      await assertLedgerVerifies(env);
    });
  },
  {
    manualClock: true,
    config: {
      REPLICATE_WEBHOOK_SECRET: fake.secret,
      REPLICATE_BASE_URL: fake.baseUrl,
      REPLICATE_API_TOKEN: fake.token,
    },
  },
);
