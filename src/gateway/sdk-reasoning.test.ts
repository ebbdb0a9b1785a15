import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { MOCK_REASONING_TOKENS, startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, holdsOf, putModel, settled, type FundedUser } from './testing.ts';

/**
 * A client's reasoning effort, in each protocol's own words (chat `reasoning_effort`, Responses `reasoning.effort`,
 * Messages `thinking` and `output_config.effort`), reaches both upstream wires in that upstream's own terms, or is
 * refused by name before anything is held: asserted on the body the upstream received, with the official SDKs,
 * streamed and not. The mock's `reasoner` model thinks when asked (20 more output tokens), so the charge shows the
 * thinking billed as output.
 */
const mock = await startMockUpstream();
after(() => mock.close());

/** Credits per 1M tokens, so micro-credits per token. */
const PRICING = { prompt: 2, completion: 5 };
/** The mock's usage priced: 11 prompt tokens × 2 + 4 words × 5; thinking adds 20 output tokens × 5. */
const PLAIN_CHARGE = 11 * 2 + 4 * 5;
const REASONING_CHARGE = PLAIN_CHARGE + MOCK_REASONING_TOKENS * 5;

const question = { role: 'user' as const, content: 'Why is the sky blue?' };
const schema = {
  type: 'object' as const,
  properties: { why: { type: 'string' as const } },
  required: ['why'],
  additionalProperties: false as const,
};

