import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { FakeReplicate } from './testing/replicate-server.ts';
import {
  addReplicateModels,
  assertLedgerVerifies,
  AUDIO_MODEL,
  IMAGE_MODEL,
  startPrediction,
  userWithCredits,
  walletMicros,
  webhookUrlOf,
} from './testing/scenario.ts';
import { RECONCILE_AFTER_MS, RESETTLE_AFTER_MS } from './reconcile.ts';

const fake = await new FakeReplicate().start();
after(() => fake.stop());

/** Worst case of the default request: 0.01 + 0.333333 × 60 s + 0.03 × 2 images. */
const IMAGE_HOLD = 10_000 + 333_333 * 60 + 30_000 * 2;
/** A success in 1.5 s with two images: 0.01 + ceil(0.333333 × 1.5 = 0.4999995 → 0.5) + 0.06. */
const IMAGE_COST = 10_000 + 500_000 + 60_000;

async function usageOf(env: TestEnv, holdPredictionId: string) {
  const prediction = await env.db
    .selectFrom('predictions')
    .select('hold_id')
    .where('id', '=', holdPredictionId)
    .executeTakeFirstOrThrow();
  return env.db.selectFrom('usage_records').selectAll().where('hold_id', '=', prediction.hold_id).execute();
}

describeEachDatabase(
  'predictions',
  (env) => {
    before(async () => {
      fake.now = () => env.clock.now();
      await addReplicateModels(env);
    });

    it('a prediction holds its worst case and is sent to Replicate with the webhook and every event', async () => {
      const user = await userWithCredits(env, 100);
      const before = fake.requests.length;
      const created = await env.dashboard(user, 'POST', '/api/v1/predictions', {
        model: IMAGE_MODEL.id,
        input: { prompt: 'a lighthouse', num_outputs: 2 },
      });
      assert.equal(created.status, 201, created.text);
      assert.match(created.body.id, /^pred_/);
      assert.equal(created.body.status, 'starting');
      assert.equal(created.body.cost, null);
      const sent = fake.requests.slice(before).find((r) => r.method === 'POST')!;
      assert.equal(sent.path, '/v1/models/black-forest-labs/flux-schnell/predictions');
      assert.deepEqual(sent.body, {
        input: { prompt: 'a lighthouse', num_outputs: 2 },
        webhook: `${env.baseUrl}/api/webhooks/replicate`,
        webhook_events_filter: ['start', 'output', 'logs', 'completed'],
      });
      assert.equal(created.body.replicate_id, [...fake.predictions.keys()].at(-1));
      assert.deepEqual(await walletMicros(env, user), {
        balance: 100_000_000,
        reserved: IMAGE_HOLD,
        available: 100_000_000 - IMAGE_HOLD,
      });

      const audio = await startPrediction(env, user, { version: AUDIO_MODEL.id, input: { text: 'hello' } });
      assert.equal(audio.held, 5_000 + 100_000 * 120, 'the default worst case is 120 s and one output');
      assert.equal(fake.requests.at(-1)!.path, '/v1/predictions');
      assert.equal(
        fake.requests.at(-1)!.body.version,
        '5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa',
      );
    });

    it('hole 4: a prediction asking for outputs through num_images, or batch_size × num_outputs, holds an image price for each', async () => {
      const user = await userWithCredits(env, 100);
      const perOutputs = (outputs: number) => 10_000 + 333_333 * 60 + 30_000 * outputs;
      const images = await startPrediction(env, user, {
        model: IMAGE_MODEL.id,
        input: { prompt: 'a lighthouse', num_images: 4 },
      });
      assert.equal(images.held, perOutputs(4));
      const batch = await startPrediction(env, user, {
        model: IMAGE_MODEL.id,
        input: { prompt: 'a lighthouse', batch_size: 2, num_outputs: 3 },
      });
      assert.equal(batch.held, perOutputs(6));
      const tooMany = await env.dashboard(user, 'POST', '/api/v1/predictions', {
        model: IMAGE_MODEL.id,
        input: { batch_size: 16, num_outputs: 8 },
      });
      assert.equal(tooMany.status, 400, tooMany.text);
      assert.match(tooMany.body.error.message, /128 outputs/);
    });

    it('the three webhooks of a prediction charge once, at completion, for the time and images used', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      const url = webhookUrlOf(fake, prediction.replicateId);

      const start = fake.webhookFor(prediction.replicateId);
      fake.update(prediction.replicateId, {
        status: 'processing',
        output: ['https://replicate.delivery/a.png'],
        logs: 'step 1',
      });
      const output = fake.webhookFor(prediction.replicateId);
      fake.update(prediction.replicateId, {
        status: 'succeeded',
        output: ['https://replicate.delivery/a.png', 'https://replicate.delivery/b.png'],
        metrics: { predict_time: 1.5 },
      });
      const completed = fake.webhookFor(prediction.replicateId);

      assert.deepEqual((await FakeReplicate.deliver(url, start)).body, {
        received: true,
        predictionId: prediction.replicateId,
        status: 'starting',
        charged: false,
      });
      assert.deepEqual((await FakeReplicate.deliver(url, output)).body, {
        received: true,
        predictionId: prediction.replicateId,
        status: 'processing',
        charged: false,
      });
      assert.equal((await walletMicros(env, user)).reserved, IMAGE_HOLD, 'nothing settles before the terminal status');
      assert.deepEqual((await FakeReplicate.deliver(url, completed)).body, {
        received: true,
        predictionId: prediction.replicateId,
        status: 'succeeded',
        charged: true,
      });
      assert.deepEqual(await walletMicros(env, user), {
        balance: 100_000_000 - IMAGE_COST,
        reserved: 0,
        available: 100_000_000 - IMAGE_COST,
      });

      for (const delivery of [start, output, completed]) {
        assert.deepEqual((await FakeReplicate.deliver(url, delivery)).body, {
          received: true,
          duplicate: true,
          predictionId: prediction.replicateId,
        });
      }
      assert.equal((await walletMicros(env, user)).balance, 100_000_000 - IMAGE_COST);

      const read = await env.dashboard(user, 'GET', `/api/v1/predictions/${prediction.id}`);
      assert.equal(read.status, 200);
      assert.equal(read.body.status, 'succeeded');
      assert.deepEqual(read.body.output, ['https://replicate.delivery/a.png', 'https://replicate.delivery/b.png']);
      assert.equal(read.body.cost, IMAGE_COST / 1_000_000);
      assert.deepEqual(read.body.metrics, { predict_time: 1.5 });
      const usage = await usageOf(env, prediction.id);
      assert.deepEqual(
        usage.map((u) => [u.kind, u.model, u.cost, u.status, u.user_id]),
        [['prediction', IMAGE_MODEL.id, IMAGE_COST, 'ok', user.userId]],
      );
      await assertLedgerVerifies(env);
    });

    it('a failed or canceled prediction releases its whole hold', async () => {
      const user = await userWithCredits(env, 100);
      for (const status of ['failed', 'canceled']) {
        const prediction = await startPrediction(env, user);
        fake.update(prediction.replicateId, {
          status,
          error: status === 'failed' ? 'CUDA out of memory' : null,
          metrics: { predict_time: 30 },
        });
        const ack = await FakeReplicate.deliver(
          webhookUrlOf(fake, prediction.replicateId),
          fake.webhookFor(prediction.replicateId),
        );
        assert.deepEqual(ack.body, { received: true, predictionId: prediction.replicateId, status, charged: true });
        const read = await env.dashboard(user, 'GET', `/api/v1/predictions/${prediction.id}`);
        assert.equal(read.body.cost, 0);
        assert.equal(read.body.status, status);
      }
      assert.deepEqual(await walletMicros(env, user), { balance: 100_000_000, reserved: 0, available: 100_000_000 });
      await assertLedgerVerifies(env);
    });

    it('100 concurrent copies of each of the three webhooks of one prediction charge exactly once', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      const url = webhookUrlOf(fake, prediction.replicateId);
      const start = fake.webhookFor(prediction.replicateId);
      const output =
        fake.update(prediction.replicateId, { status: 'processing' }) && fake.webhookFor(prediction.replicateId);
      fake.update(prediction.replicateId, {
        status: 'succeeded',
        output: ['https://replicate.delivery/a.png', 'https://replicate.delivery/b.png'],
        metrics: { predict_time: 1.5 },
      });
      const completed = fake.webhookFor(prediction.replicateId);

      const copies = [start, output, completed].flatMap((delivery) => Array.from({ length: 100 }, () => delivery));
      const answers = await Promise.all(copies.map((delivery) => FakeReplicate.deliver(url, delivery)));
      assert.ok(
        answers.every((a) => a.status === 200),
        JSON.stringify(answers.find((a) => a.status !== 200)),
      );
      assert.equal(answers.filter((a) => a.body.duplicate).length, 297);
      assert.deepEqual(
        answers
          .filter((a) => !a.body.duplicate)
          .map((a) => a.body.status)
          .sort(),
        ['processing', 'starting', 'succeeded'],
      );
      assert.equal(answers.filter((a) => a.body.charged === true).length, 1);
      assert.deepEqual(await walletMicros(env, user), {
        balance: 100_000_000 - IMAGE_COST,
        reserved: 0,
        available: 100_000_000 - IMAGE_COST,
      });
      assert.equal((await usageOf(env, prediction.id)).length, 1);
      await assertLedgerVerifies(env);
    });

    it('a lost final webhook is recovered by reconciliation; arriving late it is acknowledged with charged: false', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      const url = webhookUrlOf(fake, prediction.replicateId);
      await FakeReplicate.deliver(url, fake.webhookFor(prediction.replicateId));
      fake.update(prediction.replicateId, {
        status: 'succeeded',
        output: ['https://replicate.delivery/a.png', 'https://replicate.delivery/b.png'],
        metrics: { predict_time: 1.5 },
      });
      const lost = fake.webhookFor(prediction.replicateId);

      const tooEarly = await env.admin('POST', '/api/admin/cron/reconcile-predictions');
      assert.equal(tooEarly.status, 200);
      assert.equal((await walletMicros(env, user)).reserved, IMAGE_HOLD, 'a young prediction is left to its webhook');

      env.manualClock.advance(RECONCILE_AFTER_MS + 1);
      const run = await env.admin('POST', '/api/admin/cron/reconcile-predictions');
      assert.equal(run.status, 200);
      assert.ok(run.body.result.finalized >= 1, JSON.stringify(run.body));
      assert.deepEqual(await walletMicros(env, user), {
        balance: 100_000_000 - IMAGE_COST,
        reserved: 0,
        available: 100_000_000 - IMAGE_COST,
      });

      const late = await FakeReplicate.deliver(url, fake.sign(lost.body));
      assert.equal(late.status, 200);
      assert.deepEqual(late.body, {
        received: true,
        predictionId: prediction.replicateId,
        status: 'succeeded',
        charged: false,
      });
      const again = await env.admin('POST', '/api/admin/cron/reconcile-predictions');
      assert.equal(again.status, 200);
      assert.equal((await walletMicros(env, user)).balance, 100_000_000 - IMAGE_COST);
      assert.equal((await usageOf(env, prediction.id)).length, 1);
      await assertLedgerVerifies(env);
    });

    it('a claim whose settlement was cut short (a crash after commit) is settled by reconciliation, once', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      // What a process that died right after committing its claim leaves behind: finalized, never settled.
      await env.db
        .updateTable('predictions')
        .set({ status: 'succeeded', charge: IMAGE_COST, finalized_at: env.clock.now(), output: '["a","b"]' })
        .where('id', '=', prediction.id)
        .execute();
      env.manualClock.advance(RESETTLE_AFTER_MS + 1);
      for (let run = 0; run < 2; run++)
        assert.equal((await env.admin('POST', '/api/admin/cron/reconcile-predictions')).status, 200);
      assert.deepEqual(await walletMicros(env, user), {
        balance: 100_000_000 - IMAGE_COST,
        reserved: 0,
        available: 100_000_000 - IMAGE_COST,
      });
      assert.equal((await usageOf(env, prediction.id)).length, 1);
      await assertLedgerVerifies(env);
    });

    it('reading a prediction Replicate finished refreshes and finalizes it; the webhook after it charges nothing', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      const running = await env.dashboard(user, 'GET', `/api/v1/predictions/${prediction.id}`);
      assert.equal(running.body.status, 'starting');
      fake.update(prediction.replicateId, { status: 'succeeded', output: ['x', 'y'], metrics: { predict_time: 1.5 } });
      const done = await env.dashboard(user, 'GET', `/api/v1/predictions/${prediction.id}`);
      assert.equal(done.body.status, 'succeeded');
      assert.equal(done.body.cost, IMAGE_COST / 1_000_000);
      const webhook = await FakeReplicate.deliver(
        webhookUrlOf(fake, prediction.replicateId),
        fake.webhookFor(prediction.replicateId),
      );
      assert.equal(webhook.body.charged, false);
      assert.equal((await walletMicros(env, user)).balance, 100_000_000 - IMAGE_COST);
      await assertLedgerVerifies(env);
    });

    it('an upstream failure releases the hold: 502 UPSTREAM_ERROR, or 400 when Replicate refuses the input', async () => {
      const user = await userWithCredits(env, 100);
      fake.failNextCreate = { status: 500, body: { detail: 'Internal server error' } };
      const failed = await env.dashboard(user, 'POST', '/api/v1/predictions', {
        model: IMAGE_MODEL.id,
        input: { prompt: 'x' },
      });
      assert.equal(failed.status, 502);
      assert.equal(failed.body.error.code, 'UPSTREAM_ERROR');
      fake.failNextCreate = {
        status: 422,
        body: { title: 'Input validation failed', detail: 'prompt: too long', status: 422 },
      };
      const refused = await env.dashboard(user, 'POST', '/api/v1/predictions', {
        model: IMAGE_MODEL.id,
        input: { prompt: 'x' },
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error.code, 'INVALID_REQUEST');
      assert.match(refused.body.error.message, /prompt: too long/);
      assert.deepEqual(await walletMicros(env, user), { balance: 100_000_000, reserved: 0, available: 100_000_000 });
      const rows = await env.db.selectFrom('predictions').select('id').where('user_id', '=', user.userId).execute();
      assert.equal(rows.length, 0);
      await assertLedgerVerifies(env);
    });

    it('refuses before holding or calling Replicate: unknown model 404, not a Replicate model 400, bad num_outputs 400, no credits 402', async () => {
      const user = await userWithCredits(env, 1);
      const before = fake.requests.length;
      const unknown = await env.dashboard(user, 'POST', '/api/v1/predictions', { model: 'nobody/nothing', input: {} });
      assert.deepEqual([unknown.status, unknown.body.error.code], [404, 'MODEL_NOT_FOUND']);
      await env.db
        .insertInto('models')
        .values({
          id: 'openai/chat-test',
          provider: 'openai',
          upstream_model: 'gpt-x',
          name: 'chat',
          price_prompt: 1,
          price_completion: 1,
          price_request: 0,
          price_second: 0,
          price_image: 0,
          context_length: null,
          max_output_tokens: null,
          max_predict_seconds: null,
          input_modalities: '["text"]',
          output_modalities: '["text"]',
          fallbacks: '[]',
          is_test: 1,
          enabled: 1,
          updated_at: env.clock.now(),
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      const notReplicate = await env.dashboard(user, 'POST', '/api/v1/predictions', {
        model: 'openai/chat-test',
        input: {},
      });
      assert.deepEqual([notReplicate.status, notReplicate.body.error.code], [400, 'INVALID_REQUEST']);
      const badOutputs = await env.dashboard(user, 'POST', '/api/v1/predictions', {
        model: IMAGE_MODEL.id,
        input: { num_outputs: 0 },
      });
      assert.deepEqual([badOutputs.status, badOutputs.body.error.code], [400, 'INVALID_REQUEST']);
      const noModel = await env.dashboard(user, 'POST', '/api/v1/predictions', { input: {} });
      assert.deepEqual([noModel.status, noModel.body.error.code], [400, 'INVALID_REQUEST']);
      const poor = await env.dashboard(user, 'POST', '/api/v1/predictions', {
        model: IMAGE_MODEL.id,
        input: { prompt: 'x' },
      });
      assert.equal(poor.status, 402);
      assert.equal(poor.body.error.code, 'INSUFFICIENT_CREDITS');
      assert.equal(
        poor.body.error.required,
        (10_000 + 333_333 * 60 + 30_000) / 1_000_000,
        'the worst case of one image',
      );
      assert.equal(fake.requests.length, before, 'Replicate was not called');
    });

    it("a prediction is visible only to its owner: another user's is a 404", async () => {
      const owner = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, owner);
      const stranger = await env.createUser();
      const response = await env.dashboard(stranger, 'GET', `/api/v1/predictions/${prediction.id}`);
      assert.equal(response.status, 404);
      assert.equal(response.body.error.code, 'NOT_FOUND');
      assert.equal((await env.dashboard(owner, 'GET', `/api/v1/predictions/${prediction.id}`)).status, 200);
      assert.equal((await env.request('GET', `/api/v1/predictions/${prediction.id}`)).status, 401);
    });

    it("needs the permission of the model's output: ai:images for images, ai:audio for audio", async () => {
      const user = await userWithCredits(env, 100);
      const key = async (permissions: string[]) => {
        const created = await env.dashboard(user, 'POST', '/api/user/api-keys', {
          name: permissions.join('+'),
          permissions,
        });
        assert.equal(created.status, 200, created.text);
        return created.body.apiKey.key as string;
      };
      const audioKey = await key(['ai:audio']);
      const imagesKey = await key(['ai:images']);
      const chatKey = await key(['ai:chat']);
      const image = { model: IMAGE_MODEL.id, input: { prompt: 'x' } };
      const audio = { model: AUDIO_MODEL.id, input: { text: 'x' } };
      const asKey = (token: string, body: unknown) => env.request('POST', '/api/v1/predictions', { token, body });
      const denied = await asKey(audioKey, image);
      assert.deepEqual([denied.status, denied.body.error.code], [403, 'PERMISSION_DENIED']);
      assert.equal((await asKey(imagesKey, audio)).status, 403);
      assert.equal((await asKey(chatKey, image)).status, 403);
      assert.equal((await asKey(audioKey, audio)).status, 201);
      const made = await asKey(imagesKey, image);
      assert.equal(made.status, 201);
      // A key sees the predictions of its user made outside any app; the owner's dashboard sees them too.
      assert.equal((await env.request('GET', `/api/v1/predictions/${made.body.id}`, { token: audioKey })).status, 200);
    });

    it("while Replicate answers the create, the hold lives a synchronous call's HOLD_TTL_SECONDS (a process dying then frees it soon); once stored, PREDICTION_HOLD_TTL_SECONDS", async () => {
      const user = await userWithCredits(env, 100);
      const { HOLD_TTL_SECONDS, PREDICTION_HOLD_TTL_SECONDS } = env.service.ctx.config;
      const holdOf = () =>
        env.db
          .selectFrom('holds')
          .select(['id', 'status', 'expires_at', 'created_at'])
          .where('user_id', '=', user.userId)
          .execute();
      let answer!: () => void;
      fake.createGate = new Promise<void>((resolve) => (answer = resolve));
      const asked = fake.requests.length;
      const created = env.dashboard(user, 'POST', '/api/v1/predictions', {
        model: IMAGE_MODEL.id,
        input: { prompt: 'a lighthouse', num_outputs: 2 },
      });
      while (fake.requests.length === asked) await new Promise((resolve) => setTimeout(resolve, 5));
      const [pending] = await holdOf();
      assert.equal(Number(pending!.expires_at) - Number(pending!.created_at), HOLD_TTL_SECONDS * 1000);
      assert.equal((await walletMicros(env, user)).reserved, IMAGE_HOLD);
      // The process that placed it "dies" here: nobody extends it, and the sweep frees it after HOLD_TTL_SECONDS.
      await env.manualClock.advance(HOLD_TTL_SECONDS * 1000 + 1);
      await env.service.ctx.billing.releaseExpiredHolds();
      assert.equal((await holdOf())[0]!.status, 'expired');
      assert.equal((await walletMicros(env, user)).reserved, 0);
      fake.createGate = null;
      answer();
      assert.equal((await created).status, 201);

      // A create answered in time: the stored prediction's hold lasts the prediction's lifetime.
      const second = await startPrediction(env, user);
      const [hold] = await env.db
        .selectFrom('holds')
        .innerJoin('predictions', 'predictions.hold_id', 'holds.id')
        .select(['holds.status', 'holds.expires_at'])
        .where('predictions.id', '=', second.id)
        .execute();
      assert.equal(hold!.status, 'open');
      assert.equal(Number(hold!.expires_at), env.clock.now() + PREDICTION_HOLD_TTL_SECONDS * 1000);
    });

    it('a prediction that outlives its hold is still charged when it completes, from the available credits, and its usage record says charged_after_expiry', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      await env.manualClock.advance(env.service.ctx.config.PREDICTION_HOLD_TTL_SECONDS * 1000 + 1);
      await env.service.ctx.billing.releaseExpiredHolds();
      const hold = await env.db
        .selectFrom('predictions')
        .innerJoin('holds', 'holds.id', 'predictions.hold_id')
        .select('holds.status')
        .where('predictions.id', '=', prediction.id)
        .executeTakeFirstOrThrow();
      assert.equal(hold.status, 'expired', 'the sweep expired the hold and freed its credits');
      assert.deepEqual(await walletMicros(env, user), { balance: 100_000_000, reserved: 0, available: 100_000_000 });

      fake.update(prediction.replicateId, {
        status: 'succeeded',
        output: ['https://replicate.delivery/a.png', 'https://replicate.delivery/b.png'],
        metrics: { predict_time: 1.5 },
      });
      const completed = await FakeReplicate.deliver(
        webhookUrlOf(fake, prediction.replicateId),
        fake.webhookFor(prediction.replicateId),
      );
      assert.equal(completed.body.charged, true);
      assert.deepEqual(await walletMicros(env, user), {
        balance: 100_000_000 - IMAGE_COST,
        reserved: 0,
        available: 100_000_000 - IMAGE_COST,
      });
      const usage = await usageOf(env, prediction.id);
      assert.deepEqual(
        usage.map((u) => [Number(u.cost), u.settlement, u.status]),
        [[IMAGE_COST, 'charged_after_expiry', 'ok']],
      );
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
