import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, streamText } from 'ai';
import { describeEachDatabase } from '../../testing/harness.ts';
import { startMockUpstream } from '../../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, settled, wallet } from '../../gateway/testing.ts';

const mock = await startMockUpstream();
after(() => mock.close());

const PRICING = { prompt: 10, completion: 20, cacheRead: 1, cacheWrite: 13 };
const REPLY = 'alpha beta gamma delta';
/** Both mocks report 11 input and 4 output tokens: 11 × 10 + 4 × 20 micro-credits. */
const CHARGE = 11 * 10 + 4 * 20;

describeEachDatabase(
  'the Vercel AI SDK (@ai-sdk/anthropic) against Tollgate',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/claude', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/gpt', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
    });

    for (const model of ['acme/claude', 'acme/gpt']) {
      it(`generateText and streamText on ${model}: the text, the usage, each call charged what the upstream reported`, async () => {
        const user = await fundedUser(env, 10);
        const start = (await wallet(env, user)).balance;
        const anthropic = createAnthropic({ baseURL: `${env.baseUrl}/api/v1`, apiKey: user.key });

        const generated = await generateText({
          model: anthropic(model),
          prompt: 'hi',
          maxOutputTokens: 100,
          maxRetries: 0,
        });
        assert.equal(generated.text, REPLY);
        assert.equal(generated.finishReason, 'stop');
        assert.equal(generated.usage.outputTokens, 4);
        assert.equal(generated.usage.inputTokens, 11);

        const streamed = streamText({
          model: anthropic(model),
          system: 'Be brief.',
          prompt: 'hi',
          maxOutputTokens: 100,
          maxRetries: 0,
        });
        let text = '';
        for await (const delta of streamed.textStream) text += delta;
        assert.equal(text, REPLY);
        assert.equal((await streamed.usage).outputTokens, 4);
        assert.equal(await streamed.finishReason, 'stop');
        assert.equal(start - (await settled(env, user)).balance, 2 * CHARGE);
      });
    }

    it('a refusal reaches the AI SDK as an API call error with the status', async () => {
      const poor = await fundedUser(env, 0.001);
      const anthropic = createAnthropic({ baseURL: `${env.baseUrl}/api/v1`, apiKey: poor.key });
      const error = await generateText({
        model: anthropic('acme/claude'),
        prompt: 'hi',
        maxOutputTokens: 1000,
        maxRetries: 0,
      }).catch((e) => e);
      assert.equal(error?.statusCode, 402, String(error));
      assert.equal(JSON.parse(error.responseBody).error.code, 'INSUFFICIENT_CREDITS');
    });

    it('after all of it the ledger verifies', async () => {
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.body.ok, true, report.text);
    });
  },
  { config: { ANTHROPIC_BASE_URL: mock.url, providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
