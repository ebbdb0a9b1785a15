import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startMockUpstream } from '../testing/mock-upstream.ts';
import type { CanonicalEvent } from '../../gateway/canonical.ts';
import type { ProviderCall } from '../types.ts';
import { openAiCompatibleAdapter } from './index.ts';
import { fromOpenAiCompletion, OpenAiStreamReader } from './wire.ts';

const mock = await startMockUpstream({ apiKey: 'sk-oa' });
after(() => mock.close());
const adapter = openAiCompatibleAdapter({ name: 'openai', baseUrl: `${mock.url}/v1`, apiKey: 'sk-oa' });
const signal = () => new AbortController().signal;

const base: ProviderCall = {
  model: 'default-model',
  system: [{ type: 'text', text: 'Be brief.' }],
  tools: [],
  maxOutputTokens: 77,
  modelReasons: false,
  stream: false,
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', url: 'https://img.example/a.png', detail: 'low' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'thinking…' },
        { type: 'tool_call', id: 'c1', name: 'find', arguments: '{"q":1}' },
      ],
    },
    { role: 'tool', content: [{ type: 'tool_result', callId: 'c1', content: 'found' }] },
  ],
};

describe('the OpenAI-compatible provider against a real OpenAI-format server', () => {
  it('builds a chat body from a canonical call: system message, image part, tool calls and results, cap as max_completion_tokens for openai', async () => {
    const result = await adapter.complete(
      { ...base, reasoning: { effort: 'low' }, responseFormat: { type: 'json_object' }, stop: ['X'] },
      { signal: signal() },
    );
    const sent = mock.requests.at(-1)!;
    assert.equal(sent.headers.authorization, 'Bearer sk-oa');
    assert.deepEqual(sent.body.messages, [
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'https://img.example/a.png', detail: 'low' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'find', arguments: '{"q":1}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'found' },
    ]);
    assert.equal(sent.body.max_completion_tokens, 77);
    assert.equal(sent.body.max_tokens, undefined);
    assert.equal(sent.body.reasoning_effort, 'low');
    assert.deepEqual(sent.body.response_format, { type: 'json_object' });
    assert.deepEqual(sent.body.stop, ['X']);
    assert.equal(sent.body.stream, false);
    assert.deepEqual(result.content, [{ type: 'text', text: 'alpha beta gamma delta' }]);
    assert.equal(result.native, undefined);
    assert.equal(result.usage.inputTokens, 11);
    assert.equal(result.usage.outputTokens, 4);
  });

  it('a system of several blocks (Anthropic system array, Responses instructions and developer messages) is one system message of paragraphs, not run together', async () => {
    await adapter.complete(
      {
        ...base,
        system: [
          { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1; cc_entrypoint=sdk-cli;' },
          { type: 'text', text: 'You are a Claude agent.' },
        ],
      },
      { signal: signal() },
    );
    assert.deepEqual(mock.requests.at(-1)!.body.messages[0], {
      role: 'system',
      content: 'x-anthropic-billing-header: cc_version=2.1; cc_entrypoint=sdk-cli;\n\nYou are a Claude agent.',
    });
  });

  it('streams canonical events (no native frames) for a call from another protocol; metadata is not sent (OpenAI refuses it without store)', async () => {
    const events: CanonicalEvent[] = [];
    for await (const event of await adapter.stream(
      { ...base, stream: true, metadata: { user_id: 'u1' } },
      { signal: signal() },
    ))
      events.push(event);
    const sent = mock.requests.at(-1)!.body;
    assert.equal(sent.stream_options.include_usage, true);
    assert.equal(sent.metadata, undefined);
    assert.equal(sent.store, undefined);
    assert.deepEqual(
      events.map((e) => e.type),
      ['start', 'text', 'text', 'text', 'text', 'usage', 'end'],
    );
    assert.ok(events.every((e) => e.native === undefined));
    assert.equal(
      events
        .filter((e) => e.type === 'text')
        .map((e) => (e as { delta: string }).delta)
        .join(''),
      'alpha beta gamma delta',
    );
  });

  it('reads OpenAI usage details into canonical usage: cache reads (or DeepSeek hits), cache writes, reasoning, audio', () => {
    const usage = {
      prompt_tokens: 30,
      completion_tokens: 4,
      prompt_tokens_details: { cached_tokens: 20, cache_write_tokens: 3, audio_tokens: 2 },
      completion_tokens_details: { reasoning_tokens: 1, audio_tokens: 1 },
    };
    const chunk = { id: 'c', object: 'chat.completion.chunk' as const, created: 1, model: 'm', choices: [], usage };
    const [, event] = new OpenAiStreamReader(false).events(chunk);
    assert.ok(event.type === 'usage');
    assert.deepEqual(
      { ...event.usage, reported: undefined },
      {
        inputTokens: 30,
        outputTokens: 4,
        cacheReadTokens: 20,
        cacheWriteTokens: 3,
        reasoningTokens: 1,
        audioInputTokens: 2,
        audioOutputTokens: 1,
        webSearches: undefined,
        reported: undefined,
      },
    );
    assert.equal(event.usage.reported, usage, 'the report is kept as sent for the sanitizer');
    const deepSeek = new OpenAiStreamReader(false).events({
      ...chunk,
      usage: { prompt_tokens: 9, completion_tokens: 1, prompt_cache_hit_tokens: 5 },
    });
    assert.equal((deepSeek[1] as Extract<CanonicalEvent, { type: 'usage' }>).usage.cacheReadTokens, 5);
  });

  it('relays an OpenAI chat body natively: fields as sent, one native frame per upstream chunk', async () => {
    const body = {
      model: 'acme/x',
      messages: [{ role: 'user', content: 'hi' }],
      seed: 7,
      max_tokens: 500,
      stream: true,
    };
    const events: CanonicalEvent[] = [];
    for await (const event of await adapter.stream(
      { ...base, stream: true, native: { protocol: 'openai-chat', body } },
      { signal: signal() },
    ))
      events.push(event);
    const sent = mock.requests.at(-1)!.body;
    assert.deepEqual(sent, {
      model: 'default-model',
      messages: [{ role: 'user', content: 'hi' }],
      seed: 7,
      max_tokens: 77,
      stream: true,
      stream_options: { include_usage: true },
    });
    // role chunk, 4 words, finish chunk, usage chunk: 7 frames, each on exactly one event.
    assert.equal(events.filter((e) => e.native).length, 7);
    assert.equal(events.at(-1)!.type, 'end');
  });

  it('a failure before output is an UpstreamError with the upstream status; a broken stream throws while iterating', async () => {
    await assert.rejects(
      adapter.complete({ ...base, model: 'status-503' }, { signal: signal() }),
      (error: any) => error.name === 'UpstreamError' && error.status === 503,
    );
    const stream = await adapter.stream({ ...base, model: 'cut-1', stream: true }, { signal: signal() });
    await assert.rejects(
      (async () => {
        for await (const _ of stream);
      })(),
      (error: any) => error.name === 'UpstreamError' && error.status === 502,
    );
  });

  it("a native chat's other choices (n > 1) are kept for billing: otherChoices, and deltas tagged with their choice", () => {
    const completion = {
      id: 'c',
      object: 'chat.completion' as const,
      created: 1,
      model: 'm',
      choices: [0, 1].map((index) => ({
        index,
        message: { role: 'assistant', content: `answer ${index}` },
        finish_reason: 'stop',
      })),
    };
    const result = fromOpenAiCompletion(completion, true);
    assert.deepEqual(result.content, [{ type: 'text', text: 'answer 0' }]);
    assert.deepEqual(result.otherChoices, [[{ type: 'text', text: 'answer 1' }]]);
    const chunk = {
      id: 'c',
      object: 'chat.completion.chunk' as const,
      created: 1,
      model: 'm',
      choices: [0, 1].map((index) => ({ index, delta: { content: `w${index}` }, finish_reason: null })),
    };
    const native = new OpenAiStreamReader(true).events(chunk);
    assert.deepEqual(
      native.map((e) => [e.type, (e as any).choice, Boolean(e.native)]),
      [
        ['start', undefined, false],
        ['text', undefined, false],
        ['text', 1, true],
      ],
    );
    const canonical = new OpenAiStreamReader(false).events(chunk);
    assert.deepEqual(
      canonical.map((e) => e.type),
      ['start', 'text'],
      'another protocol never sees the other choices',
    );
  });
});