const sent = () => mock.requests.at(-1)!.body;
const openai = (env: TestEnv, key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
const anthropic = (env: TestEnv, key: string) =>
  new Anthropic({ apiKey: key, authToken: null, baseURL: `${env.baseUrl}/api`, maxRetries: 0 });
const spent = async (env: TestEnv, user: FundedUser) => 1_000_000 - (await settled(env, user)).balance;

/** A chat call streamed (read to its end) or not; its usage. */
async function chat(
  client: OpenAI,
  body: Omit<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, 'messages'>,
  stream: boolean,
): Promise<OpenAI.CompletionUsage | null | undefined> {
  const request = { messages: [question], ...body };
  if (!stream) return (await client.chat.completions.create(request)).usage;
  let usage: OpenAI.CompletionUsage | null | undefined;
  const chunks = await client.chat.completions.create({
    ...request,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const chunk of chunks) usage ??= chunk.usage;
  return usage;
}

/** A Responses call streamed (read to its end) or not; its usage. */
async function respond(
  client: OpenAI,
  body: Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, 'input'>,
  stream: boolean,
): Promise<OpenAI.Responses.ResponseUsage | undefined> {
  const request = { input: 'Why is the sky blue?', ...body };
  if (!stream) return (await client.responses.create(request)).usage;
  let usage: OpenAI.Responses.ResponseUsage | undefined;
  for await (const event of await client.responses.create({ ...request, stream: true }))
    if (event.type === 'response.completed') usage = event.response.usage;
  return usage;
}

/** A Messages call streamed (read to its end) or not. */
async function message(
  client: Anthropic,
  body: Omit<Anthropic.MessageCreateParamsNonStreaming, 'messages'>,
  stream: boolean,
): Promise<void> {
  const request = { messages: [question], ...body };
  if (!stream) {
    await client.messages.create(request);
    return;
  }
  for await (const _event of await client.messages.create({ ...request, stream: true }));
}

describeEachDatabase(
  'reasoning effort and thinking reach every upstream in its own terms',
  (env) => {
    before(async () => {
      const model = { upstreamModel: 'reasoner', pricing: PRICING, maxOutputTokens: 64_000 };
      await putModel(env, 'acme/gpt', { provider: 'openai', ...model, reasons: true });
      await putModel(env, 'acme/or', { provider: 'openrouter', ...model, reasons: true });
      // An upstream id that names no Claude version is taken as the newest kind (adaptive thinking only).
      await putModel(env, 'acme/claude', { provider: 'anthropic', ...model, reasons: true });
      // Models that cannot think, as OpenAI's gpt-4o: the mock answers 400 to any reasoning field (`reasons` is
      // false by default: no reasoning family in the name).
      const plain = { upstreamModel: 'no-reasoning', pricing: PRICING, maxOutputTokens: 64_000 };
      await putModel(env, 'acme/4o', { provider: 'openai', ...plain });
      await putModel(env, 'acme/or-4o', { provider: 'openrouter', ...plain });
      // `reasons` by family: gpt-5 reasons, its chat-only variant does not.
      await putModel(env, 'acme/gpt-5', { provider: 'openai', ...model, upstreamModel: 'gpt-5' });
      await putModel(env, 'acme/gpt-5.1', { provider: 'openai', ...model, upstreamModel: 'gpt-5.1' });
      await putModel(env, 'acme/o3', { provider: 'openai', ...model, upstreamModel: 'o3' });
      await putModel(env, 'acme/o4-mini', { provider: 'openai', ...model, upstreamModel: 'o4-mini' });
      await putModel(env, 'acme/or-gpt-5', { provider: 'openrouter', ...model, upstreamModel: 'openai/gpt-5' });
      await putModel(env, 'acme/gpt-5-chat', { provider: 'openai', ...model, upstreamModel: 'gpt-5-chat-latest' });
      // A reasoning model that fails, whose fallback cannot think.
      await putModel(env, 'acme/down', {
        provider: 'openai',
        ...model,
        upstreamModel: 'status-503',
        reasons: true,
        fallbacks: ['acme/4o'],
      });
    });

    it('openai chat.completions.create reasoning_effort on an Anthropic model arrives as adaptive thinking with output_config.effort (minimal as low, none as disabled thinking), beside a json_schema format, streamed or not', async () => {
      const user = await fundedUser(env, 1);
      const client = openai(env, user.key);
      for (const stream of [false, true]) {
        for (const [effort, expected] of [
          ['minimal', 'low'],
          ['low', 'low'],
          ['high', 'high'],
          ['xhigh', 'xhigh'],
          ['max', 'max'],
        ] as const) {
          await chat(client, { model: 'acme/claude', reasoning_effort: effort }, stream);
          assert.deepEqual(sent().output_config, { effort: expected }, `${effort}, stream ${stream}`);
          assert.deepEqual(sent().thinking, { type: 'adaptive' });
        }
        await chat(client, { model: 'acme/claude', reasoning_effort: 'none' }, stream);
        assert.deepEqual(sent().thinking, { type: 'disabled' });
        assert.equal(sent().output_config, undefined);
        await chat(
          client,
          {
            model: 'acme/claude',
            reasoning_effort: 'medium',
            response_format: { type: 'json_schema', json_schema: { name: 'why', schema } },
          },
          stream,
        );
        assert.deepEqual(sent().output_config, { format: { type: 'json_schema', schema }, effort: 'medium' });
        assert.deepEqual(sent().thinking, { type: 'adaptive' });
      }
    });

    it('openai chat.completions.create reasoning_effort Anthropic has no form for is a 400 naming reasoning_effort, nothing held or sent; an OpenAI-compatible upstream gets every effort as sent', async () => {
      const user = await fundedUser(env, 1);
      const client = openai(env, user.key);
      const before = mock.requests.length;
      for (const stream of [false, true])
        await assert.rejects(
          chat(client, { model: 'acme/claude', reasoning_effort: 'extreme' as 'high' }, stream),
          (error: any) =>
            error instanceof OpenAI.BadRequestError &&
            error.code === 'UNSUPPORTED_PARAMETER' &&
            error.param === 'reasoning_effort' &&
            /use one of none, minimal, low, medium, high, xhigh, max/.test(error.message),
        );
      assert.equal(mock.requests.length, before);
      assert.deepEqual(await holdsOf(env, user), []);
      for (const effort of ['none', 'minimal', 'xhigh', 'max'] as const) {
        await chat(client, { model: 'acme/gpt', reasoning_effort: effort }, false);
        assert.equal(sent().reasoning_effort, effort);
      }
    });

    it('openai responses.create reasoning.effort reaches an Anthropic model as adaptive thinking with output_config.effort (merged with text.format) and an OpenAI-compatible one as reasoning_effort, none and xhigh included, streamed or not', async () => {
      const user = await fundedUser(env, 1);
      const client = openai(env, user.key);
      for (const stream of [false, true]) {
        await respond(client, { model: 'acme/claude', reasoning: { effort: 'medium' } }, stream);
        assert.deepEqual(sent().output_config, { effort: 'medium' });
        assert.deepEqual(sent().thinking, { type: 'adaptive' });
        await respond(
          client,
          {
            model: 'acme/claude',
            reasoning: { effort: 'xhigh' },
            text: { format: { type: 'json_schema', name: 'why', schema } },
          },
          stream,
        );
        assert.deepEqual(sent().output_config, { format: { type: 'json_schema', schema }, effort: 'xhigh' });
        await respond(client, { model: 'acme/claude', reasoning: { effort: 'minimal' } }, stream);
        assert.deepEqual(sent().output_config, { effort: 'low' });
        await respond(client, { model: 'acme/claude', reasoning: { effort: 'none' } }, stream);
        assert.deepEqual(sent().thinking, { type: 'disabled' });
        assert.equal(sent().output_config, undefined);
        for (const effort of ['none', 'minimal', 'high', 'xhigh', 'max'] as const) {
          await respond(client, { model: 'acme/gpt', reasoning: { effort } }, stream);
          assert.equal(sent().reasoning_effort, effort, `${effort}, stream ${stream}`);
        }
      }
    });

    it('an effort an OpenAI model lacks reaches it as the nearest it takes, chat (sent natively) and Responses, streamed or not: none as minimal on gpt-5 (gpt-5.1 keeps none), the o-series none and minimal as low, xhigh and max as high', async () => {
      const user = await fundedUser(env, 1);
      const client = openai(env, user.key);
      const table = [
        ['acme/gpt-5', 'none', 'minimal'],
        ['acme/or-gpt-5', 'none', 'minimal'],
        ['acme/gpt-5', 'minimal', 'minimal'],
        ['acme/gpt-5.1', 'none', 'none'],
        ['acme/o3', 'none', 'low'],
        ['acme/o3', 'minimal', 'low'],
        ['acme/o3', 'xhigh', 'high'],
        ['acme/o4-mini', 'max', 'high'],
        ['acme/o4-mini', 'medium', 'medium'],
      ] as const;
      for (const stream of [false, true])
        for (const [model, effort, expected] of table) {
          await chat(client, { model, reasoning_effort: effort }, stream);
          assert.equal(sent().reasoning_effort, expected, `chat ${model} ${effort}, stream ${stream}`);
          await respond(client, { model, reasoning: { effort } }, stream);
          assert.equal(sent().reasoning_effort, expected, `responses ${model} ${effort}, stream ${stream}`);
        }
    });

    it('anthropic messages.create thinking on an OpenAI-compatible model: budget_tokens becomes the reasoning_effort of its share of max_tokens (OpenRouter gets reasoning.max_tokens), output_config.effort as sent, adaptive alone the model default, streamed or not', async () => {
      const user = await fundedUser(env, 1);
      const client = anthropic(env, user.key);
      for (const stream of [false, true]) {
        for (const [budget, effort] of [
          [3600, 'high'],
          [2000, 'medium'],
          [1024, 'low'],
        ] as const) {
          const thinking = { type: 'enabled' as const, budget_tokens: budget };
          await message(client, { model: 'acme/gpt', max_tokens: 4000, thinking }, stream);
          assert.equal(sent().reasoning_effort, effort, `${budget} of 4000, stream ${stream}`);
          assert.equal(sent().max_completion_tokens, 4000);
          await message(client, { model: 'acme/or', max_tokens: 4000, thinking }, stream);
          assert.deepEqual(sent().reasoning, { max_tokens: budget });
          assert.equal(sent().reasoning_effort, undefined);
        }
        // Claude Code's own ask for a model it does not know: 31,999 of 32,000 (the SDK streams a cap that large).
        const claudeCode = { type: 'enabled' as const, budget_tokens: 31_999 };
        await message(client, { model: 'acme/gpt', max_tokens: 32_000, thinking: claudeCode }, true);
        assert.equal(sent().reasoning_effort, 'high');
        for (const effort of ['low', 'xhigh', 'max'] as const) {
          await message(
            client,
            { model: 'acme/gpt', max_tokens: 4000, thinking: { type: 'adaptive' }, output_config: { effort } },
            stream,
          );
          assert.equal(sent().reasoning_effort, effort);
          assert.equal(sent().output_config, undefined);
        }
        // An effort named beside a budget is the level sent.
        await message(
          client,
          {
            model: 'acme/gpt',
            max_tokens: 4000,
            thinking: { type: 'enabled', budget_tokens: 3600 },
            output_config: { effort: 'low' },
          },
          stream,
        );
        assert.equal(sent().reasoning_effort, 'low');
        await message(client, { model: 'acme/gpt', max_tokens: 4000, thinking: { type: 'adaptive' } }, stream);
        assert.equal('reasoning_effort' in sent(), false);
      }
    });

    it('anthropic messages.create thinking budget_tokens on a model that does not reason (gpt-4o, reasons false) is left out: no reasoning_effort or reasoning reaches the upstream, which would answer 400, and the call succeeds at the plain charge, streamed or not', async () => {
      for (const model of ['acme/4o', 'acme/or-4o']) {
        for (const stream of [false, true]) {
          const user = await fundedUser(env, 1);
          const thinking = { type: 'enabled' as const, budget_tokens: 3600 };
          await message(anthropic(env, user.key), { model, max_tokens: 4000, thinking }, stream);
          assert.equal('reasoning_effort' in sent(), false, `${model}, stream ${stream}`);
          assert.equal('reasoning' in sent(), false, `${model}, stream ${stream}`);
          assert.equal(await spent(env, user), PLAIN_CHARGE);
        }
      }
      // Claude Code's own ask, streamed with a 32,000 cap.
      const user = await fundedUser(env, 1);
      const claudeCode = { type: 'enabled' as const, budget_tokens: 31_999 };
      await message(anthropic(env, user.key), { model: 'acme/4o', max_tokens: 32_000, thinking: claudeCode }, true);
      assert.equal('reasoning_effort' in sent(), false);
    });

    it("an effort the client names itself reaches a model that does not reason as sent (the client's own request: the upstream judges it, and its message is relayed as one sentence)", async () => {
      const user = await fundedUser(env, 1);
      // The upstream's message already ends its sentence: relayed without a second full stop ("…this model..").
      const named = (error: any) =>
        error.status === 400 && /reasoning_effort/.test(error.message) && /this model\.(?!\.)/.test(error.message);
      await assert.rejects(
        message(
          anthropic(env, user.key),
          { model: 'acme/4o', max_tokens: 4000, thinking: { type: 'adaptive' }, output_config: { effort: 'low' } },
          false,
        ),
        named,
      );
      assert.equal(sent().reasoning_effort, 'low');
      await assert.rejects(chat(openai(env, user.key), { model: 'acme/4o', reasoning_effort: 'high' }, false), named);
      assert.equal(sent().reasoning_effort, 'high');
      await assert.rejects(
        respond(openai(env, user.key), { model: 'acme/4o', reasoning: { effort: 'medium' } }, false),
        named,
      );
      assert.equal(sent().reasoning_effort, 'medium');
    });

    it('a thinking budget becomes an effort by the model family when the operator set no reasons (gpt-5 yes, gpt-5-chat-latest no), and by each candidate: a fallback that does not reason gets none', async () => {
      const user = await fundedUser(env, 1);
      const client = anthropic(env, user.key);
      const thinking = { type: 'enabled' as const, budget_tokens: 3600 };
      await message(client, { model: 'acme/gpt-5', max_tokens: 4000, thinking }, false);
      assert.equal(sent().model, 'gpt-5');
      assert.equal(sent().reasoning_effort, 'high');
      await message(client, { model: 'acme/gpt-5-chat', max_tokens: 4000, thinking }, false);
      assert.equal(sent().model, 'gpt-5-chat-latest');
      assert.equal('reasoning_effort' in sent(), false);
      for (const stream of [false, true]) {
        const before = mock.requests.length;
        await message(client, { model: 'acme/down', max_tokens: 4000, thinking }, stream);
        const [first, second] = mock.requests.slice(before).map((request) => request.body);
        assert.equal(first.model, 'status-503');
        assert.equal(first.reasoning_effort, 'high');
        assert.equal(second.model, 'no-reasoning');
        assert.equal('reasoning_effort' in second, false);
      }
    });

    it("anthropic messages.create on an Anthropic model still sends the client's own thinking and output_config, unchanged", async () => {
      const user = await fundedUser(env, 1);
      const client = anthropic(env, user.key);
      for (const stream of [false, true]) {
        for (const ask of [
          { thinking: { type: 'enabled' as const, budget_tokens: 1024 }, output_config: { effort: 'max' as const } },
          { thinking: { type: 'adaptive' as const }, output_config: { effort: 'xhigh' as const } },
          { thinking: { type: 'between_tools' as const } },
        ]) {
          await message(client, { model: 'acme/claude', max_tokens: 2000, ...ask }, stream);
          assert.deepEqual(sent().thinking, ask.thinking);
          assert.deepEqual(sent().output_config, ask.output_config);
        }
      }
    });

    it('anthropic messages.create with thinking between_tools or an output_config.effort no other vendor knows, on an OpenAI-compatible model, is a 400 naming the field, nothing held or sent', async () => {
      const user = await fundedUser(env, 1);
      const client = anthropic(env, user.key);
      const before = mock.requests.length;
      for (const stream of [false, true])
        for (const [ask, param] of [
          [{ thinking: { type: 'between_tools' } }, 'thinking.type'],
          [{ output_config: { effort: 'extreme' } }, 'output_config.effort'],
        ] as const) {
          const error = await message(
            client,
            { model: 'acme/gpt', max_tokens: 2000, ...(ask as Partial<Anthropic.MessageCreateParamsNonStreaming>) },
            stream,
          ).catch((error) => error);
          assert.ok(error instanceof Anthropic.BadRequestError, String(error));
          const body = (error.error as any).error;
          assert.equal(body.code, 'UNSUPPORTED_PARAMETER');
          assert.equal(body.param, param);
          assert.match(body.message, /acme\/gpt/);
        }
      assert.equal(mock.requests.length, before);
      assert.deepEqual(await holdsOf(env, user), []);
    });

    it('reasoning on either wire is charged the reported usage, its thinking as output tokens, and held exactly as the same call without it; the ledger verifies', async () => {
      for (const model of ['acme/gpt', 'acme/claude']) {
        for (const stream of [false, true]) {
          const user = await fundedUser(env, 1);
          const client = openai(env, user.key);
          const plain = await chat(client, { model, max_completion_tokens: 500 }, stream);
          assert.equal(await spent(env, user), PLAIN_CHARGE);
          const reasoning = await chat(client, { model, max_completion_tokens: 500, reasoning_effort: 'high' }, stream);
          assert.equal(await spent(env, user), PLAIN_CHARGE + REASONING_CHARGE, `${model}, stream ${stream}`);
          assert.equal(reasoning?.completion_tokens, (plain?.completion_tokens ?? 0) + MOCK_REASONING_TOKENS);
          const [plainHold, reasoningHold] = await holdsOf(env, user);
          assert.equal(reasoningHold, plainHold);
        }
        const user = await fundedUser(env, 1);
        const usage = await respond(openai(env, user.key), { model, reasoning: { effort: 'low' } }, false);
        assert.equal(usage?.output_tokens, 4 + MOCK_REASONING_TOKENS);
        assert.equal(await spent(env, user), REASONING_CHARGE);
      }
      const user = await fundedUser(env, 1);
      await message(
        anthropic(env, user.key),
        { model: 'acme/gpt', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 } },
        true,
      );
      assert.equal(await spent(env, user), REASONING_CHARGE);
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.body.ok, true, report.text);
    });
  },
  {
    config: {
      OPENAI_BASE_URL: `${mock.url}/v1`,
      OPENROUTER_BASE_URL: `${mock.url}/v1`,
      ANTHROPIC_BASE_URL: mock.url,
    },
  },
);
