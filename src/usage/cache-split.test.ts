import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describeEachDatabase } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, settled, usageOf } from '../gateway/testing.ts';

/**
 * A prompt that is mostly cached tokens is cheap: the usage report must say why. Calls made with the official
 * SDKs against a mock upstream that reports 100,000 prompt tokens of which 95,000 were cache reads (and, on
 * Anthropic, writes): `GET /api/usage` shows the reads and writes among the prompt tokens, as the usage record
 * priced them.
 */

const mock = await startMockUpstream();
after(() => mock.close());

/** Credits per 1M tokens: cache reads at a tenth of the prompt price, 5-minute writes at 1.25×. The calls ask for 4,000 output tokens, so that the hold is above what the mock reports. */
const PRICING = { prompt: 300, cacheRead: 30, cacheWrite: 375, completion: 1500 };

describeEachDatabase(
  'Usage report of cached prompts',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/gpt-cached', { provider: 'openai', upstreamModel: 'gpt-x', pricing: PRICING });
      await putModel(env, 'acme/claude-cached', { provider: 'anthropic', upstreamModel: 'claude-x', pricing: PRICING });
    });

    it('GET /api/usage shows the cache reads and writes among the prompt tokens, by model and in total', async () => {
      const user = await fundedUser(env, 100, ['ai:chat', 'billing:read']);
      const openai = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const chat = await openai.chat.completions.create({
        model: 'acme/gpt-cached',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 4000,
        metadata: {
          mock_usage: {
            prompt_tokens: 100_000,
            completion_tokens: 1_000,
            total_tokens: 101_000,
            prompt_tokens_details: { cached_tokens: 95_000 },
          },
        } as any,
      });
      assert.equal(chat.usage?.prompt_tokens_details?.cached_tokens, 95_000);
      // 5,000 × 300 + 95,000 × 30 + 1,000 × 1,500 micro-credits.
      assert.equal((chat.usage as any).cost, 5.85);
      const anthropic = new Anthropic({
        apiKey: user.key,
        authToken: null,
        baseURL: `${env.baseUrl}/api`,
        maxRetries: 0,
      });
      const message = await anthropic.messages.create({
        model: 'acme/claude-cached',
        max_tokens: 4000,
        messages: [{ role: 'user', content: 'hi' }],
        metadata: {
          mock_usage: {
            input_tokens: 3_000,
            cache_read_input_tokens: 95_000,
            cache_creation_input_tokens: 2_000,
            output_tokens: 1_000,
          },
        } as any,
      });
      // 3,000 × 300 + 95,000 × 30 + 2,000 × 375 + 1,000 × 1,500 micro-credits.
      assert.equal((message.usage as any).cost, 6);
      await settled(env, user);
      await usageOf(env, user, 2);

      const response = await env.request('GET', '/api/usage', { token: user.key });
      assert.equal(response.status, 200, response.text);
      const report = response.body;
      assert.deepEqual(report.totals, {
        requests: 2,
        promptTokens: 200_000,
        completionTokens: 2_000,
        cacheReadTokens: 190_000,
        cacheWriteTokens: 2_000,
        cost: 11.85,
      });
      const byModel = Object.fromEntries(report.byModel.map((row: any) => [row.model, row]));
      assert.equal(byModel['acme/gpt-cached'].cacheReadTokens, 95_000);
      assert.equal(byModel['acme/gpt-cached'].cacheWriteTokens, 0);
      assert.equal(byModel['acme/claude-cached'].cacheReadTokens, 95_000);
      assert.equal(byModel['acme/claude-cached'].cacheWriteTokens, 2_000);
      assert.equal(report.byKey[0].cacheReadTokens, 190_000);
      assert.equal(report.byApp[0].cacheWriteTokens, 2_000);
      const operator = await env.admin('GET', `/api/admin/usage?userId=${user.session.userId}`);
      assert.deepEqual(operator.body.totals, report.totals);
    });
  },
  {
    config: {
      OPENAI_BASE_URL: `${mock.url}/v1`,
      OPENAI_API_KEY: 'sk-test',
      ANTHROPIC_BASE_URL: mock.url,
      ANTHROPIC_API_KEY: 'sk-ant',
    },
  },
);
