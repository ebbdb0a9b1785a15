import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, isStepCount, jsonSchema, streamText, tool } from 'ai';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import {
  fundedUser,
  keyWithDailyLimit,
  putModel,
  readSseFrames,
  settled,
  usageOf,
  type FundedUser,
} from '../../gateway/testing.ts';
import { startScriptedUpstream } from './testing/scripted-upstream.ts';

const upstream = await startScriptedUpstream();
after(() => upstream.close());

/** 1 credit per 1M tokens is 1 micro-credit per token: charges read as token sums. */
const pricing = { prompt: 2, completion: 5, cacheRead: 1, cacheWrite: 3, request: 0.0001 };

/**
 * The two upstream wires, and what the scripted upstream's usage costs on each, in micro-credits:
 * OpenAI: 15 plain input × 2 + 5 cache reads × 1 + 7 output × 5 + 100 per request = 170;
 * Anthropic: 12 plain input × 2 + 5 cache reads × 1 + 3 cache writes × 3 + 7 output × 5 + 100 = 173.
 */
const WIRES = [
  {
    name: 'an OpenAI-compatible upstream',
    model: 'acme/gpt',
    stall: 'acme/stall',
    broken: 'acme/break',
    charge: 170,
    usage: {
      input_tokens: 20,
      input_tokens_details: { cached_tokens: 5, cache_write_tokens: 0 },
      output_tokens: 7,
      output_tokens_details: { reasoning_tokens: 2 },
      total_tokens: 27,
      cost: 0.00017,
    },
  },
  {
    name: 'an Anthropic upstream',
    model: 'anthropic/claude',
    stall: 'anthropic/stall',
    broken: 'anthropic/break',
    charge: 173,
    usage: {
      input_tokens: 20,
      input_tokens_details: { cached_tokens: 5, cache_write_tokens: 3 },
      output_tokens: 7,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 27,
      cost: 0.000173,
    },
  },
] as const;

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'weather',
  description: 'The weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
const client = (env: TestEnv, user: FundedUser) =>
  new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
const spent = async (env: TestEnv, user: FundedUser, credits: number) =>
  credits * 1_000_000 - (await settled(env, user)).balance;

