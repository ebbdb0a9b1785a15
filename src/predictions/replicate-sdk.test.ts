import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import Replicate from 'replicate';
import { describeEachDatabase } from '../testing/harness.ts';
import { fundedUser, usageOf, wallet } from '../gateway/testing.ts';
import { FakeReplicate } from './testing/replicate-server.ts';
import {
  addReplicateModels,
  assertLedgerVerifies,
  AUDIO_MODEL,
  IMAGE_MODEL,
  webhookUrlOf,
} from './testing/scenario.ts';

/**
 * The official `replicate` npm client pointed at Tollgate (`baseUrl: <tollgate>/api/v1`, an API key as its token),
 * as a developer would use it: `predictions.create({ model })` and `run("<vendor>/<model>")` call Replicate's
 * per-model path, `/models/{owner}/{name}/predictions`; `predictions.get` and `wait` poll the prediction.
 */

const fake = await new FakeReplicate().start();
after(() => fake.stop());

/** A success in 1.5 s with two images: 0.01 + ceil(0.333333 × 1.5) + 2 × 0.03, in micro-credits. */
const COST = 10_000 + 500_000 + 60_000;
const SUCCEEDED = {
  status: 'succeeded',
  output: ['https://replicate.delivery/a.png', 'https://replicate.delivery/b.png'],
  metrics: { predict_time: 1.5 },
};

