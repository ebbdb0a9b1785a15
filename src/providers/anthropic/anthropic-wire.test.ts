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
        // A generation that takes a budget (Claude 4.5); a newer one takes adaptive thinking only (below).
        model: 'claude-sonnet-4-5-20250929',
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

  it('a thinking budget to a model that takes adaptive thinking only (Opus 4.7, Claude 5, an id that names no version) is adaptive thinking with the effort of its share of the cap; 4.6 keeps the budget; a model that does not reason gets neither', async () => {
    const thinkingOf = async (model: string, budgetTokens: number, modelReasons = true) => {
      await adapter.complete(call({ model, reasoning: { budgetTokens }, modelReasons }), { signal: signal() });
      const { thinking, output_config } = mock.requests.at(-1)!.body;
      return { thinking, output_config };
    };
    for (const model of ['claude-opus-4-7', 'claude-opus-5', 'claude-x']) {
      assert.deepEqual(await thinkingOf(model, 3600), {
        thinking: { type: 'adaptive' },
        output_config: { effort: 'high' },
      });
      assert.deepEqual(await thinkingOf(model, 2000), {
        thinking: { type: 'adaptive' },
        output_config: { effort: 'medium' },
      });
    }
    assert.deepEqual(await thinkingOf('claude-opus-4-6', 3600), {
      thinking: { type: 'enabled', budget_tokens: 3600 },
      output_config: undefined,
    });
    assert.deepEqual(await thinkingOf('claude-opus-4-7', 3600, false), {
      thinking: undefined,
      output_config: undefined,
    });
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
