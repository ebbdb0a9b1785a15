import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { fundedUser, holdsOf, putModel, settled, wallet } from '../gateway/testing.ts';
import {
  CLAUDE_ANSWER,
  CLAUDE_SIGNATURE,
  CLAUDE_THOUGHT,
  CLAUDE_USAGE,
  startClaudeUpstream,
} from './testing/claude-upstream.ts';

/**
 * An OpenAI client's reasoning effort (chat `reasoning_effort`, Responses `reasoning.effort`, the openai SDK, streamed
 * and not) turns Claude's thinking on the way each Claude generation takes it, against an Anthropic upstream that
 * answers 400 to what that generation does not take (`testing/claude-upstream.ts`): asserted on the body it
 * received, on the thinking that comes back (chat's `reasoning`, Responses' reasoning items), and on the 400 the
 * gateway answers before anything is held for what Anthropic does not combine with thinking.
 */
const upstream = await startClaudeUpstream();
after(() => upstream.close());

/** Credits per 1M tokens, so micro-credits per token. */
const PRICING = { prompt: 1, completion: 2 };
const CAP = 4000;

/** The catalogue models, by the Claude generation of their upstream id. */
const CLAUDE = {
  '3.5': 'acme/claude-3.5',
  '3.7': 'acme/claude-3.7',
  '4.5': 'acme/claude-4.5',
  '4.6': 'acme/claude-4.6',
  '4.7': 'acme/claude-4.7',
  fable5: 'acme/fable-5',
} as const;
const BUDGET_MODELS = [CLAUDE['3.7'], CLAUDE['4.5']];
const ADAPTIVE_MODELS = [CLAUDE['4.6'], CLAUDE['4.7'], CLAUDE.fable5];

const question = { role: 'user' as const, content: 'Why is the sky blue?' };
const sent = () => upstream.bodies.at(-1);
const openai = (env: TestEnv, key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });

/** A chat call, streamed (read to its end) or not: its text, its reasoning and its usage. */
async function chat(
  client: OpenAI,
  body: Omit<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, 'messages'>,
  stream: boolean,
): Promise<{ text: string; reasoning: string | undefined; usage: OpenAI.CompletionUsage | null | undefined }> {
  const request = { messages: [question], ...body };
  if (!stream) {
    const completion = await client.chat.completions.create(request);
    const message = completion.choices[0]!.message as OpenAI.Chat.ChatCompletionMessage & { reasoning?: string };
    return { text: message.content ?? '', reasoning: message.reasoning, usage: completion.usage };
  }
  let text = '';
  let reasoning: string | undefined;
  let usage: OpenAI.CompletionUsage | null | undefined;
  const chunks = await client.chat.completions.create({
    ...request,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const chunk of chunks) {
    const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning?: string } | undefined;
    text += delta?.content ?? '';
    if (delta?.reasoning) reasoning = (reasoning ?? '') + delta.reasoning;
    usage ??= chunk.usage;
  }
  return { text, reasoning, usage };
}

/** A Responses call, streamed (its `response.completed`'s response) or not. */
async function respond(
  client: OpenAI,
  body: Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, 'input'>,
  stream: boolean,
): Promise<OpenAI.Responses.Response> {
  const request = { input: 'Why is the sky blue?', ...body };
  if (!stream) return client.responses.create(request);
  let completed: OpenAI.Responses.Response | undefined;
  for await (const event of await client.responses.create({ ...request, stream: true }))
    if (event.type === 'response.completed') completed = event.response;
  assert.ok(completed, 'the stream completed');
  return completed;
}

/** The text of a Response's message items. */
const textOf = (response: OpenAI.Responses.Response) =>
  response.output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => (part.type === 'output_text' ? part.text : ''))
    .join('');

/** The reasoning items of a Response, as [summary text, encrypted_content]. */
const reasoningOf = (response: OpenAI.Responses.Response) =>
  response.output.flatMap((item) =>
    item.type === 'reasoning' ? [[item.summary.map((part) => part.text).join(''), item.encrypted_content]] : [],
  );

