import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import { startMockUpstream } from '../../providers/testing/mock-upstream.ts';
import { fundedUser, holdsOf, putModel, settled, usageOf, wallet } from '../../gateway/testing.ts';

/**
 * Anthropic's 1-hour prompt cache (`cache_control.ttl: "1h"`) through the official SDKs, against a local mock
 * upstream answering as Anthropic (and as OpenRouter) do: accepted where the catalogue prices it
 * (`pricing.cacheWrite1h`), each lifetime's writes charged at its own price, refused with a 400 where it is not.
 */

const mock = await startMockUpstream();
after(() => mock.close());

/** Credits per 1M tokens, i.e. micro-credits per token: Anthropic's ratios (5-minute write 1.25×, 1-hour 2× input). */
const PRICING = { prompt: 10, completion: 20, cacheRead: 1, cacheWrite: 12.5, cacheWrite1h: 20 };
/** Anthropic's report of a call that wrote 100 tokens for 5 minutes and 200 for 1 hour (cache_creation_input_tokens is their sum). */
const SPLIT_USAGE = {
  input_tokens: 11,
  cache_creation_input_tokens: 300,
  cache_read_input_tokens: 0,
  cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
  output_tokens: 4,
};
/** 11 × 10 + 100 × 12.5 + 200 × 20 + 4 × 20 micro-credits (the calls ask for 1000 output tokens: the hold is above it). */
const SPLIT_CHARGE = 110 + 1250 + 4000 + 80;
const ONE_HOUR = { type: 'ephemeral', ttl: '1h' } as const;

function sdk(env: TestEnv, apiKey: string): Anthropic {
  return new Anthropic({ apiKey, authToken: null, baseURL: `${env.baseUrl}/api`, maxRetries: 0 });
}

async function spent(env: TestEnv, user: Awaited<ReturnType<typeof fundedUser>>, start: number): Promise<number> {
  return start - (await settled(env, user)).balance;
}

/** The usage record of the user's last call: its captured cost and its details. */
async function lastRecord(env: TestEnv, user: Awaited<ReturnType<typeof fundedUser>>) {
  const [row] = await usageOf(env, user);
  return { cost: row!.cost, promptTokens: row!.prompt_tokens, details: JSON.parse(row!.details ?? 'null') };
}

