import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, isStepCount, jsonSchema, Output, streamText, tool, type LanguageModel } from 'ai';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { SCRIPTED_USAGE, startScriptedUpstream } from '../protocols/openai-responses/testing/scripted-upstream.ts';
import { fundedUser, keyWithDailyLimit, putModel, settled, type FundedUser } from './testing.ts';

/**
 * What developers do most with the official clients a user installs today (openai 7, the AI SDK 7 with
 * `@ai-sdk/openai` 4 and `@ai-sdk/anthropic` 4, `@anthropic-ai/sdk` 1.14), each call against a real Tollgate and
 * real upstream stand-ins, on both upstream wires: chat with tools and structured output, Responses, embeddings,
 * models, the typed errors, the AI SDK's three model kinds with a tool loop, and Anthropic's messages and
 * count_tokens. The scripted upstream calls the first tool offered, then answers `Result: <the tool's result>`.
 */
const scripted = await startScriptedUpstream();
const mock = await startMockUpstream();
after(() => Promise.all([scripted.close(), mock.close()]));

/** Credits per 1M tokens, so micro-credits per token. */
const pricing = { prompt: 2, completion: 5, cacheRead: 1, cacheWrite: 3 };
/** The scripted usage priced: OpenAI wire 15 × 2 + 5 × 1 + 7 × 5; Anthropic wire 12 × 2 + 5 × 1 + 3 × 3 + 7 × 5. */
const CHARGE = { 'acme/gpt': 70, 'anthropic/claude': 73 } as const;
const MODELS = ['acme/gpt', 'anthropic/claude'] as const;

/** A JSON Schema object as every SDK types a tool's or an output's schema. */
type ObjectSchema = {
  type: 'object';
  properties: Record<string, { type: 'string' }>;
  required: string[];
  additionalProperties: false;
};
const weatherSchema: ObjectSchema = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
};
const seenSchema: ObjectSchema = {
  type: 'object',
  properties: { seen: { type: 'string' } },
  required: ['seen'],
  additionalProperties: false,
};
const chatWeather: OpenAI.Chat.ChatCompletionFunctionTool = {
  type: 'function',
  function: { name: 'weather', description: 'The weather of a city', parameters: weatherSchema },
};
const question = { role: 'user' as const, content: 'Weather in Paris?' };

