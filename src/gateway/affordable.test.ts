import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, keyWithDailyLimit, putModel, readSseFrames, settled, wallet, type FundedUser } from './testing.ts';
import { affordableCeiling } from './affordable.ts';
import { chatWorstCase, type ChatPlan } from './chat-plan.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import { WebhookReceiver } from '../events/testing/receiver.ts';

const mock = await startMockUpstream();
after(() => mock.close());
const receiver = new WebhookReceiver();
before(() => receiver.start());
after(() => receiver.stop());

const chat = (env: TestEnv, user: FundedUser, body: Record<string, unknown>) =>
  env.request('POST', '/api/v1/chat/completions', { token: user.key, body });
const hi = [{ role: 'user', content: 'hi' }];

describeEachDatabase(
  'affordable outputs: a chat without max_tokens is sent the cap the payer can afford',
  (env) => {
    before(async () => {
      // 1,000 micro-credits per completion token and free prompts: a cap of c tokens holds exactly c × 0.001 credits.
      await putModel(env, 'acme/dear', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { completion: 1000 },
        maxOutputTokens: 4000,
      });
    });

    it("a wallet that cannot cover the model's full output cap gets the cap it can afford sent upstream, instead of a 402", async () => {
      const user = await fundedUser(env, 1);
      const response = await chat(env, user, { model: 'acme/dear', messages: hi });
      assert.equal(response.status, 200, response.text);
      // 1 credit affords 1,000 of the model's 4,000 output tokens.
      assert.equal(mock.requests.at(-1)!.body.max_tokens, 1000);
      // Charged the 4 completion tokens produced.
      assert.equal((await wallet(env, user)).balance, 1_000_000 - 4000);
    });

    it('a streamed chat is lowered the same way', async () => {
      const user = await fundedUser(env, 0.5);
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'acme/dear', stream: true, messages: hi }),
      });
      assert.equal(response.status, 200);
      assert.equal((await readSseFrames(response)).at(-1)!.data, '[DONE]');
      assert.equal(mock.requests.at(-1)!.body.max_tokens, 500);
      assert.equal((await settled(env, user)).balance, 500_000 - 4000);
    });

    it("an explicit max_tokens is never lowered: it is refused with the contract's 402", async () => {
      const user = await fundedUser(env, 1);
      const sent = mock.requests.length;
      const response = await chat(env, user, { model: 'acme/dear', messages: hi, max_tokens: 4000 });
      assert.equal(response.status, 402);
      assert.deepEqual(response.body.error, {
        code: 'INSUFFICIENT_CREDITS',
        type: 'insufficient_credits_error',
        available: 1,
        required: 4,
        message: 'Insufficient credits: this request needs up to 4 credits and 1 are available.',
      });
      assert.equal(mock.requests.length, sent);
    });

    it("a payer who cannot afford MIN_AFFORDABLE_OUTPUT_TOKENS is refused with the contract's 402 for the full worst case", async () => {
      const user = await fundedUser(env, 0.2);
      const response = await chat(env, user, { model: 'acme/dear', messages: hi });
      assert.equal(response.status, 402);
      assert.equal(response.body.error.code, 'INSUFFICIENT_CREDITS');
      assert.equal(response.body.error.required, 4);
      assert.equal(response.body.error.available, 0.2);
      assert.equal((await wallet(env, user)).balance, 200_000);
    });

    it("a spending limit that cannot cover the full cap lowers it too, instead of a 429; below the floor it is the contract's 429", async () => {
      const user = await fundedUser(env, 10);
      const key = await keyWithDailyLimit(env, user, 0.6);
      const first = await env.request('POST', '/api/v1/chat/completions', {
        token: key,
        body: { model: 'acme/dear', messages: hi },
      });
      assert.equal(first.status, 200, first.text);
      assert.equal(mock.requests.at(-1)!.body.max_tokens, 600);
      // 0.004 spent: 0.596 left affords 596 tokens.
      const second = await env.request('POST', '/api/v1/chat/completions', {
        token: key,
        body: { model: 'acme/dear', messages: hi },
      });
      assert.equal(second.status, 200, second.text);
      assert.equal(mock.requests.at(-1)!.body.max_tokens, 596);
      const explicit = await env.request('POST', '/api/v1/chat/completions', {
        token: key,
        body: { model: 'acme/dear', messages: hi, max_tokens: 1000 },
      });
      assert.equal(explicit.status, 429);
      assert.equal(explicit.body.error.code, 'SPENDING_LIMIT_EXCEEDED');
      assert.equal(explicit.body.error.limitType, 'daily');
      assert.equal(explicit.body.error.requested, 1);
    });

    it('limit.reached is sent for the refusal that answers a call, never for a call that a lowered cap then serves', async () => {
      const served = await fundedUser(env, 1);
      const refused = await fundedUser(env, 0.2);
      for (const user of [served, refused]) {
        const created = await env.dashboard(user.session, 'POST', '/api/user/webhooks', {
          url: receiver.url,
          eventTypes: ['limit.reached'],
        });
        assert.equal(created.status, 201, created.text);
        receiver.secrets.push(created.body.secret);
      }
      assert.equal((await chat(env, served, { model: 'acme/dear', messages: hi })).status, 200);
      assert.equal((await chat(env, refused, { model: 'acme/dear', messages: hi })).status, 402);
      await env.service.ctx.events.idle();
      const reached = (user: FundedUser) =>
        receiver.bodies().filter((body) => body.type === 'limit.reached' && body.data.userId === user.session.userId);
      assert.equal(reached(served).length, 0);
      assert.equal(reached(refused).length, 1);
      assert.deepEqual([reached(refused)[0].data.status, reached(refused)[0].data.required], [402, 4]);
    });
  },
  {
    config: {
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }],
      WEBHOOK_ALLOW_HTTP: true,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true,
      WEBHOOK_DELIVERY_INTERVAL_SECONDS: 0,
    },
  },
);

