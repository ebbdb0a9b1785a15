import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser, putModel, settled, usageOf } from '../../gateway/testing.ts';

/**
 * A real HTTP server speaking Anthropic Messages that answers with thinking, text and a tool call (what the
 * shared mock upstream does not), so an OpenAI chat client is seen reaching an Anthropic upstream through
 * the canonical call both ways.
 */
const usage = { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, output_tokens: 30 };
const received: any[] = [];
const upstream = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = JSON.parse(Buffer.concat(chunks).toString());
  received.push(body);
  const content = [
    { type: 'thinking', thinking: 'The user wants weather.', signature: 'sig-1' },
    { type: 'text', text: 'Let me look.' },
    { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
  ];
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(
      JSON.stringify({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: body.model,
        content,
        stop_reason: 'tool_use',
        usage,
      }),
    );
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (type: string, data: object) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const { output_tokens: _output, ...input } = usage;
  event('message_start', {
    message: {
      id: 'msg_2',
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      usage: { ...input, output_tokens: 1 },
    },
  });
  event('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } });
  event('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'The user wants weather.' } });
  event('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'sig-1' } });
  event('content_block_stop', { index: 0 });
  event('content_block_start', { index: 1, content_block: { type: 'text', text: '' } });
  event('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Let me look.' } });
  event('content_block_stop', { index: 1 });
  event('content_block_start', {
    index: 2,
    content_block: { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} },
  });
  event('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"city":' } });
  event('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } });
  event('content_block_stop', { index: 2 });
  event('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 30 } });
  event('message_stop', {});
  res.end();
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
after(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

/** Credits per 1M tokens, so micro-credits per token: prompt 1, cache read 1, cache write 2, completion 3. */
const pricing = { prompt: 1, completion: 3, cacheRead: 1, cacheWrite: 2 };
/** 10 × 1 + 100 × 1 + 20 × 2 + 30 × 3 micro-credits. */
const CHARGE = 10 + 100 + 40 + 90;

const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'weather',
      description: 'Weather of a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
];
const messages = [
  { role: 'system' as const, content: 'Use tools.' },
  { role: 'user' as const, content: 'Weather in Paris?' },
];

describeEachDatabase(
  'OpenAI chat through an Anthropic upstream: thinking, text and a tool call translated both ways',
  (env) => {
    before(async () => {
      await putModel(env, 'anthropic/claude-tools', {
        provider: 'anthropic',
        upstreamModel: 'claude-t',
        pricing,
        maxOutputTokens: 500,
      });
      await putModel(env, 'openrouter/claude', {
        provider: 'openrouter',
        upstreamModel: 'anthropic/claude-t',
        pricing,
        maxOutputTokens: 500,
      });
    });

    it('non-streamed: the SDK gets the tool call, finish_reason tool_calls, the reasoning, and usage with cache details; charged exactly', async () => {
      const user = await fundedUser(env, 1);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const completion = await client.chat.completions.create({
        model: 'anthropic/claude-tools',
        messages,
        tools,
        tool_choice: 'auto',
      });
      const sent = received.at(-1);
      assert.equal(sent.system, 'Use tools.');
      assert.deepEqual(sent.tools, [
        { name: 'weather', description: 'Weather of a city', input_schema: tools[0].function.parameters },
      ]);
      assert.deepEqual(sent.tool_choice, { type: 'auto' });
      const [choice] = completion.choices;
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.content, 'Let me look.');
      assert.equal((choice.message as any).reasoning, 'The user wants weather.');
      assert.deepEqual(choice.message.tool_calls, [
        { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
      ]);
      assert.equal(completion.model, 'anthropic/claude-tools');
      assert.equal(completion.usage?.prompt_tokens, 130);
      assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, 100);
      assert.equal((completion.usage?.prompt_tokens_details as any).cache_write_tokens, 20);
      assert.equal((completion.usage as any).cost, CHARGE / 1_000_000);
      assert.equal((await settled(env, user)).balance, 1_000_000 - CHARGE);
    });

    it('parallel_tool_calls: false reaches Anthropic as tool_choice.disable_parallel_tool_use', async () => {
      const user = await fundedUser(env, 1);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      await client.chat.completions.create({
        model: 'anthropic/claude-tools',
        messages,
        tools,
        parallel_tool_calls: false,
      });
      assert.deepEqual(received.at(-1).tool_choice, { type: 'auto', disable_parallel_tool_use: true });
    });

    it("cache_control on chat content parts (system, user, assistant, tool) reaches Anthropic on the blocks, as OpenRouter's chat takes it; prompt_cache_key is accepted", async () => {
      const user = await fundedUser(env, 1);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const ephemeral = { type: 'ephemeral' };
      const marked = (text: string) =>
        ({ type: 'text', text, cache_control: ephemeral }) as { type: 'text'; text: string };
      for (const stream of [false, true]) {
        const answer = await client.chat.completions.create({
          model: 'anthropic/claude-tools',
          stream,
          prompt_cache_key: 'thread-9',
          prompt_cache_retention: '24h',
          messages: [
            { role: 'system', content: [{ type: 'text', text: 'Rules.' }, marked('A long manual.')] },
            { role: 'user', content: [marked('Weather in Paris?')] },
            {
              role: 'assistant',
              content: [marked('Let me look.')],
              tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{}' } }],
            },
            { role: 'tool', tool_call_id: 'toolu_1', content: [marked('sunny')] },
          ],
          tools,
        });
        if (stream) for await (const _ of answer as AsyncIterable<unknown>);
        const sent = received.at(-1);
        assert.deepEqual(sent.system, [
          { type: 'text', text: 'Rules.' },
          { type: 'text', text: 'A long manual.', cache_control: ephemeral },
        ]);
        assert.deepEqual(sent.messages, [
          { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?', cache_control: ephemeral }] },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Let me look.', cache_control: ephemeral },
              { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} },
            ],
          },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny', cache_control: ephemeral }],
          },
        ]);
        assert.equal('prompt_cache_key' in sent, false);
      }
    });

    it('a chat cache_control with a 1-hour ttl is refused before the hold for Anthropic and OpenRouter models without a cacheWrite1h price', async () => {
      const user = await fundedUser(env, 1);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const count = received.length;
      for (const model of ['anthropic/claude-tools', 'openrouter/claude']) {
        const error: any = await client.chat.completions
          .create({
            model,
            messages: [
              {
                role: 'user',
                content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral', ttl: '1h' } } as any],
              },
            ],
          })
          .catch((e) => e);
        assert.equal(error.status, 400, model);
        assert.equal(error.error.code, 'UNSUPPORTED_PARAMETER');
        assert.equal(error.error.param, 'messages[0].content[0].cache_control');
        assert.match(
          error.error.message,
          /ttl "1h" is refused for ".+": the model has no 1-hour cache-write price \(pricing\.cacheWrite1h\)/,
        );
      }
      assert.equal(received.length, count);
      assert.equal((await settled(env, user)).balance, 1_000_000);
    });

    it("a chat tool's cache_control (OpenRouter caches tool definitions for Anthropic models) is held to the content parts' rules on an OpenRouter model: a 1-hour ttl without a cacheWrite1h price, or a lifetime with no price, is refused naming it, nothing held or sent", async () => {
      const user = await fundedUser(env, 1);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const count = received.length;
      const refusals: Array<[object, RegExp]> = [
        [
          { type: 'ephemeral', ttl: '1h' },
          /^tools\[0\]\.cache_control\.ttl "1h" is refused for "openrouter\/claude": the model has no 1-hour cache-write price/,
        ],
        [{ type: 'ephemeral', ttl: '24h' }, /cache_control\.ttl "24h" is refused/],
      ];
      for (const [control, says] of refusals) {
        const error: any = await client.chat.completions
          .create({ model: 'openrouter/claude', messages, tools: [{ ...tools[0], cache_control: control } as any] })
          .catch((e) => e);
        assert.equal(error.status, 400, JSON.stringify(control));
        assert.equal(error.error.code, 'UNSUPPORTED_PARAMETER');
        assert.equal(error.error.param, 'tools[0].cache_control');
        assert.match(error.error.message, says);
      }
      assert.equal(received.length, count);
      assert.equal((await settled(env, user)).balance, 1_000_000);
    });

    it('a chat cache_control whose ttl is not a string ("1h" in an array) is refused, never sent on as a lifetime the hold did not price', async () => {
      const user = await fundedUser(env, 1);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const count = received.length;
      for (const model of ['anthropic/claude-tools', 'openrouter/claude']) {
        const error: any = await client.chat.completions
          .create({
            model,
            messages: [
              {
                role: 'user',
                content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral', ttl: ['1h'] } } as any],
              },
            ],
          })
          .catch((e) => e);
        assert.equal(error.status, 400, model);
        assert.equal(error.error.code, 'UNSUPPORTED_PARAMETER');
        assert.match(error.error.message, /cache_control\.ttl \["1h"\] is refused/);
      }
      assert.equal(received.length, count);
      assert.equal((await settled(env, user)).balance, 1_000_000);
    });

    it('streamed: the SDK assembles the tool call from deltas, sees reasoning deltas and the usage chunk; charged exactly', async () => {
      const user = await fundedUser(env, 1);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: 'anthropic/claude-tools',
        messages,
        tools,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let reasoning = '';
      let args = '';
      let name = '';
      let finish: string | null = null;
      let reported: any;
      for await (const chunk of stream) {
        const delta: any = chunk.choices[0]?.delta ?? {};
        text += delta.content ?? '';
        reasoning += delta.reasoning ?? '';
        for (const call of delta.tool_calls ?? []) {
          name += call.function?.name ?? '';
          args += call.function?.arguments ?? '';
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
        reported ??= chunk.usage;
        assert.equal(chunk.model, 'anthropic/claude-tools');
      }
      assert.equal(text, 'Let me look.');
      assert.equal(reasoning, 'The user wants weather.');
      assert.equal(name, 'weather');
      assert.deepEqual(JSON.parse(args), { city: 'Paris' });
      assert.equal(finish, 'tool_calls');
      assert.equal(reported.prompt_tokens, 130);
      assert.equal(reported.completion_tokens, 30);
      assert.equal(reported.cost, CHARGE / 1_000_000);
      assert.equal((await settled(env, user)).balance, 1_000_000 - CHARGE);
      const [record] = await usageOf(env, user);
      assert.equal(record.status, 'ok');
      assert.deepEqual(JSON.parse(String(record.details)), {
        cachedRead: 100,
        cacheWrite: 20,
        audioIn: 0,
        reasoning: 0,
        audioOut: 0,
        webSearches: 0,
      });
    });

    it('the tool round trip: the assistant tool call and the tool result go back to Anthropic as tool_use and tool_result blocks', async () => {
      const user = await fundedUser(env, 1);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      await client.chat.completions.create({
        model: 'anthropic/claude-tools',
        tools,
        messages: [
          ...messages,
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
        ],
      });
      assert.deepEqual(received.at(-1).messages, [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
      ]);
    });
  },
  {
    config: {
      ANTHROPIC_BASE_URL: upstreamUrl,
      ANTHROPIC_API_KEY: 'sk-test',
      OPENROUTER_BASE_URL: `${upstreamUrl}/v1`,
      OPENROUTER_API_KEY: 'sk-or-test',
    },
  },
);
