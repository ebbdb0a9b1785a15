import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { selectedDatabases, startServeProcess, TestEnv } from '../testing/harness.ts';
import { FakeReplicate } from './testing/replicate-server.ts';
import {
  addReplicateModels,
  assertLedgerVerifies,
  startPrediction,
  userWithCredits,
  walletMicros,
  webhookUrlOf,
} from './testing/scenario.ts';

const IMAGE_COST = 10_000 + 500_000 + 60_000;

// Two `tollgate serve` processes on one PostgreSQL schema: the idempotency guard must hold across processes,
// where no in-process lock can help. (SQLite is one process's file; its concurrency is covered in
// predictions.test.ts.)
if (selectedDatabases().includes('postgres')) {
  const fake = await new FakeReplicate().start();
  const replicateConfig = {
    REPLICATE_WEBHOOK_SECRET: fake.secret,
    REPLICATE_BASE_URL: fake.baseUrl,
    REPLICATE_API_TOKEN: fake.token,
  };

  describe('prediction webhooks across two processes [postgres]', () => {
    const env = new TestEnv('postgres', { config: replicateConfig });
    let second: Awaited<ReturnType<typeof startServeProcess>>;

    before(async () => {
      await env.start();
      second = await startServeProcess(env, replicateConfig);
      await addReplicateModels(env);
    });
    after(async () => {
      await second?.stop();
      await env.stop();
      await fake.stop();
    });

    it('100 concurrent copies of the final webhook, with the start and output webhooks, sent to both processes charge exactly once', async () => {
      const user = await userWithCredits(env, 100);
      const prediction = await startPrediction(env, user);
      const path = new URL(webhookUrlOf(fake, prediction.replicateId)).pathname;
      const start = fake.webhookFor(prediction.replicateId);
      fake.update(prediction.replicateId, { status: 'processing', output: ['https://replicate.delivery/a.png'] });
      const output = fake.webhookFor(prediction.replicateId);
      fake.update(prediction.replicateId, {
        status: 'succeeded',
        output: ['https://replicate.delivery/a.png', 'https://replicate.delivery/b.png'],
        metrics: { predict_time: 1.5 },
      });
      const completed = fake.webhookFor(prediction.replicateId);

      const copies = [
        ...Array.from({ length: 100 }, () => completed),
        ...Array.from({ length: 10 }, () => start),
        ...Array.from({ length: 10 }, () => output),
      ];
      const answers = await Promise.all(
        copies.map((delivery, i) => FakeReplicate.deliver(`${i % 2 ? second.baseUrl : env.baseUrl}${path}`, delivery)),
      );
      assert.ok(
        answers.every((a) => a.status === 200),
        JSON.stringify(answers.find((a) => a.status !== 200)),
      );
      const firsts = answers.filter((a) => !a.body.duplicate);
      assert.deepEqual(firsts.map((a) => a.body.status).sort(), ['processing', 'starting', 'succeeded']);
      assert.equal(answers.filter((a) => a.body.charged === true).length, 1);
      assert.equal(answers.filter((a) => a.body.duplicate === true).length, copies.length - 3);

      for (const baseUrl of [env.baseUrl, second.baseUrl]) {
        assert.deepEqual(await walletMicros(env, user, baseUrl), {
          balance: 100_000_000 - IMAGE_COST,
          reserved: 0,
          available: 100_000_000 - IMAGE_COST,
        });
      }
      const deliveries = await env.db
        .selectFrom('webhook_deliveries')
        .select(['webhook_id', 'charged'])
        .where('prediction_id', '=', prediction.replicateId)
        .execute();
      assert.equal(deliveries.length, 3);
      assert.equal(deliveries.filter((d) => d.charged === 1).length, 1);
      await assertLedgerVerifies(env);
    });
  });
}
