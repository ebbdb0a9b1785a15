import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startMockUpstream } from '../testing/mock-upstream.ts';
import type { CanonicalEvent } from '../../gateway/canonical.ts';
import type { ProviderCall } from '../types.ts';
import { anthropicAdapter } from './index.ts';

const mock = await startMockUpstream({ apiKey: 'sk-ant' });
after(() => mock.close());
const adapter = anthropicAdapter({ baseUrl: mock.url, apiKey: 'sk-ant' });
const signal = () => new AbortController().signal;

const call = (extra: Partial<ProviderCall> = {}): ProviderCall => ({
  model: 'claude-x',
  system: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  tools: [],
  maxOutputTokens: 4000,
  modelReasons: true,
  stream: false,
  ...extra,
});

describe('the Anthropic provider against a real Messages-format server', () => {
  it('a canonical call: cached system blocks, thinking budget under the cap, tool choice, sampling, stop sequences', async () => {
    await adapter.complete(
      call({
        system: [{ type: 'text', text: 'Rules', cacheControl: { type: 'ephemeral' } }],
        tools: [{ name: 'f', description: 'F', parameters: { type: 'object' } }],
        toolChoice: 'required',
        reasoning: { budgetTokens: 9000 },
        temperature: 1,
        topK: 5,
        stop: ['END'],
      }),
      { signal: signal() },
    );
    const sent = mock.requests.at(-1)!;
    assert.equal(sent.headers['x-api-key'], 'sk-ant');
    assert.deepEqual(sent.body.system, [{ type: 'text', text: 'Rules', cache_control: { type: 'ephemeral' } }]);
    assert.deepEqual(sent.body.thinking, { type: 'enabled', budget_tokens: 3999 });
    assert.deepEqual(sent.body.tool_choice, { type: 'any' });
    assert.deepEqual(sent.body.tools, [{ name: 'f', description: 'F', input_schema: { type: 'object' } }]);
    assert.equal(sent.body.max_tokens, 4000);
    assert.equal(sent.body.top_k, 5);
    assert.deepEqual(sent.body.stop_sequences, ['END']);
  });

  it('usage: input_tokens excludes the cache, so the canonical input is their sum; the result carries the native answer when native', async () => {
    const body = {
      model: 'anthropic/x',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
      metadata: {
        mock_usage: { input_tokens: 3, cache_read_input_tokens: 40, cache_creation_input_tokens: 7, output_tokens: 4 },
      },
    };
    const result = await adapter.complete(call({ native: { protocol: 'anthropic-messages', body } }), {
      signal: signal(),
    });
    assert.equal(result.usage.inputTokens, 50);
    assert.equal(result.usage.cacheReadTokens, 40);
    assert.equal(result.usage.cacheWriteTokens, 7);
    assert.equal(result.usage.outputTokens, 4);
    assert.equal((result.native?.body as any).id, 'msg_mock');
    assert.deepEqual(mock.requests.at(-1)!.body, { ...body, model: 'claude-x', max_tokens: 4000, stream: false });
  });

  it('a cross-protocol stream yields canonical events in order, usage from message_start and message_delta, end last', async () => {
    const events: CanonicalEvent[] = [];
    for await (const event of await adapter.stream(call({ stream: true }), { signal: signal() })) events.push(event);
    assert.deepEqual(
      events.map((e) => e.type),
      ['start', 'usage', 'text', 'text', 'text', 'text', 'usage', 'end'],
    );
    assert.ok(events.every((e) => !e.native));
    // message_start's input counts at once (the output not known yet), then message_delta's whole usage.
    const early = events[1] as Extract<CanonicalEvent, { type: 'usage' }>;
    assert.equal(early.usage.inputTokens, 11);
    assert.ok(Number.isNaN(early.usage.outputTokens));
    const usage = events[6] as Extract<CanonicalEvent, { type: 'usage' }>;
    assert.equal(usage.usage.inputTokens, 11);
    assert.equal(usage.usage.outputTokens, 4);
  });

  it('a mid-stream error event and a cut connection throw UpstreamError while iterating', async () => {
    for (const model of ['error-frame-1', 'cut-1']) {
      const stream = await adapter.stream(call({ model, stream: true }), { signal: signal() });
      await assert.rejects(
        (async () => {
          for await (const _ of stream);
        })(),
        (error: any) => error.name === 'UpstreamError',
        model,
      );
    }
  });
});