const tools: OpenAI.Chat.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } },
];

describeEachDatabase(
  "an OpenAI reasoning effort turns Claude's thinking on as each Claude generation takes it",
  (env) => {
    before(async () => {
      const put = (id: string, upstreamModel: string) =>
        putModel(env, id, { provider: 'anthropic', upstreamModel, pricing: PRICING, maxOutputTokens: 8000 });
      // `reasons` by family (models/reasoning-support.ts): 3.5 does not reason, 3.7 and later do, whatever the line.
      await put(CLAUDE['3.5'], 'claude-3-5-sonnet-20241022');
      await put(CLAUDE['3.7'], 'claude-3-7-sonnet-20250219');
      await put(CLAUDE['4.5'], 'claude-sonnet-4-5-20250929');
      await put(CLAUDE['4.6'], 'claude-opus-4-6');
      await put(CLAUDE['4.7'], 'claude-opus-4-7');
      await put(CLAUDE.fable5, 'claude-fable-5');
    });

    it('chat reasoning_effort: adaptive thinking with the effort on 4.6, Opus 4.7 and Fable 5; a budget of its share of max_tokens on 3.7 and 4.5; nothing on 3.5; the thinking comes back as reasoning, streamed or not', async () => {
      const user = await fundedUser(env, 1);
      const client = openai(env, user.key);
      for (const stream of [false, true]) {
        for (const model of ADAPTIVE_MODELS) {
          const answer = await chat(client, { model, reasoning_effort: 'high', max_completion_tokens: CAP }, stream);
          assert.deepEqual(sent().thinking, { type: 'adaptive' }, `${model}, stream ${stream}`);
          assert.deepEqual(sent().output_config, { effort: 'high' });
          assert.equal(answer.reasoning, CLAUDE_THOUGHT);
          assert.equal(answer.text, CLAUDE_ANSWER);
          assert.equal(answer.usage?.completion_tokens, CLAUDE_USAGE.output + CLAUDE_USAGE.thinking);
          await chat(client, { model, reasoning_effort: 'minimal', max_completion_tokens: CAP }, stream);
          assert.deepEqual(sent().output_config, { effort: 'low' });
        }
        for (const model of BUDGET_MODELS) {
          for (const [effort, budget] of [
            ['high', 3200],
            ['medium', 2000],
            ['low', 1024],
            ['max', 3800],
          ] as const) {
            const answer = await chat(client, { model, reasoning_effort: effort, max_completion_tokens: CAP }, stream);
            assert.deepEqual(
              sent().thinking,
              { type: 'enabled', budget_tokens: budget },
              `${model} ${effort}, stream ${stream}`,
            );
            assert.equal(sent().output_config, undefined);
            assert.equal(answer.reasoning, CLAUDE_THOUGHT);
            assert.equal(answer.text, CLAUDE_ANSWER);
          }
          // A cap that leaves no room for Anthropic's least budget (1024): no thinking.
          const small = await chat(client, { model, reasoning_effort: 'high', max_completion_tokens: 1000 }, stream);
          assert.equal(sent().thinking, undefined);
          assert.equal(small.reasoning, undefined);
        }
        for (const model of [...ADAPTIVE_MODELS, ...BUDGET_MODELS]) {
          await chat(client, { model, reasoning_effort: 'none', max_completion_tokens: CAP }, stream);
          assert.deepEqual(sent().thinking, { type: 'disabled' }, `${model}, stream ${stream}`);
          assert.equal(sent().output_config, undefined);
        }
        for (const effort of ['high', 'none'] as const) {
          const answer = await chat(client, { model: CLAUDE['3.5'], reasoning_effort: effort }, stream);
          assert.equal(sent().thinking, undefined);
          assert.equal(sent().output_config, undefined);
          assert.equal(answer.reasoning, undefined);
          assert.equal(answer.text, CLAUDE_ANSWER);
        }
      }
      // Every call was answered (the upstream refuses what a generation does not take) and settled.
      assert.equal((await settled(env, user)).reserved, 0);
    });

    it('Responses reasoning.effort: the same bodies, merged with a text.format schema, and the thinking as a reasoning item (its signature as encrypted_content), streamed or not', async () => {
      const user = await fundedUser(env, 1);
      const client = openai(env, user.key);
      const schema = { type: 'object', properties: { why: { type: 'string' } }, required: ['why'] };
      for (const stream of [false, true]) {
        for (const model of ADAPTIVE_MODELS) {
          const response = await respond(
            client,
            { model, reasoning: { effort: 'medium' }, max_output_tokens: CAP },
            stream,
          );
          assert.deepEqual(sent().thinking, { type: 'adaptive' }, `${model}, stream ${stream}`);
          assert.deepEqual(sent().output_config, { effort: 'medium' });
          assert.deepEqual(reasoningOf(response), [[CLAUDE_THOUGHT, CLAUDE_SIGNATURE]]);
          assert.equal(textOf(response), CLAUDE_ANSWER);
          assert.equal(response.usage?.output_tokens, CLAUDE_USAGE.output + CLAUDE_USAGE.thinking);
          await respond(
            client,
            {
              model,
              reasoning: { effort: 'xhigh' },
              max_output_tokens: CAP,
              text: { format: { type: 'json_schema', name: 'why', schema } },
            },
            stream,
          );
          assert.deepEqual(sent().output_config, { format: { type: 'json_schema', schema }, effort: 'xhigh' });
        }
        for (const model of BUDGET_MODELS) {
          const response = await respond(
            client,
            { model, reasoning: { effort: 'medium' }, max_output_tokens: CAP },
            stream,
          );
          assert.deepEqual(sent().thinking, { type: 'enabled', budget_tokens: 2000 }, `${model}, stream ${stream}`);
          assert.equal(sent().output_config, undefined);
          assert.deepEqual(reasoningOf(response), [[CLAUDE_THOUGHT, CLAUDE_SIGNATURE]]);
          await respond(
            client,
            {
              model,
              reasoning: { effort: 'high' },
              max_output_tokens: CAP,
              text: { format: { type: 'json_schema', name: 'why', schema } },
            },
            stream,
          );
          assert.deepEqual(sent().thinking, { type: 'enabled', budget_tokens: 3200 });
          assert.deepEqual(sent().output_config, { format: { type: 'json_schema', schema } });
        }
        for (const model of [CLAUDE['4.7'], CLAUDE['3.7']]) {
          await respond(client, { model, reasoning: { effort: 'none' } }, stream);
          assert.deepEqual(sent().thinking, { type: 'disabled' });
        }
        const plain = await respond(client, { model: CLAUDE['3.5'], reasoning: { effort: 'high' } }, stream);
        assert.equal(sent().thinking, undefined);
        assert.equal(sent().output_config, undefined);
        assert.deepEqual(reasoningOf(plain), []);
        assert.equal(textOf(plain), CLAUDE_ANSWER);
      }
    });

    it('an effort that turns thinking on beside a temperature other than 1, top_k, a top_p below 0.95 or a forced tool choice is a 400 UNSUPPORTED_PARAMETER naming that field, before anything is held or sent: wallet and ledger unchanged', async () => {
      const user = await fundedUser(env, 1);
      const client = openai(env, user.key);
      const before = { bodies: upstream.bodies.length, wallet: await wallet(env, user), ledger: await ledgerRows(env) };
      const chatCases: Array<[Omit<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, 'messages' | 'model'>, string]> =
        [
          [{ temperature: 0.2 }, 'temperature'],
          [{ temperature: 0 }, 'temperature'],
          [{ top_k: 5 } as object, 'top_k'],
          [{ top_p: 0.5 }, 'top_p'],
          [{ tools, tool_choice: 'required' }, 'tool_choice'],
          [{ tools, tool_choice: { type: 'function', function: { name: 'weather' } } }, 'tool_choice'],
        ];
      const responsesCases: Array<
        [Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, 'input' | 'model'>, string]
      > = [
        [{ temperature: 1.5 }, 'temperature'],
        [{ top_p: 0.9 }, 'top_p'],
        [
          { tools: [{ type: 'function', name: 'weather', parameters: {}, strict: false }], tool_choice: 'required' },
          'tool_choice',
        ],
        [
          {
            tools: [{ type: 'function', name: 'weather', parameters: {}, strict: false }],
            tool_choice: { type: 'function', name: 'weather' },
          },
          'tool_choice',
        ],
      ];
      const refused = (param: string, effortParam: string) => (error: any) =>
        error instanceof OpenAI.BadRequestError &&
        error.code === 'UNSUPPORTED_PARAMETER' &&
        error.param === param &&
        error.message.includes(`${effortParam} "high" turns on Claude's thinking on "`) &&
        error.message.includes('send one or the other');
      for (const stream of [false, true])
        for (const model of [CLAUDE['3.7'], CLAUDE['4.6'], CLAUDE['4.7'], CLAUDE.fable5]) {
          for (const [fields, param] of chatCases)
            await assert.rejects(
              chat(client, { model, reasoning_effort: 'high', ...fields }, stream),
              refused(param, 'reasoning_effort'),
              `${model} ${param}, stream ${stream}`,
            );
          for (const [fields, param] of responsesCases)
            await assert.rejects(
              respond(client, { model, reasoning: { effort: 'high' }, ...fields }, stream),
              refused(param, 'reasoning.effort'),
              `${model} ${param}, stream ${stream}`,
            );
        }
      assert.equal(upstream.bodies.length, before.bodies);
      assert.deepEqual(await holdsOf(env, user), []);
      assert.deepEqual(await wallet(env, user), before.wallet);
      assert.equal(await ledgerRows(env), before.ledger);
    });

    it('the same fields where nothing thinks reach the upstream as sent: temperature 1, top_p 0.95, effort none, a model that cannot think (3.5), a budget model under a cap of 1025', async () => {
      const user = await fundedUser(env, 1);
      const client = openai(env, user.key);
      const ok: Array<[string, Omit<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, 'messages' | 'model'>]> = [
        [CLAUDE['4.7'], { reasoning_effort: 'high', temperature: 1, top_p: 0.95, tools, tool_choice: 'auto' }],
        [CLAUDE['4.7'], { reasoning_effort: 'none', temperature: 0.2 }],
        [CLAUDE['3.5'], { reasoning_effort: 'high', temperature: 0.2, tools, tool_choice: 'required' }],
        [CLAUDE['3.7'], { reasoning_effort: 'high', temperature: 0.2, max_completion_tokens: 1000 }],
      ];
      for (const stream of [false, true])
        for (const [model, fields] of ok) {
          const answer = await chat(client, { model, ...fields }, stream);
          assert.equal(answer.text, CLAUDE_ANSWER, `${model} ${JSON.stringify(fields)}`);
          if (fields.temperature !== undefined) assert.equal(sent().temperature, fields.temperature);
        }
      await respond(client, { model: CLAUDE['4.7'], reasoning: { effort: 'high' }, temperature: 1 }, false);
      assert.deepEqual(sent().thinking, { type: 'adaptive' });
      assert.equal(sent().temperature, 1);
      await settled(env, user);
    });
  },
  { config: { ANTHROPIC_BASE_URL: upstream.url } },
);

/** The ledger's transactions, all users (a refused call writes none). */
async function ledgerRows(env: TestEnv): Promise<number> {
  const rows = await env.db.selectFrom('ledger_transactions').select('id').execute();
  return rows.length;
}