const openaiClient = (env: TestEnv, key: string, options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
  new OpenAI({ apiKey: key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0, ...options });
const spent = async (env: TestEnv, user: FundedUser, credits: number) =>
  credits * 1_000_000 - (await settled(env, user)).balance;
const aiTools = {
  weather: tool({
    description: 'The weather of a city',
    inputSchema: jsonSchema<{ city: string }>(weatherSchema),
    execute: async ({ city }) => `rain in ${city}`,
  }),
};

describeEachDatabase(
  'the newest official SDKs, what users do most',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/gpt', { provider: 'scripted', upstreamModel: 'gpt', pricing, maxOutputTokens: 100 });
      await putModel(env, 'anthropic/claude', {
        provider: 'anthropic',
        upstreamModel: 'claude',
        pricing,
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/embed', {
        provider: 'mock',
        upstreamModel: 'text-embedding',
        pricing: { prompt: 1 },
        outputModalities: ['embedding'],
      });
    });

    for (const model of MODELS) {
      it(`openai chat.completions.create on ${model}: a tool call and its result, streamed with include_usage and not; each turn charged the upstream's usage`, async () => {
        const user = await fundedUser(env, 1);
        const client = openaiClient(env, user.key);
        const first = await client.chat.completions.create({ model, messages: [question], tools: [chatWeather] });
        assert.equal(first.choices[0].finish_reason, 'tool_calls');
        const call = first.choices[0].message.tool_calls?.[0];
        assert.ok(call?.type === 'function', JSON.stringify(first.choices[0].message));
        assert.equal(call.function.name, 'weather');
        assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
        assert.equal(first.usage?.completion_tokens, 7);
        assert.equal(first.usage?.prompt_tokens_details?.cached_tokens, 5);

        const stream = await client.chat.completions.create({
          model,
          messages: [question],
          tools: [chatWeather],
          stream: true,
          stream_options: { include_usage: true },
        });
        let args = '';
        let name = '';
        let finish: string | null = null;
        let usage: OpenAI.CompletionUsage | null | undefined;
        for await (const chunk of stream) {
          const delta = chunk.choices[0]?.delta;
          name += delta?.tool_calls?.[0]?.function?.name ?? '';
          args += delta?.tool_calls?.[0]?.function?.arguments ?? '';
          finish = chunk.choices[0]?.finish_reason ?? finish;
          usage ??= chunk.usage;
        }
        assert.equal(name, 'weather');
        assert.deepEqual(JSON.parse(args), { city: 'Paris' });
        assert.equal(finish, 'tool_calls');
        assert.equal(usage?.completion_tokens, 7);

        const answer = await client.chat.completions.create({
          model,
          tools: [chatWeather],
          messages: [
            question,
            { role: 'assistant', content: null, tool_calls: [call] },
            { role: 'tool', tool_call_id: call.id, content: 'sunny' },
          ],
        });
        assert.equal(answer.choices[0].message.content, 'Result: sunny');
        assert.equal(answer.choices[0].finish_reason, 'stop');
        assert.equal(await spent(env, user, 1), 3 * CHARGE[model]);
      });
    }

    for (const model of MODELS)
      it(`openai chat.completions.create with response_format json_schema on ${model}: the schema reaches the upstream (Anthropic: as output_config.format), streamed or not, and the answer is the JSON`, async () => {
        const user = await fundedUser(env, 1);
        const client = openaiClient(env, user.key);
        const responseFormat = {
          type: 'json_schema' as const,
          json_schema: { name: 'seen', strict: true, schema: seenSchema },
        };
        const ask = {
          model,
          messages: [{ role: 'user' as const, content: 'a city' }],
          response_format: responseFormat,
        };
        const sentFormat = () => {
          const sent = scripted.requests.at(-1)!.body;
          return model === 'anthropic/claude' ? sent.output_config : sent.response_format;
        };
        const expected =
          model === 'anthropic/claude' ? { format: { type: 'json_schema', schema: seenSchema } } : responseFormat;
        const answer = await client.chat.completions.create(ask);
        assert.deepEqual(JSON.parse(answer.choices[0].message.content!), { seen: 'a city' });
        assert.deepEqual(sentFormat(), expected);
        let text = '';
        for await (const chunk of await client.chat.completions.create({ ...ask, stream: true }))
          text += chunk.choices[0]?.delta?.content ?? '';
        assert.deepEqual(JSON.parse(text), { seen: 'a city' });
        assert.deepEqual(sentFormat(), expected);
        assert.equal(await spent(env, user, 1), 2 * CHARGE[model]);
      });

    it('openai chat.completions.create with response_format json_object on an Anthropic model is a 400 naming response_format, nothing held or sent; an OpenAI-compatible upstream gets it as sent', async () => {
      const user = await fundedUser(env, 1);
      const client = openaiClient(env, user.key);
      const ask = {
        messages: [{ role: 'user' as const, content: 'a city as JSON' }],
        response_format: { type: 'json_object' as const },
      };
      const sent = scripted.requests.length;
      for (const stream of [false, true])
        await assert.rejects(
          client.chat.completions.create({ model: 'anthropic/claude', ...ask, stream }),
          (error: any) =>
            error instanceof OpenAI.BadRequestError &&
            error.code === 'UNSUPPORTED_PARAMETER' &&
            error.param === 'response_format' &&
            /json_schema/.test(error.message),
        );
      assert.equal(scripted.requests.length, sent);
      assert.equal(await spent(env, user, 1), 0);
      await client.chat.completions.create({ model: 'acme/gpt', ...ask });
      assert.deepEqual(scripted.requests.at(-1)!.body.response_format, { type: 'json_object' });
    });

    for (const model of MODELS) {
      it(`openai responses.create with text.format json_schema on ${model}: the schema reaches the upstream (Anthropic: as output_config.format), streamed or not, and the answer is the JSON`, async () => {
        const user = await fundedUser(env, 1);
        const client = openaiClient(env, user.key);
        const format = { type: 'json_schema' as const, name: 'seen', strict: true, schema: seenSchema };
        const answer = await client.responses.create({ model, input: 'a city', text: { format } });
        assert.equal(answer.status, 'completed');
        assert.deepEqual(JSON.parse(answer.output_text), { seen: 'a city' });
        const sent = scripted.requests.at(-1)!.body;
        if (model === 'anthropic/claude')
          assert.deepEqual(sent.output_config, { format: { type: 'json_schema', schema: seenSchema } });
        else
          assert.deepEqual(sent.response_format, {
            type: 'json_schema',
            json_schema: { name: 'seen', schema: seenSchema, strict: true },
          });

        let text = '';
        for await (const event of await client.responses.create({
          model,
          input: 'a city',
          text: { format },
          stream: true,
        }))
          if (event.type === 'response.output_text.delta') text += event.delta;
        assert.deepEqual(JSON.parse(text), { seen: 'a city' });
        assert.equal(await spent(env, user, 1), 2 * CHARGE[model]);
      });
    }

    it('openai responses.create with text.format json_object on an Anthropic model is a 400 naming text.format (Anthropic has no schema-less JSON mode), before anything is held or sent', async () => {
      const user = await fundedUser(env, 1);
      const sent = scripted.requests.length;
      for (const stream of [false, true])
        await assert.rejects(
          openaiClient(env, user.key).responses.create({
            model: 'anthropic/claude',
            input: 'a city as JSON',
            text: { format: { type: 'json_object' } },
            stream,
          }),
          (error: any) =>
            error instanceof OpenAI.BadRequestError &&
            error.code === 'UNSUPPORTED_PARAMETER' &&
            error.param === 'text.format' &&
            /json_schema/.test(error.message),
        );
      assert.equal(scripted.requests.length, sent);
      assert.equal(await spent(env, user, 1), 0);
      // An OpenAI-compatible upstream takes it as response_format.
      await openaiClient(env, user.key).responses.create({
        model: 'acme/gpt',
        input: 'a city as JSON',
        text: { format: { type: 'json_object' } },
      });
      assert.deepEqual(scripted.requests.at(-1)!.body.response_format, { type: 'json_object' });
    });

    const objectModels: Array<[string, (key: string, model: string) => LanguageModel]> = [
      [
        "openai(...) (Responses, the AI SDK's default)",
        (key, model) => createOpenAI({ baseURL: `${env.baseUrl}/api/v1`, apiKey: key })(model),
      ],
      ['openai.chat(...)', (key, model) => createOpenAI({ baseURL: `${env.baseUrl}/api/v1`, apiKey: key }).chat(model)],
      ['@ai-sdk/anthropic', (key, model) => createAnthropic({ baseURL: `${env.baseUrl}/api/v1`, apiKey: key })(model)],
    ];
    for (const [kind, make] of objectModels)
      for (const model of MODELS)
        it(`the AI SDK's Output.object with ${kind} on ${model}: generateText and streamText return the object`, async () => {
          const user = await fundedUser(env, 1);
          const schema = jsonSchema<{ seen: string } | { city: string }>(
            kind === '@ai-sdk/anthropic' ? weatherSchema : seenSchema,
          );
          // @ai-sdk/anthropic asks for JSON as a forced tool call (the scripted model calls it with {"city":"Paris"}).
          const expected = kind === '@ai-sdk/anthropic' ? { city: 'Paris' } : { seen: 'a city' };
          const generated = await generateText({
            model: make(user.key, model),
            prompt: 'a city',
            output: Output.object({ schema }),
            maxRetries: 0,
          });
          assert.deepEqual(generated.output, expected);
          const streamed = streamText({
            model: make(user.key, model),
            prompt: 'a city',
            output: Output.object({ schema }),
            maxRetries: 0,
          });
          assert.deepEqual(await streamed.output, expected);
          assert.equal(await spent(env, user, 1), 2 * CHARGE[model]);
        });

    for (const model of MODELS) {
      it(`openai responses.create on ${model}: instructions and max_output_tokens reach the upstream; a tool call, streamed and not, and its output answered`, async () => {
        const user = await fundedUser(env, 1);
        const client = openaiClient(env, user.key);
        const weather: OpenAI.Responses.FunctionTool = {
          type: 'function',
          name: 'weather',
          description: 'The weather of a city',
          parameters: weatherSchema,
          strict: true,
        };
        const first = await client.responses.create({
          model,
          instructions: 'Be brief.',
          max_output_tokens: 50,
          input: 'Weather in Paris?',
          tools: [weather],
        });
        assert.equal(first.status, 'completed');
        const call = first.output.find((item) => item.type === 'function_call');
        assert.ok(call?.type === 'function_call', JSON.stringify(first.output));
        assert.equal(call.name, 'weather');
        assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
        assert.equal(first.usage?.output_tokens, 7);
        const sent = scripted.requests.at(-1)!.body;
        assert.match(JSON.stringify(sent), /Be brief\./);
        assert.equal(sent.max_tokens ?? sent.max_completion_tokens, 50);

        const events: string[] = [];
        let completed: OpenAI.Responses.Response | undefined;
        for await (const event of await client.responses.create({
          model,
          instructions: 'Be brief.',
          input: 'Weather in Paris?',
          tools: [weather],
          stream: true,
        })) {
          events.push(event.type);
          if (event.type === 'response.completed') completed = event.response;
        }
        assert.ok(events.includes('response.function_call_arguments.done'), events.join());
        const streamedCall = completed?.output.find((item) => item.type === 'function_call');
        assert.ok(streamedCall?.type === 'function_call');
        assert.deepEqual(JSON.parse(streamedCall.arguments), { city: 'Paris' });

        const answer = await client.responses.create({
          model,
          input: [
            { role: 'user', content: 'Weather in Paris?' },
            call,
            { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
          ],
          tools: [weather],
        });
        assert.equal(answer.output_text, 'Result: sunny');
        assert.equal(await spent(env, user, 1), 3 * CHARGE[model]);
      });
    }

    it('openai embeddings.create (base64 by default, decoded by the SDK), models.list and models.retrieve', async () => {
      const user = await fundedUser(env, 1);
      const client = openaiClient(env, user.key);
      const embedding = await client.embeddings.create({ model: 'acme/embed', input: ['one', 'two'] });
      assert.equal(embedding.data.length, 2);
      assert.deepEqual(
        embedding.data[1].embedding.map((x) => Math.round(x * 10) / 10),
        [0.1, 0.2, 0.3],
      );
      assert.equal(embedding.usage.prompt_tokens, 11);
      const ids: string[] = [];
      for await (const listed of client.models.list()) ids.push(listed.id);
      assert.ok(
        ['acme/gpt', 'anthropic/claude', 'acme/embed'].every((id) => ids.includes(id)),
        ids.join(),
      );
      const retrieved = await client.models.retrieve('anthropic/claude');
      assert.equal(retrieved.id, 'anthropic/claude');
      assert.equal(retrieved.object, 'model');
    });

    it("openai's typed errors: 401 AuthenticationError, 404 NotFoundError, 402 APIError and 429 RateLimitError with their codes; with default retries a credit or spending-limit refusal is sent once", async () => {
      const user = await fundedUser(env, 1);
      const hi = { model: 'acme/gpt', messages: [{ role: 'user' as const, content: 'hi' }] };
      await assert.rejects(
        openaiClient(env, 'tg_not_a_key').chat.completions.create(hi),
        (error: any) =>
          error instanceof OpenAI.AuthenticationError && error.status === 401 && error.code === 'UNAUTHENTICATED',
      );
      await assert.rejects(
        openaiClient(env, user.key).chat.completions.create({ ...hi, model: 'acme/missing' }),
        (error: any) => error instanceof OpenAI.NotFoundError && error.code === 'MODEL_NOT_FOUND',
      );
      await assert.rejects(
        openaiClient(env, user.key).models.retrieve('acme/missing'),
        (error: any) => error instanceof OpenAI.NotFoundError && error.code === 'MODEL_NOT_FOUND',
      );

      let requests = 0;
      const counting = (key: string) =>
        openaiClient(env, key, {
          maxRetries: 2,
          fetch: (url: string | URL | Request, init?: RequestInit) => {
            requests++;
            return fetch(url, init);
          },
        });
      const poor = await fundedUser(env, 0);
      await assert.rejects(
        counting(poor.key).chat.completions.create(hi),
        (error: any) =>
          error instanceof OpenAI.APIError && error.status === 402 && error.code === 'INSUFFICIENT_CREDITS',
      );
      assert.equal(requests, 1);
      requests = 0;
      const limited = await keyWithDailyLimit(env, user, 0.00001);
      await assert.rejects(
        counting(limited).responses.create({ model: 'acme/gpt', input: 'hi' }),
        (error: any) =>
          error instanceof OpenAI.RateLimitError && error.status === 429 && error.code === 'SPENDING_LIMIT_EXCEEDED',
      );
      assert.equal(requests, 1);
    });

    const aiModels: Array<[string, (key: string, model: string) => LanguageModel]> = [
      [
        "openai(...) (Responses, the AI SDK's default)",
        (key, model) => createOpenAI({ baseURL: `${env.baseUrl}/api/v1`, apiKey: key })(model),
      ],
      ['openai.chat(...)', (key, model) => createOpenAI({ baseURL: `${env.baseUrl}/api/v1`, apiKey: key }).chat(model)],
      ['@ai-sdk/anthropic', (key, model) => createAnthropic({ baseURL: `${env.baseUrl}/api/v1`, apiKey: key })(model)],
    ];
    for (const [kind, make] of aiModels)
      for (const model of MODELS)
        it(`the AI SDK's ${kind} on ${model}: generateText and streamText run a tool loop; usage read back; each step charged`, async () => {
          const user = await fundedUser(env, 1);
          const generated = await generateText({
            model: make(user.key, model),
            prompt: 'Weather in Paris?',
            tools: aiTools,
            stopWhen: isStepCount(3),
            maxRetries: 0,
          });
          assert.equal(generated.steps.length, 2);
          assert.deepEqual(
            generated.steps[0].toolCalls.map((call) => [call.toolName, call.input]),
            [['weather', { city: 'Paris' }]],
          );
          assert.equal(generated.text, 'Result: rain in Paris');
          assert.equal(generated.finishReason, 'stop');
          assert.equal(generated.steps[0].finishReason, 'tool-calls');
          assert.equal(generated.steps[0].usage.outputTokens, 7);
          // Two steps: the usage is their sum, cache reads and writes told apart.
          assert.equal(generated.usage.outputTokens, 14);
          assert.equal(generated.usage.inputTokens, 40);
          assert.equal(
            generated.usage.inputTokenDetails.cacheReadTokens,
            2 * SCRIPTED_USAGE.anthropic.cache_read_input_tokens,
          );
          assert.equal(
            generated.usage.inputTokenDetails.cacheWriteTokens,
            model === 'anthropic/claude' ? 2 * SCRIPTED_USAGE.anthropic.cache_creation_input_tokens : 0,
          );

          const streamed = streamText({
            model: make(user.key, model),
            prompt: 'Weather in Paris?',
            tools: aiTools,
            stopWhen: isStepCount(3),
            maxRetries: 0,
          });
          let text = '';
          for await (const delta of streamed.textStream) text += delta;
          assert.equal(text, 'Result: rain in Paris');
          assert.equal((await streamed.steps).length, 2);
          assert.equal((await streamed.usage).outputTokens, 14);
          assert.equal((await streamed.usage).inputTokens, 40);
          assert.equal(await spent(env, user, 1), 4 * CHARGE[model]);
        });

    it('the AI SDK surfaces a refusal as an APICallError with the status and our code, for each model kind', async () => {
      const poor = await fundedUser(env, 0);
      for (const [kind, make] of aiModels) {
        const error = await generateText({ model: make(poor.key, 'acme/gpt'), prompt: 'hi', maxRetries: 0 }).catch(
          (e) => e,
        );
        assert.equal(error?.statusCode, 402, `${kind}: ${error}`);
        assert.equal(JSON.parse(error.responseBody).error.code, 'INSUFFICIENT_CREDITS', kind);
      }
    });

    for (const model of MODELS) {
      it(`@anthropic-ai/sdk on ${model}: messages.create and messages.stream with a tool, the tool_result answered; countTokens counts without charging`, async () => {
        const user = await fundedUser(env, 1);
        const client = new Anthropic({
          apiKey: user.key,
          authToken: null,
          baseURL: `${env.baseUrl}/api`,
          maxRetries: 0,
        });
        const tools: Anthropic.Tool[] = [
          { name: 'weather', description: 'The weather of a city', input_schema: weatherSchema },
        ];
        const first = await client.messages.create({ model, max_tokens: 100, tools, messages: [question] });
        assert.equal(first.stop_reason, 'tool_use');
        const use = first.content.find((block) => block.type === 'tool_use');
        assert.ok(use?.type === 'tool_use', JSON.stringify(first.content));
        assert.deepEqual(use.input, { city: 'Paris' });
        assert.equal(first.usage.output_tokens, 7);

        const streamed = await client.messages
          .stream({ model, max_tokens: 100, tools, messages: [question] })
          .finalMessage();
        assert.equal(streamed.stop_reason, 'tool_use');
        const streamedUse = streamed.content.find((block) => block.type === 'tool_use');
        assert.ok(streamedUse?.type === 'tool_use');
        assert.deepEqual(streamedUse.input, { city: 'Paris' });
        assert.equal(streamed.usage.output_tokens, 7);

        const answer = await client.messages.create({
          model,
          max_tokens: 100,
          tools,
          messages: [
            question,
            { role: 'assistant', content: first.content },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
          ],
        });
        assert.equal(answer.stop_reason, 'end_turn');
        assert.deepEqual(
          answer.content.map((block) => (block.type === 'text' ? block.text : block.type)),
          ['Result: sunny'],
        );
        const before = (await settled(env, user)).balance;
        const counted = await client.messages.countTokens({ model, tools, messages: [question] });
        assert.ok(counted.input_tokens > 0);
        assert.equal((await settled(env, user)).balance, before);
        assert.equal(await spent(env, user, 1), 3 * CHARGE[model]);
      });
    }

    it('after all of it the ledger verifies', async () => {
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.body.ok, true, report.text);
    });
  },
  {
    config: {
      providers: [
        { name: 'scripted', baseUrl: `${scripted.url}/v1` },
        { name: 'mock', baseUrl: `${mock.url}/v1` },
      ],
      ANTHROPIC_BASE_URL: scripted.url,
      ANTHROPIC_API_KEY: 'sk-ant-scripted',
    },
  },
);
