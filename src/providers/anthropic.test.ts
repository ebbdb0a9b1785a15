import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { startMockUpstream } from './testing/mock-upstream.ts';
import { fundedUser, putModel, readSseFrames, settled, usageOf } from '../gateway/testing.ts';
import { parseChat } from '../protocols/openai-chat/parse.ts';
import { renderCompletion } from '../protocols/openai-chat/render.ts';
import { canonicalUsageOfAnthropic, fromAnthropicResult, toAnthropicMessages } from './anthropic/wire.ts';

const mock = await startMockUpstream({ apiKey: 'sk-ant-mock' });
after(() => mock.close());

describeEachDatabase(
  'Anthropic Messages behind the OpenAI chat format',
  (env) => {
    before(async () => {
      await putModel(env, 'anthropic/claude-test', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: { prompt: 1, completion: 1 },
        maxOutputTokens: 300,
      });
      await putModel(env, 'anthropic/claude-cut', {
        provider: 'anthropic',
        upstreamModel: 'cut-2',
        pricing: { prompt: 0, completion: 1_000_000 },
        maxOutputTokens: 300,
      });
    });

    it('a chat is translated to /v1/messages (system, max_tokens, stop, headers) and back, usage included', async () => {
      const user = await fundedUser(env, 5);
      const response = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: {
          model: 'anthropic/claude-test',
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'hi' },
          ],
          stop: 'END',
          temperature: 0.5,
        },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.choices[0].message.content, 'alpha beta gamma delta');
      assert.equal(response.body.choices[0].finish_reason, 'stop');
      assert.deepEqual(response.body.usage, {
        prompt_tokens: 11,
        completion_tokens: 4,
        total_tokens: 15,
        prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
        cost: 0.000015,
      });
      const sent = mock.requests.at(-1)!;
      assert.equal(sent.path, '/v1/messages');
      assert.equal(sent.headers['x-api-key'], 'sk-ant-mock');
      assert.equal(sent.headers['anthropic-version'], '2023-06-01');
      assert.equal(sent.body.system, 'Be brief.');
      assert.deepEqual(sent.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
      assert.equal(sent.body.max_tokens, 300);
      assert.deepEqual(sent.body.stop_sequences, ['END']);
      assert.equal((await settled(env, user)).balance, 5_000_000 - 15);
    });

    it('an Anthropic stream becomes OpenAI chunks with a usage frame, and is billed on its usage', async () => {
      const user = await fundedUser(env, 5);
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'anthropic/claude-test',
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      const frames = await readSseFrames(response);
      assert.equal(frames.at(-1)!.data, '[DONE]');
      const chunks = frames.slice(0, -1).map((f) => f.data);
      assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'alpha beta gamma delta');
      assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'anthropic/claude-test'));
      assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'stop');
      assert.deepEqual(chunks.at(-1).usage, {
        prompt_tokens: 11,
        completion_tokens: 4,
        total_tokens: 15,
        prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
        cost: 0.000015,
      });
      assert.equal((await settled(env, user)).balance, 5_000_000 - 15);
    });

    it('an Anthropic stream cut after output ends with an error frame and is charged for the words produced', async () => {
      const user = await fundedUser(env, 500);
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'anthropic/claude-cut',
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      const frames = await readSseFrames(response);
      assert.equal(frames.at(-1)!.event, 'error');
      assert.equal((await settled(env, user)).balance, 500_000_000 - 2_000_000);
      const [record] = await usageOf(env, user);
      assert.equal(record.status, 'upstream_error');
    });
  },
  { config: { ANTHROPIC_BASE_URL: mock.url, ANTHROPIC_API_KEY: 'sk-ant-mock' } },
);

it('tools, tool calls, tool results and images translate to Anthropic blocks and back (through the canonical call, as the pipeline does)', () => {
  const call = parseChat({
    model: 'claude-x',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'weather?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ],
    tools: [
      {
        type: 'function',
        function: {
          name: 'weather',
          description: 'Weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ],
    tool_choice: 'required',
    max_completion_tokens: 99,
  });
  const request = toAnthropicMessages(
    { ...call, model: 'claude-x', maxOutputTokens: call.maxOutputTokens!, modelReasons: true },
    false,
  );
  assert.deepEqual(request.messages, [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'weather?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
      ],
    },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' }] },
  ]);
  assert.deepEqual(request.tools, [
    {
      name: 'weather',
      description: 'Weather',
      input_schema: { type: 'object', properties: { city: { type: 'string' } } },
    },
  ]);
  assert.deepEqual(request.tool_choice, { type: 'any' });
  assert.equal(request.max_tokens, 99);

  const message = {
    id: 'msg_1',
    content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }],
    stop_reason: 'tool_use',
    usage: { input_tokens: 20, output_tokens: 5, cache_read_input_tokens: 3 },
  };
  const completion = renderCompletion({ ...fromAnthropicResult(message, false), model: 'claude-x' });
  assert.equal(completion.choices[0].finish_reason, 'tool_calls');
  assert.equal(completion.choices[0].message.content, null);
  assert.deepEqual(completion.choices[0].message.tool_calls, [
    { id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
  ]);
  // Anthropic's input_tokens excludes the cache: the cache read is added to prompt_tokens and restated as cached_tokens.
  // (the report the gateway's sanitizer reads, before it prices it and adds the cost)
  assert.deepEqual(canonicalUsageOfAnthropic(message.usage).reported, {
    prompt_tokens: 23,
    completion_tokens: 5,
    total_tokens: 28,
    prompt_tokens_details: { cached_tokens: 3, cache_write_tokens: 0 },
  });
});