describe('the affordable output cap', () => {
  const model = (
    id: string,
    prompt: number,
    completion: number,
    request: number,
    maxOutputTokens: number | null,
    imageTokens: number | null = null,
  ): CatalogueModel => ({
    id,
    provider: 'openai',
    upstreamModel: id,
    name: id,
    pricing: { prompt, completion, request, second: 0, image: 0 },
    contextLength: null,
    maxOutputTokens,
    maxPredictSeconds: null,
    imageTokens,
    imagePrices: {},
    inputModalities: ['text'],
    outputModalities: ['text'],
    fallbacks: [],
    answerTimeoutMs: null,
    reasons: false,
    reasonsByOperator: false,
    isTest: false,
    enabled: true,
    updatedAt: 0,
  });

  it('is the largest cap whose worst case over every candidate fits what is spendable, never below the floor', () => {
    let seed = 42;
    const random = (below: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % below);
    for (let run = 0; run < 500; run++) {
      const candidates = Array.from({ length: 1 + random(3) }, (_, i) =>
        model(
          `m${i}`,
          random(5_000_000),
          1 + random(20_000_000),
          random(10_000),
          random(4) === 0 ? null : 1 + random(20_000),
          random(2) ? 1_445 : null,
        ),
      );
      const plan: ChatPlan = {
        candidates,
        promptTokens: random(5_000),
        images: candidates.every((m) => m.imageTokens !== null) ? random(4) : 0,
        predictionTokens: random(3) ? 0 : random(500),
        ceiling: null,
      };
      const request = { model: 'x', messages: [], n: 1 + random(3) };
      const spendable = random(200_000_000);
      const floor = 1 + random(600);
      const ceiling = affordableCeiling(request, plan, spendable, floor);
      const worst = (cap: number) => chatWorstCase(request, { ...plan, ceiling: cap });
      if (ceiling === null) {
        const full = chatWorstCase(request, plan);
        assert.ok(worst(floor) > spendable || worst(floor) === full, `run ${run}: refused although the floor fits`);
        continue;
      }
      assert.ok(ceiling >= floor, `run ${run}: below the floor`);
      assert.ok(worst(ceiling) <= spendable, `run ${run}: the cap does not fit`);
      assert.ok(
        worst(ceiling + 1) > spendable || worst(ceiling + 1) === worst(ceiling),
        `run ${run}: a larger cap fits`,
      );
    }
  });
});