describeEachDatabase(
  'the replicate npm client against Tollgate',
  (env) => {
    before(() => addReplicateModels(env));

    const client = (key: string, fetchHook?: (url: string, init: RequestInit | undefined) => void) =>
      new Replicate({
        auth: key,
        baseUrl: `${env.baseUrl}/api/v1`,
        useFileOutput: false,
        fetch: async (url: any, init?: RequestInit) => {
          const response = await fetch(url, init);
          fetchHook?.(String(url), init);
          return response;
        },
      });

    /** A funded user's client and its prediction of two lighthouses through `predictions.create({ model })`. */
    const lighthouse = async () => {
      const user = await fundedUser(env, 100);
      const start = (await wallet(env, user)).balance;
      const replicate = client(user.key);
      const prediction = (await replicate.predictions.create({
        model: IMAGE_MODEL.id,
        input: { prompt: 'a lighthouse', num_outputs: 2 },
      })) as any;
      return { user, start, replicate, prediction };
    };

    it('predictions.create({ model }) goes through the per-model path; get, wait and the signed webhooks finalize it, charged once', async () => {
      const { user, start, replicate, prediction } = await lighthouse();
      assert.match(prediction.id, /^pred_/);
      assert.equal(prediction.status, 'starting');
      assert.equal(fake.requests.at(-1)!.path, '/v1/models/black-forest-labs/flux-schnell/predictions');
      assert.deepEqual(fake.requests.at(-1)!.body.input, { prompt: 'a lighthouse', num_outputs: 2 });
      assert.equal((await replicate.predictions.get(prediction.id)).status, 'starting');

      // Replicate's deliveries: start, then the completion, each retried with its own id.
      const url = webhookUrlOf(fake, prediction.replicate_id);
      const started = fake.webhookFor(prediction.replicate_id);
      fake.update(prediction.replicate_id, SUCCEEDED);
      const completed = fake.webhookFor(prediction.replicate_id);
      assert.equal((await FakeReplicate.deliver(url, started)).body.charged, false);
      assert.deepEqual((await FakeReplicate.deliver(url, completed)).body, {
        received: true,
        predictionId: prediction.replicate_id,
        status: 'succeeded',
        charged: true,
      });
      assert.equal((await FakeReplicate.deliver(url, completed)).body.duplicate, true);

      const done = (await replicate.wait(prediction, { interval: 10 })) as any;
      assert.equal(done.status, 'succeeded');
      assert.deepEqual(done.output, SUCCEEDED.output);
      assert.equal(done.cost, COST / 1e6);
      assert.equal(start - (await wallet(env, user)).balance, COST);
    });

    it('run("<vendor>/<model>") starts the prediction, polls it until Replicate says it succeeded, and returns its output', async () => {
      const user = await fundedUser(env, 100);
      const start = (await wallet(env, user)).balance;
      // Replicate finishes the prediction as soon as it was created.
      const replicate = client(user.key, (url, init) => {
        if (init?.method === 'POST' && url.endsWith('/predictions')) {
          fake.update([...fake.predictions.keys()].at(-1)!, SUCCEEDED);
        }
      });
      const output = await replicate.run(IMAGE_MODEL.id as `${string}/${string}`, {
        input: { prompt: 'a lighthouse', num_outputs: 2 },
        wait: { mode: 'poll', interval: 10 },
      });
      assert.deepEqual(output, SUCCEEDED.output);
      assert.equal(start - (await wallet(env, user)).balance, COST);
      await assertLedgerVerifies(env);
    });

    it('run() with its default wait polls a prediction Replicate created already processing, and returns its output, not null', async () => {
      const user = await fundedUser(env, 100);
      const start = (await wallet(env, user)).balance;
      // A warm model: Replicate's create answers `processing`; it has succeeded by the first read.
      fake.createNextAs = { status: 'processing', started_at: new Date(env.clock.now()).toISOString() };
      let created: any = null;
      const replicate = client(user.key, (url, init) => {
        if (init?.method === 'POST' && url.endsWith('/predictions'))
          fake.update([...fake.predictions.keys()].at(-1)!, SUCCEEDED);
      });
      const output = await replicate.run(
        IMAGE_MODEL.id as `${string}/${string}`,
        {
          input: { prompt: 'a lighthouse', num_outputs: 2 },
        },
        (prediction) => (created ??= prediction),
      );
      assert.deepEqual(output, SUCCEEDED.output);
      assert.equal(created.status, 'starting', 'Tollgate did not wait: its create answer is not final');
      assert.equal(start - (await wallet(env, user)).balance, COST);
      await assertLedgerVerifies(env);
    });

    it("a prediction Replicate aborted (its deadline passed before it started) is shown canceled: the client's run() stops on it, and it costs nothing", async () => {
      const user = await fundedUser(env, 100);
      const start = (await wallet(env, user)).balance;
      const replicate = client(user.key, (url, init) => {
        if (init?.method === 'POST' && url.endsWith('/predictions'))
          fake.update([...fake.predictions.keys()].at(-1)!, { status: 'aborted' });
      });
      let last: any = null;
      // The client's wait() knows only succeeded, failed and canceled as final: it polled `aborted` forever.
      const gaveUp = new Promise((resolve) => setTimeout(resolve, 3_000, 'still polling after 3 s'));
      const outcome = await Promise.race([
        replicate.run(
          IMAGE_MODEL.id as `${string}/${string}`,
          { input: { prompt: 'a lighthouse' }, wait: { mode: 'poll', interval: 10 } },
          (prediction) => (last = prediction),
        ),
        gaveUp,
      ]);
      assert.equal(outcome, null, 'run() returned, with no output');
      assert.equal(last.status, 'canceled');
      assert.equal(last.cost, 0);
      assert.deepEqual(await wallet(env, user), { ...(await wallet(env, user)), balance: start, reserved: 0 });
    });

    it('predictions.cancel stops a running prediction, charged once for what it used (request + second × predict_time), its webhook after it charging nothing', async () => {
      const { user, start, replicate, prediction } = await lighthouse();
      fake.update(prediction.replicate_id, { status: 'processing', metrics: { predict_time: 0.6 } });

      const canceled = (await replicate.predictions.cancel(prediction.id)) as any;
      assert.equal(fake.requests.at(-1)!.path, `/v1/predictions/${prediction.replicate_id}/cancel`);
      assert.equal(canceled.status, 'canceled');
      // 0.01 + ceil(0.333333 × 0.6), no image produced.
      const used = 10_000 + 200_000;
      assert.equal(canceled.cost, used / 1e6);
      assert.deepEqual(await wallet(env, user), { ...(await wallet(env, user)), balance: start - used, reserved: 0 });

      // Replicate's own notice of the cancel comes after: it finds the prediction final and charges nothing.
      const url = webhookUrlOf(fake, prediction.replicate_id);
      assert.equal((await FakeReplicate.deliver(url, fake.webhookFor(prediction.replicate_id))).body.charged, false);
      assert.equal((await replicate.predictions.cancel(prediction.id)).status, 'canceled');
      assert.equal(start - (await wallet(env, user)).balance, used);
      const [record] = await usageOf(env, user);
      assert.equal(record.status, 'client_aborted');
      await assertLedgerVerifies(env);
    });

    it('a prediction Replicate cancels on its own costs nothing; canceling it then answers it as it is, without asking Replicate; another user cancels nothing (404)', async () => {
      const user = await fundedUser(env, 100);
      const start = (await wallet(env, user)).balance;
      const replicate = client(user.key);
      const prediction = (await replicate.predictions.create({ model: IMAGE_MODEL.id, input: {} })) as any;

      const other = await fundedUser(env, 100);
      await assert.rejects(client(other.key).predictions.cancel(prediction.id), /404/);

      fake.update(prediction.replicate_id, { status: 'canceled', metrics: { predict_time: 0.6 } });
      const url = webhookUrlOf(fake, prediction.replicate_id);
      assert.equal((await FakeReplicate.deliver(url, fake.webhookFor(prediction.replicate_id))).body.charged, true);
      assert.equal((await wallet(env, user)).balance, start);

      const asked = fake.requests.length;
      const answered = (await replicate.predictions.cancel(prediction.id)) as any;
      assert.equal(answered.status, 'canceled');
      assert.equal(answered.cost, 0);
      assert.equal(fake.requests.length, asked);
      assert.deepEqual(await wallet(env, user), { ...(await wallet(env, user)), balance: start, reserved: 0 });
    });

    it('run("owner/name:<version>") and create({ version }) send only the version: it names the catalogue model pinned to it', async () => {
      const user = await fundedUser(env, 100);
      const version = AUDIO_MODEL.upstreamModel.split(':')[1]!;
      const replicate = client(user.key, (url, init) => {
        if (init?.method === 'POST' && url.endsWith('/predictions'))
          fake.update([...fake.predictions.keys()].at(-1)!, { status: 'succeeded', output: 'https://x/a.wav' });
      });
      const output = await replicate.run(`speech/tts:${version}`, {
        input: { text: 'hello' },
        wait: { mode: 'poll', interval: 10 },
      });
      assert.equal(output, 'https://x/a.wav');
      const created = fake.requests.findLast((r) => r.method === 'POST')!;
      assert.equal(created.path, '/v1/predictions');
      assert.equal(created.body.version, version);
      const listed = (await replicate.predictions.create({ version, input: { text: 'again' } })) as any;
      assert.equal(listed.model, AUDIO_MODEL.id);
      // A version no catalogue model pins is not found, as an unknown model is.
      await assert.rejects(replicate.predictions.create({ version: 'ab'.repeat(32), input: {} }), /404/);
    });

    it('the per-model path refuses as the other one does: an unknown model is a 404, no input a 400', async () => {
      const user = await fundedUser(env, 100);
      const replicate = client(user.key);
      await assert.rejects(replicate.predictions.create({ model: 'nobody/nothing', input: {} }), /404/);
      const response = await fetch(`${env.baseUrl}/api/v1/models/${IMAGE_MODEL.id}/predictions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(response.status, 400);
      assert.equal(((await response.json()) as any).error.code, 'INVALID_REQUEST');
      assert.equal((await wallet(env, user)).reserved, 0);
    });

    it("a caller's own webhook is refused on both paths (400 UNSUPPORTED_PARAMETER naming it), never dropped: nothing held, Replicate not called", async () => {
      const user = await fundedUser(env, 100);
      const replicate = client(user.key);
      const asked = fake.requests.length;
      for (const create of [
        () => replicate.predictions.create({ model: IMAGE_MODEL.id, input: {}, webhook: 'https://me.example/hook' }),
        () =>
          replicate.predictions.create({
            version: IMAGE_MODEL.id,
            input: {},
            webhook: 'https://me.example/hook',
            webhook_events_filter: ['completed'],
          }),
      ]) {
        const refused: any = await create().then(
          () => assert.fail('a prediction with its own webhook was created'),
          (error) => error,
        );
        assert.equal(refused.response?.status, 400, String(refused));
        // The client puts the body in its message: the code, and the field named.
        const body = JSON.parse(String(refused.message).slice(String(refused.message).indexOf('{')).replace(/\.$/, ''));
        assert.equal(body.error.code, 'UNSUPPORTED_PARAMETER');
        assert.equal(body.error.param, 'webhook');
      }
      assert.equal(fake.requests.length, asked);
      assert.equal((await wallet(env, user)).reserved, 0);
    });
  },
  {
    config: {
      REPLICATE_WEBHOOK_SECRET: fake.secret,
      REPLICATE_BASE_URL: fake.baseUrl,
      REPLICATE_API_TOKEN: fake.token,
    },
  },
);