describeEachDatabase(
  'Anthropic 1-hour prompt-cache writes, priced and billed',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/claude-1h', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/claude-5m', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: { ...PRICING, cacheWrite1h: null },
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/or-claude-1h', {
        provider: 'openrouter',
        upstreamModel: 'anthropic/claude-x',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
    });

    it('messages.create with ttl "1h": the body reaches Anthropic as sent, 5-minute writes are charged at cacheWrite and 1-hour ones at cacheWrite1h; usage, record and ledger agree', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const message = await sdk(env, user.key).messages.create({
        model: 'acme/claude-1h',
        max_tokens: 1000,
        system: [
          { type: 'text', text: 'Long-lived instructions.', cache_control: ONE_HOUR },
          { type: 'text', text: 'Per-session notes.', cache_control: { type: 'ephemeral' } },
        ],
        messages: [{ role: 'user', content: 'hi' }],
        metadata: { user_id: 'u1', mock_usage: SPLIT_USAGE } as Anthropic.Metadata,
      });
      const sent = mock.requests.at(-1)!;
      assert.deepEqual(sent.body.system[0].cache_control, ONE_HOUR);
      assert.deepEqual(message.usage.cache_creation, {
        ephemeral_5m_input_tokens: 100,
        ephemeral_1h_input_tokens: 200,
      });
      assert.equal(message.usage.cache_creation_input_tokens, 300);
      assert.equal(message.usage.input_tokens, 11);
      assert.equal((message.usage as any).cost, SPLIT_CHARGE / 1e6);
      assert.equal(await spent(env, user, start), SPLIT_CHARGE);
      const record = await lastRecord(env, user);
      assert.equal(record.cost, SPLIT_CHARGE);
      assert.equal(record.promptTokens, 311); // each input token once: 11 + 100 + 200
      assert.equal(record.details.cacheWrite, 100);
      assert.equal(record.details.cacheWrite1h, 200);
    });

    it('messages.stream with ttl "1h": the split from message_start is charged exactly', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const stream = sdk(env, user.key).messages.stream({
        model: 'acme/claude-1h',
        max_tokens: 1000,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: ONE_HOUR }] }],
        metadata: { user_id: 'u1', mock_usage: SPLIT_USAGE } as Anthropic.Metadata,
      });
      const final = await stream.finalMessage();
      assert.equal(final.usage.cache_creation_input_tokens, 300);
      assert.equal(await spent(env, user, start), SPLIT_CHARGE);
      assert.equal((await lastRecord(env, user)).cost, SPLIT_CHARGE);
    });

    it('messages.stream: a split Anthropic restates in message_delta is read there, not billed all at the 1-hour price', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const { cache_creation, ...withoutSplit } = SPLIT_USAGE;
      const response = await fetch(`${env.baseUrl}/api/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': user.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: 'acme/claude-1h',
          max_tokens: 1000,
          stream: true,
          cache_control: ONE_HOUR,
          messages: [{ role: 'user', content: 'hi' }],
          metadata: {
            user_id: 'u1',
            mock_usage: withoutSplit,
            mock_delta_usage: { cache_creation_input_tokens: 300, cache_creation },
          },
        }),
      });
      const text = await response.text();
      assert.equal(response.status, 200, text);
      const delta = text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)))
        .find((frame) => frame.type === 'message_delta');
      assert.deepEqual(delta.usage.cache_creation, { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 });
      assert.equal(delta.usage.cost, SPLIT_CHARGE / 1e6);
      assert.equal(await spent(env, user, start), SPLIT_CHARGE);
    });

    it('the hold of a call asking for 1 hour takes its input at cacheWrite1h, the highest input price it can incur (5 minutes: at cacheWrite)', async () => {
      const user = await fundedUser(env, 10);
      for (const ttl of ['5m', '1h'] as const)
        await sdk(env, user.key).messages.create({
          model: 'acme/claude-1h',
          max_tokens: 1000,
          system: [{ type: 'text', text: 'Long-lived instructions.', cache_control: { type: 'ephemeral', ttl } }],
          messages: [{ role: 'user', content: 'hi' }],
        });
      const [fiveMinutes, oneHour] = await holdsOf(env, user);
      const output = 1000 * PRICING.completion;
      // The same prompt, held at 12.5 then at 20 micro-credits a token (the output at 20 a token both times).
      const promptTokens = (oneHour! - output) / PRICING.cacheWrite1h;
      assert.ok(Number.isInteger(promptTokens) && promptTokens > 0, String(oneHour));
      assert.equal(fiveMinutes, Math.ceil(promptTokens * PRICING.cacheWrite) + output);
    });

    it('ttl "1h" on a model without a cacheWrite1h price is a 400 naming the price, before any hold or upstream call', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const count = mock.requests.length;
      const error: any = await sdk(env, user.key)
        .messages.create({
          model: 'acme/claude-5m',
          max_tokens: 1000,
          system: [{ type: 'text', text: 'x', cache_control: ONE_HOUR }],
          messages: [{ role: 'user', content: 'hi' }],
        })
        .catch((e) => e);
      assert.equal(error.status, 400);
      assert.equal(error.error.error.param, 'system[0].cache_control');
      assert.match(error.error.error.message, /no 1-hour cache-write price \(pricing\.cacheWrite1h\)/);
      assert.equal(mock.requests.length, count);
      assert.equal(await spent(env, user, start), 0);
    });

    it('chat content parts with ttl "1h" to an Anthropic model: the marker reaches Anthropic, the split is charged', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const completion = await client.chat.completions.create({
        model: 'acme/claude-1h',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: ONE_HOUR } as any] }],
        metadata: { mock_usage: SPLIT_USAGE } as any,
      });
      const sent = mock.requests.at(-1)!;
      assert.equal(sent.path, '/v1/messages');
      assert.deepEqual(sent.body.messages[0].content[0].cache_control, ONE_HOUR);
      const usage = completion.usage as any;
      assert.equal(usage.prompt_tokens, 311);
      assert.equal(usage.prompt_tokens_details.cache_write_tokens, 300);
      assert.equal(usage.prompt_tokens_details.cache_write_1h_tokens, 200);
      assert.equal(usage.cost, SPLIT_CHARGE / 1e6);
      assert.equal(await spent(env, user, start), SPLIT_CHARGE);
    });

    it('OpenRouter-routed Claude: a call that asked for 1 hour has its unsplit cache_write_tokens charged at cacheWrite1h (one without, at cacheWrite)', async () => {
      const client = async (cacheControl: Record<string, string>) => {
        const user = await fundedUser(env, 10);
        const start = (await wallet(env, user)).balance;
        const openai = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
        const completion = await openai.chat.completions.create({
          model: 'acme/or-claude-1h',
          messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: cacheControl } as any] }],
          // OpenRouter's usage: all input in prompt_tokens, the writes in cache_write_tokens, no lifetime.
          metadata: {
            mock_usage: {
              prompt_tokens: 311,
              completion_tokens: 4,
              total_tokens: 315,
              prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 300 },
            },
          } as any,
        });
        assert.deepEqual(mock.requests.at(-1)!.body.messages[0].content[0].cache_control, cacheControl);
        return { usage: completion.usage as any, spent: await spent(env, user, start) };
      };
      const hour = await client(ONE_HOUR);
      // 11 × 10 + 300 × 20 + 4 × 20: every write at the 1-hour price (OpenRouter does not say which lasted an hour).
      assert.equal(hour.spent, 110 + 6000 + 80);
      assert.equal(hour.usage.prompt_tokens_details.cache_write_1h_tokens, 300);
      const fiveMinutes = await client({ type: 'ephemeral' });
      assert.equal(fiveMinutes.spent, 110 + 3750 + 80);
      assert.equal('cache_write_1h_tokens' in fiveMinutes.usage.prompt_tokens_details, false);
    });
  },
  {
    config: {
      ANTHROPIC_BASE_URL: mock.url,
      ANTHROPIC_API_KEY: 'sk-ant',
      OPENROUTER_BASE_URL: `${mock.url}/v1`,
      OPENROUTER_API_KEY: 'sk-or',
    },
  },
);