describeEachDatabase(
  'OpenAI Responses through the official clients',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/gpt', {
        provider: 'scripted',
        upstreamModel: 'gpt',
        pricing,
        maxOutputTokens: 100,
        imageTokens: 50,
      });
      await putModel(env, 'openai/gpt', { provider: 'openai', upstreamModel: 'gpt', pricing, maxOutputTokens: 100 });
      await putModel(env, 'acme/stall', {
        provider: 'scripted',
        upstreamModel: 'stall',
        pricing,
        maxOutputTokens: 100,
      });
      await putModel(env, 'anthropic/claude', {
        provider: 'anthropic',
        upstreamModel: 'claude',
        pricing,
        maxOutputTokens: 100,
        imageTokens: 50,
      });
      await putModel(env, 'anthropic/stall', {
        provider: 'anthropic',
        upstreamModel: 'stall',
        pricing,
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/break', {
        provider: 'scripted',
        upstreamModel: 'break',
        pricing,
        maxOutputTokens: 100,
      });
      await putModel(env, 'anthropic/break', {
        provider: 'anthropic',
        upstreamModel: 'break',
        pricing,
        maxOutputTokens: 100,
      });
    });

    for (const wire of WIRES) {
      it(`through ${wire.name}: responses.create with instructions is a Response object, charged exactly the upstream's usage`, async () => {
        const user = await fundedUser(env, 1);
        const response = await client(env, user).responses.create({
          model: wire.model,
          instructions: 'Be brief.',
          input: 'hello there',
        });
        assert.match(response.id, /^resp_/);
        assert.equal(response.object, 'response');
        assert.equal(response.status, 'completed');
        assert.equal(response.model, wire.model);
        assert.equal(response.output_text, 'Seen: hello there');
        assert.equal((response as unknown as { store: boolean }).store, false);
        assert.deepEqual(response.usage, wire.usage);
        assert.match(JSON.stringify(upstream.requests.at(-1)!.body), /Be brief\./);
        assert.equal(await spent(env, user, 1), wire.charge);
        const [record] = await usageOf(env, user);
        assert.equal(Number(record.cost), wire.charge);
        assert.equal(record.status, 'ok');
      });

      it(`through ${wire.name}: stream: true yields the Responses events, and responses.stream's final response`, async () => {
        const user = await fundedUser(env, 1);
        const stream = await client(env, user).responses.create({
          model: wire.model,
          input: 'hello stream',
          stream: true,
        });
        const events: OpenAI.Responses.ResponseStreamEvent[] = [];
        for await (const event of stream) events.push(event);
        assert.equal(events[0].type, 'response.created');
        assert.equal(events[1].type, 'response.in_progress');
        assert.ok(events.every((event, i) => event.sequence_number === i));
        const text = events
          .filter((e) => e.type === 'response.output_text.delta')
          .map((e) => (e as OpenAI.Responses.ResponseTextDeltaEvent).delta)
          .join('');
        assert.equal(text, 'Seen: hello stream');
        const last = events.at(-1)!;
        assert.equal(last.type, 'response.completed');
        assert.deepEqual((last as OpenAI.Responses.ResponseCompletedEvent).response.usage, wire.usage);
        assert.equal(await spent(env, user, 1), wire.charge);

        const helper = client(env, user).responses.stream({ model: wire.model, input: 'hello helper' });
        let deltas = '';
        helper.on('response.output_text.delta', (event) => (deltas += event.delta));
        const final = await helper.finalResponse();
        assert.equal(final.output_text, 'Seen: hello helper');
        assert.equal(deltas, 'Seen: hello helper');
        assert.equal(await spent(env, user, 1), 2 * wire.charge);
      });

      it(`through ${wire.name}: a tool call round trip by replaying the items, streamed and not`, async () => {
        const user = await fundedUser(env, 1);
        const openai = client(env, user);
        const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'weather in Paris?' }];
        const first = await openai.responses.create({ model: wire.model, input, tools: [weather] });
        const call = first.output.find((item) => item.type === 'function_call');
        assert.ok(call && call.type === 'function_call', JSON.stringify(first.output));
        assert.equal(call.name, 'weather');
        assert.equal(call.arguments, '{"city":"Paris"}');
        assert.equal(call.status, 'completed');
        assert.match(call.id!, /^fc_/);
        const second = await openai.responses.create({
          model: wire.model,
          tools: [weather],
          input: [
            ...input,
            ...(first.output as OpenAI.Responses.ResponseInputItem[]),
            { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
          ],
        });
        assert.equal(second.output_text, 'Result: sunny');

        const streamed = await openai.responses.stream({ model: wire.model, input, tools: [weather] }).finalResponse();
        const streamedCall = streamed.output.find((item) => item.type === 'function_call');
        assert.ok(streamedCall && streamedCall.type === 'function_call');
        assert.equal(streamedCall.arguments, '{"city":"Paris"}');
        assert.equal(await spent(env, user, 1), 3 * wire.charge);
      });

      it(`through ${wire.name}: store + previous_response_id continue a tool call; GET and DELETE are the owner's only`, async () => {
        const user = await fundedUser(env, 1);
        const other = await fundedUser(env, 1);
        const openai = client(env, user);
        const first = await openai.responses.create({
          model: wire.model,
          input: 'weather in Paris?',
          tools: [weather],
          store: true,
        });
        assert.equal((first as unknown as { store: boolean }).store, true);
        const call = first.output.find((item) => item.type === 'function_call');
        assert.ok(call && call.type === 'function_call');
        const second = await openai.responses.create({
          model: wire.model,
          previous_response_id: first.id,
          tools: [weather],
          store: true,
          stream: false,
          input: [{ type: 'function_call_output', call_id: call.call_id, output: 'cloudy' }],
        });
        assert.equal(second.output_text, 'Result: cloudy');
        assert.equal(second.previous_response_id, first.id);
        assert.deepEqual((await openai.responses.retrieve(second.id)).output, second.output);

        // Another user's id is unknown to them, whatever they try.
        const theirs = client(env, other);
        await assert.rejects(
          theirs.responses.create({ model: wire.model, previous_response_id: first.id, input: 'hi' }),
          (error: any) => error.status === 404 && error.code === 'NOT_FOUND' && error.param === 'previous_response_id',
        );
        await assert.rejects(
          theirs.responses.retrieve(first.id),
          (error: any) => error.status === 404 && error.code === 'NOT_FOUND',
        );
        await assert.rejects(theirs.responses.delete(first.id), (error: any) => error.status === 404);
        assert.equal(await spent(env, other, 1), 0);

        await openai.responses.delete(first.id);
        await assert.rejects(openai.responses.retrieve(first.id), (error: any) => error.status === 404);
        await assert.rejects(
          openai.responses.create({ model: wire.model, previous_response_id: first.id, input: 'hi' }),
          (error: any) => error.status === 404,
        );
      });

      it(`through ${wire.name}: multi-part input with an image reaches the upstream as an image`, async () => {
        const user = await fundedUser(env, 1);
        const response = await client(env, user).responses.create({
          model: wire.model,
          input: [
            {
              role: 'user',
              content: [
                { type: 'input_text', text: 'what is this?' },
                { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
              ],
            },
          ],
        });
        assert.equal(response.output_text, 'Seen: what is this?');
        const sent = JSON.stringify(upstream.requests.at(-1)!.body);
        assert.match(sent, /iVBORw0KGgo=/);
        assert.match(sent, /"image_url"|"type":"image"/);
      });

      it(`through ${wire.name}: the Vercel AI SDK's default model (Responses) with generateText and streamText`, async () => {
        const user = await fundedUser(env, 1);
        const openai = createOpenAI({ baseURL: `${env.baseUrl}/api/v1`, apiKey: user.key });
        const generated = await generateText({ model: openai(wire.model), prompt: 'hello ai' });
        assert.equal(generated.text, 'Seen: hello ai');
        assert.equal(generated.usage.inputTokens, 20);
        assert.equal(generated.usage.outputTokens, 7);
        assert.equal(upstream.requests.length > 0, true);
        const streamed = streamText({ model: openai(wire.model), prompt: 'hello stream' });
        let text = '';
        for await (const delta of streamed.textStream) text += delta;
        assert.equal(text, 'Seen: hello stream');
        assert.equal((await streamed.usage).outputTokens, 7);
        assert.equal(await spent(env, user, 1), 2 * wire.charge);
      });

      it(`through ${wire.name}: the Vercel AI SDK runs a tool loop, and continues a conversation by item_reference with store`, async () => {
        const user = await fundedUser(env, 1);
        const openai = createOpenAI({ baseURL: `${env.baseUrl}/api/v1`, apiKey: user.key });
        const tools = {
          weather: tool({
            description: 'The weather of a city',
            inputSchema: jsonSchema<{ city: string }>({
              type: 'object',
              properties: { city: { type: 'string' } },
              required: ['city'],
            }),
            execute: async ({ city }) => `rain in ${city}`,
          }),
        };
        const looped = await generateText({
          model: openai(wire.model),
          prompt: 'weather in Paris?',
          tools,
          stopWhen: isStepCount(3),
        });
        assert.equal(looped.steps.length, 2);
        assert.equal(looped.text, 'Result: rain in Paris');
        const streamedLoop = streamText({
          model: openai(wire.model),
          prompt: 'weather in Paris?',
          tools,
          stopWhen: isStepCount(3),
        });
        assert.equal(await streamedLoop.text, 'Result: rain in Paris');
        assert.deepEqual(
          (await streamedLoop.steps)[0].toolCalls.map((call) => [call.toolName, call.input]),
          [['weather', { city: 'Paris' }]],
        );

        // The SDK replays its earlier assistant text as an item_reference: kept with store, refused (400) without.
        const store = { openai: { store: true } };
        const first = await generateText({ model: openai(wire.model), prompt: 'first turn', providerOptions: store });
        const messages = [
          { role: 'user' as const, content: 'first turn' },
          ...first.responseMessages,
          { role: 'user' as const, content: 'second turn' },
        ];
        const second = await generateText({ model: openai(wire.model), messages, providerOptions: store });
        assert.equal(second.text, 'Seen: second turn');
        const sent = JSON.stringify(upstream.requests.at(-1)!.body);
        assert.match(sent, /Seen: first turn/, 'the referenced assistant message reached the upstream');
        const unstored = await generateText({ model: openai(wire.model), prompt: 'first turn' });
        const replayed = [
          { role: 'user' as const, content: 'first turn' },
          ...unstored.responseMessages,
          { role: 'user' as const, content: 'second turn' },
        ];
        await assert.rejects(
          generateText({ model: openai(wire.model), messages: replayed, maxRetries: 0 }),
          (error: any) => error.statusCode === 400 && /store/.test(error.message),
        );
        const inline = await generateText({
          model: openai(wire.model),
          messages: replayed,
          providerOptions: { openai: { store: false } },
        });
        assert.equal(inline.text, 'Seen: second turn');
      });

      it(`through ${wire.name}: a stream the client cuts is charged for what was produced`, async () => {
        const user = await fundedUser(env, 1);
        const controller = new AbortController();
        const stream = await client(env, user).responses.create(
          { model: wire.stall, input: 'go', stream: true },
          { signal: controller.signal },
        );
        let text = '';
        // The SDK ends the iteration quietly when its own signal aborts it.
        for await (const event of stream) {
          if (event.type === 'response.output_text.delta') text += event.delta;
          if (text === 'one two three') controller.abort();
        }
        assert.equal(text, 'one two three');
        const [record] = await usageOf(env, user);
        assert.equal(record.status, 'client_aborted');
        assert.equal(Number(record.completion_tokens), 3);
        assert.ok(Number(record.cost) > 0 && Number(record.cost) === (await spent(env, user, 1)));
      });

      it(`through ${wire.name}: an upstream failing after output began ends in response.failed and an error event the SDK throws`, async () => {
        const user = await fundedUser(env, 1);
        const stream = await client(env, user).responses.create({ model: wire.broken, input: 'go', stream: true });
        const seen: string[] = [];
        let failed: any;
        await assert.rejects(
          async () => {
            for await (const event of stream) {
              seen.push(event.type);
              if (event.type === 'response.failed') failed = event.response;
            }
          },
          (error: any) => error.code === 'UPSTREAM_ERROR',
        );
        assert.equal(seen.at(-1), 'response.failed');
        assert.ok(seen.includes('response.output_text.delta'));
        const [record] = await usageOf(env, user);
        assert.equal(record.status, 'upstream_error');
        assert.equal(Number(record.completion_tokens), 3);
        assert.equal(Number(record.cost), await spent(env, user, 1));
        // The failed response tells what the call was charged: the tokens and the cost of the record.
        assert.deepEqual(
          [failed.usage?.input_tokens, failed.usage?.output_tokens, Math.round(failed.usage?.cost * 1e6)],
          [Number(record.prompt_tokens), 3, Number(record.cost)],
        );

        // The Vercel AI SDK sees the failure as an error part, after the text produced.
        const openai = createOpenAI({ baseURL: `${env.baseUrl}/api/v1`, apiKey: user.key });
        const parts: string[] = [];
        let failure: unknown;
        for await (const part of streamText({ model: openai(wire.broken), prompt: 'go', onError: () => {} }).stream) {
          parts.push(part.type);
          if (part.type === 'error') failure = part.error;
        }
        assert.ok(parts.includes('text-delta'), parts.join());
        assert.match(
          JSON.stringify(failure) + String((failure as Error)?.message),
          /UPSTREAM_ERROR|failed after output began/,
          parts.join(),
        );
      });
    }

    for (const wire of WIRES) {
      it(`through ${wire.name}: a request shaped like the Codex CLI's (client_metadata, a namespace tool) is answered, the namespaced call split back, charged the usage`, async () => {
        const user = await fundedUser(env, 1);
        // What Codex CLI 0.171 sends (captured), trimmed: its sub-agent tools in a namespace, its ids in client_metadata.
        const body = {
          model: wire.model,
          input: [
            { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are a coding agent.' }] },
            { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'close the agent' }] },
          ],
          tools: [
            {
              type: 'namespace',
              name: 'multi_agent_v1',
              description: 'Tools for spawning and managing sub-agents.',
              tools: [
                {
                  type: 'function',
                  name: 'close_agent',
                  description: 'Close an agent.',
                  strict: false,
                  parameters: { type: 'object', properties: { target: { type: 'string' } }, required: ['target'] },
                },
              ],
            },
            { ...weather, name: 'exec_command' },
          ],
          tool_choice: 'auto',
          parallel_tool_calls: true,
          reasoning: { summary: 'auto' },
          store: false,
          include: ['reasoning.encrypted_content'],
          prompt_cache_key: 'thread-1',
          client_metadata: { session_id: 'thread-1', turn_id: 'turn-1', 'x-codex-installation-id': 'install-1' },
        };
        const post = (payload: unknown) =>
          fetch(`${env.baseUrl}/api/v1/responses`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${user.key}`,
              'content-type': 'application/json',
              originator: 'codex_exec',
            },
            body: JSON.stringify(payload),
          });
        const first = await post(body);
        assert.equal(first.status, 200, await first.clone().text());
        const sent = upstream.requests.at(-1)!.body;
        const names = (sent.tools as any[]).map((t) => t.name ?? t.function.name);
        assert.deepEqual(names, ['multi_agent_v1__close_agent', 'exec_command']);
        const [call] = ((await first.json()) as any).output.filter((item: any) => item.type === 'function_call');
        assert.deepEqual(
          [call.namespace, call.name, call.arguments],
          ['multi_agent_v1', 'close_agent', '{"city":"Paris"}'],
        );
        // Streamed: the call's items name the namespace too.
        const streamed = await readSseFrames(await post({ ...body, stream: true }));
        const done = streamed.find(
          (f) => f.data?.type === 'response.output_item.done' && f.data.item.type === 'function_call',
        );
        assert.deepEqual([done!.data.item.namespace, done!.data.item.name], ['multi_agent_v1', 'close_agent']);
        const completed = streamed.find((f) => f.data?.type === 'response.completed')!.data.response;
        assert.equal(completed.output.find((item: any) => item.type === 'function_call').namespace, 'multi_agent_v1');
        // The next turn replays the call with its namespace, and its output.
        const second = await post({
          ...body,
          input: [...body.input, call, { type: 'function_call_output', call_id: call.call_id, output: 'closed' }],
        });
        assert.equal(second.status, 200, await second.clone().text());
        assert.equal(((await second.json()) as any).output.at(-1).content[0].text, 'Result: closed');
        assert.match(JSON.stringify(upstream.requests.at(-1)!.body.messages), /multi_agent_v1__close_agent/);
        assert.equal(await spent(env, user, 1), 3 * wire.charge);
      });
    }

    it('parallel_tool_calls: false reaches an OpenAI-compatible upstream as parallel_tool_calls and an Anthropic one as disable_parallel_tool_use', async () => {
      const user = await fundedUser(env, 1);
      const openai = client(env, user);
      await openai.responses.create({
        model: 'acme/gpt',
        input: 'weather?',
        tools: [weather],
        parallel_tool_calls: false,
      });
      assert.equal(upstream.requests.at(-1)!.body.parallel_tool_calls, false);
      await openai.responses.create({
        model: 'anthropic/claude',
        input: 'weather?',
        tools: [weather],
        tool_choice: 'required',
        parallel_tool_calls: false,
      });
      assert.deepEqual(upstream.requests.at(-1)!.body.tool_choice, { type: 'any', disable_parallel_tool_use: true });
      // Without tools OpenAI refuses the field, so none is sent; true is Anthropic's default, so nothing is added.
      await openai.responses.create({ model: 'acme/gpt', input: 'hi', parallel_tool_calls: false });
      assert.equal('parallel_tool_calls' in upstream.requests.at(-1)!.body, false);
      await openai.responses.create({
        model: 'anthropic/claude',
        input: 'hi',
        tools: [weather],
        parallel_tool_calls: true,
      });
      assert.equal(upstream.requests.at(-1)!.body.tool_choice, undefined);
    });

    it('prompt_cache_key and prompt_cache_retention reach an OpenAI upstream (the key any OpenAI-compatible one), streamed or not', async () => {
      const user = await fundedUser(env, 1);
      const openai = client(env, user);
      const cache = { prompt_cache_key: 'thread-7', prompt_cache_retention: '24h' } as const;
      await openai.responses.create({ model: 'openai/gpt', input: 'hi', ...cache });
      assert.equal(upstream.requests.at(-1)!.body.prompt_cache_key, 'thread-7');
      assert.equal(upstream.requests.at(-1)!.body.prompt_cache_retention, '24h');
      for await (const _ of await openai.responses.create({
        model: 'openai/gpt',
        input: 'hi',
        stream: true,
        ...cache,
      }));
      assert.equal(upstream.requests.at(-1)!.body.prompt_cache_key, 'thread-7');
      assert.equal(upstream.requests.at(-1)!.body.prompt_cache_retention, '24h');
      // Another OpenAI-compatible upstream gets the key (as chat's allow-list passes it), not OpenAI's retention.
      await openai.responses.create({ model: 'acme/gpt', input: 'hi', ...cache });
      assert.equal(upstream.requests.at(-1)!.body.prompt_cache_key, 'thread-7');
      assert.equal('prompt_cache_retention' in upstream.requests.at(-1)!.body, false);
      // Anthropic caches by cache_control: neither field is sent, and the call is not refused.
      await openai.responses.create({ model: 'anthropic/claude', input: 'hi', ...cache });
      assert.equal(upstream.requests.at(-1)!.path, '/v1/messages');
      assert.equal('prompt_cache_key' in upstream.requests.at(-1)!.body, false);
    });

    it("input_items lists a stored response's conversation, newest first by default, paged; only to its owner", async () => {
      const user = await fundedUser(env, 1);
      const openai = client(env, user);
      const first = await openai.responses.create({ model: 'acme/gpt', input: 'first question', store: true });
      const second = await openai.responses.create({
        model: 'acme/gpt',
        previous_response_id: first.id,
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'second question' }] }],
        store: true,
      });
      const newestFirst = (await openai.responses.inputItems.list(second.id)).data;
      // The conversation before the second answer: the first question, the first answer, the second question.
      assert.equal(newestFirst.length, 2 + first.output.length);
      const texts = (items: typeof newestFirst) =>
        items.map((item) => (item.type === 'message' ? (item.content[0] as { text: string }).text : item.type));
      assert.deepEqual(texts(newestFirst).at(0), 'second question');
      assert.deepEqual(texts(newestFirst).at(-1), 'first question');
      const oldest = newestFirst.at(-1)!;
      assert.ok(oldest.type === 'message' && (oldest.content[0] as { type: string }).type === 'input_text');
      assert.ok(newestFirst.every((item) => typeof item.id === 'string' && item.id.length > 0));
      assert.equal(new Set(newestFirst.map((item) => item.id)).size, newestFirst.length);

      // Pages of one, in order, follow `after` until has_more is false (the SDK's auto-pagination).
      const paged = [];
      for await (const item of openai.responses.inputItems.list(second.id, { order: 'asc', limit: 1 }))
        paged.push(item);
      assert.deepEqual(
        paged.map((item) => item.id),
        [...newestFirst].reverse().map((item) => item.id),
      );
      const page = await openai.responses.inputItems.list(second.id, { order: 'asc', limit: 1 });
      assert.equal(page.has_more, true);

      const stranger = await env.request('GET', `/api/v1/responses/${second.id}/input_items`, {
        token: (await fundedUser(env, 1)).key,
      });
      assert.deepEqual([stranger.status, stranger.body.error.code], [404, 'NOT_FOUND']);
      const badAfter = await env.request('GET', `/api/v1/responses/${second.id}/input_items?after=msg_nope`, {
        token: user.key,
      });
      assert.deepEqual([badAfter.status, badAfter.body.error.param], [400, 'after']);
      const badLimit = await env.request('GET', `/api/v1/responses/${second.id}/input_items?limit=101`, {
        token: user.key,
      });
      assert.equal(badLimit.status, 400);
    });

    it('the README snippet: tollgate/echo answers through the Responses API', async () => {
      const user = await fundedUser(env, 1);
      const response = await client(env, user).responses.create({
        model: 'tollgate/echo',
        instructions: 'Be brief.',
        input: 'Hello!',
      });
      assert.equal(response.status, 'completed');
      assert.ok(response.output_text.length > 0);
      assert.equal(typeof (response.usage as unknown as { cost: number }).cost, 'number');
    });

    it('an answer cut by max_output_tokens is status incomplete with reason max_output_tokens, streamed or not', async () => {
      const user = await fundedUser(env, 1);
      const input = 'one two three four five six seven eight nine ten';
      const whole = await client(env, user).responses.create({ model: 'tollgate/echo', input, max_output_tokens: 2 });
      assert.equal(whole.status, 'incomplete');
      assert.deepEqual(whole.incomplete_details, { reason: 'max_output_tokens' });
      assert.equal(whole.max_output_tokens, 2);
      const events = [];
      for await (const event of await client(env, user).responses.create({
        model: 'tollgate/echo',
        input,
        max_output_tokens: 2,
        stream: true,
      }))
        events.push(event);
      const last = events.at(-1)!;
      assert.equal(last.type, 'response.incomplete');
      assert.deepEqual((last as OpenAI.Responses.ResponseIncompleteEvent).response.incomplete_details, {
        reason: 'max_output_tokens',
      });
    });

    it("402 and 429 carry the contract's fields in the OpenAI envelope; nothing reaches the upstream", async () => {
      const before = upstream.requests.length;
      const poor = await fundedUser(env, 0);
      const refused = await env.request('POST', '/api/v1/responses', {
        token: poor.key,
        body: { model: 'acme/gpt', input: 'hi', max_output_tokens: 100 },
      });
      assert.equal(refused.status, 402, refused.text);
      assert.deepEqual(Object.keys(refused.body.error).sort(), ['available', 'code', 'message', 'required', 'type']);
      assert.equal(refused.body.error.code, 'INSUFFICIENT_CREDITS');
      assert.equal(refused.body.error.type, 'insufficient_credits_error');
      assert.equal(refused.body.error.available, 0);

      const user = await fundedUser(env, 1);
      const limited = await keyWithDailyLimit(env, user, 0.0001);
      const capped = await env.request('POST', '/api/v1/responses', {
        token: limited,
        body: { model: 'anthropic/claude', input: 'hi', max_output_tokens: 100, stream: true },
      });
      assert.equal(capped.status, 429, capped.text);
      assert.equal(capped.body.error.code, 'SPENDING_LIMIT_EXCEEDED');
      assert.equal(capped.body.error.type, 'spending_limit_error');
      assert.equal(capped.body.error.limitType, 'daily');
      assert.equal(capped.body.error.limit, 0.0001);
      assert.equal(capped.body.error.current, 0);
      assert.ok(capped.body.error.requested > 0.0001);
      assert.match(capped.body.error.resetsAt, /^\d{4}-\d\d-\d\dT00:00:00\.000Z$/);
      assert.equal(upstream.requests.length, before);
    });

    it('bad input is a 400 naming the param: built-in tools, unknown fields, file inputs; a key without ai:chat or ai:completions is a 403', async () => {
      const user = await fundedUser(env, 1);
      const post = (body: Record<string, unknown>, token = user.key) =>
        env.request('POST', '/api/v1/responses', { token, body: { model: 'acme/gpt', ...body } });
      const builtIn = await post({ input: 'hi', tools: [{ type: 'web_search' }] });
      assert.equal(builtIn.status, 400);
      assert.deepEqual([builtIn.body.error.code, builtIn.body.error.param], ['UNSUPPORTED_PARAMETER', 'tools[0].type']);
      assert.match(builtIn.body.error.message, /web_search/);
      const unknown = await post({ input: 'hi', background: true });
      assert.deepEqual([unknown.status, unknown.body.error.param], [400, 'background']);
      const file = await post({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] });
      assert.deepEqual(
        [file.status, file.body.error.code, file.body.error.param],
        [400, 'UNSUPPORTED_PARAMETER', 'input[0].content[0]'],
      );
      const noModel = await post({ model: 'acme/none', input: 'hi' });
      assert.deepEqual([noModel.status, noModel.body.error.code], [404, 'MODEL_NOT_FOUND']);
      const reference = await post({ input: [{ type: 'item_reference', id: 'msg_AAAAAAAAAAAAAAAAAAAAAAAA_0' }] });
      assert.deepEqual([reference.status, reference.body.error.param], [400, 'input[0]']);
      const modelsOnly = await fundedUser(env, 1, ['ai:models']);
      const denied = await post({ input: 'hi' }, modelsOnly.key);
      assert.deepEqual([denied.status, denied.body.error.code], [403, 'PERMISSION_DENIED']);
      const completions = await fundedUser(env, 1, ['ai:completions']);
      assert.equal((await post({ input: 'hi' }, completions.key)).status, 200);
      assert.equal(await spent(env, user, 1), 0);
    });

    it('after all of it the ledger verifies', async () => {
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.status, 200);
      assert.equal(report.body.ok, true, report.text);
    });
  },
  {
    config: {
      providers: [{ name: 'scripted', baseUrl: `${upstream.url}/v1` }],
      ANTHROPIC_BASE_URL: upstream.url,
      ANTHROPIC_API_KEY: 'sk-ant-scripted',
      OPENAI_BASE_URL: `${upstream.url}/v1`,
      OPENAI_API_KEY: 'sk-scripted',
    },
  },
);
