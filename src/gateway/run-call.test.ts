import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import type { Principal } from '../platform/http/principal.ts';
import { fundedUser, putModel, settled, usageOf, type FundedUser } from './testing.ts';
import type { CanonicalCall, CanonicalEvent } from './canonical.ts';
import { completeCall, streamCall } from './run-call.ts';

const mock = await startMockUpstream({ apiKey: 'sk-mock' });
after(() => mock.close());

/** 1 credit per 1M tokens is 1 micro-credit per token. */
const pricing = { prompt: 1, completion: 3, cacheRead: 1, cacheWrite: 2 };

const principalOf = (user: FundedUser): Principal => ({
  kind: 'api_key',
  userId: user.session.userId,
  appId: null,
  keyId: null,
  scopes: new Set(['ai:chat']),
});

/** A plain canonical call, as a protocol with no native body (Responses, say) would hand it over. */
function call(model: string, extra: Partial<CanonicalCall> = {}): CanonicalCall {
  return {
    model,
    system: [{ type: 'text', text: 'Be brief.' }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hello there' }] }],
    tools: [],
    maxOutputTokens: null,
    stream: false,
    ...extra,
  };
}

async function collect(stream: AsyncIterable<CanonicalEvent>): Promise<CanonicalEvent[]> {
  const events: CanonicalEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describeEachDatabase(
  'the call pipeline (completeCall, streamCall) over every provider',
  (env: TestEnv) => {
    before(async () => {
      await putModel(env, 'acme/oa', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing,
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/oa-cut', { provider: 'mock', upstreamModel: 'cut-2', pricing, maxOutputTokens: 100 });
      await putModel(env, 'acme/oa-down', {
        provider: 'mock',
        upstreamModel: 'status-503',
        pricing,
        maxOutputTokens: 100,
        fallbacks: ['acme/oa'],
      });
      await putModel(env, 'anthropic/claude-p', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing,
        maxOutputTokens: 200,
        imageTokens: 1000,
      });
    });

    it('echo answers a canonical call deterministically, usage priced and charged, model the public id', async () => {
      const user = await fundedUser(env, 1);
      const result = await completeCall(
        env.service.ctx,
        principalOf(user),
        call('tollgate/echo'),
        new AbortController().signal,
      );
      assert.equal(result.model, 'tollgate/echo');
      assert.deepEqual(result.content, [{ type: 'text', text: 'hello there' }]);
      assert.equal(result.finishReason, 'stop');
      assert.ok(result.usage.inputTokens > 0 && result.usage.outputTokens === 2, JSON.stringify(result.usage));
      const [record] = await usageOf(env, user);
      assert.equal(Number(record.prompt_tokens), result.usage.inputTokens);
      assert.equal(Number(record.completion_tokens), 2);
      assert.equal(result.usage.cost, Number(record.cost) / 1_000_000);
    });

    it('echo streams a required tool call in pieces, then the billed usage, then end', async () => {
      const user = await fundedUser(env, 1);
      const tools = [{ name: 'lookup', parameters: { type: 'object', properties: { text: { type: 'string' } } } }];
      const stream = await streamCall(
        env.service.ctx,
        principalOf(user),
        call('tollgate/echo', { tools, toolChoice: 'required', stream: true }),
        new AbortController().signal,
      );
      const events = await collect(stream);
      assert.deepEqual(
        events.map((e) => e.type),
        ['start', 'tool_call_start', 'tool_call_delta', 'tool_call_delta', 'usage', 'end'],
      );
      const args = events.flatMap((e) => (e.type === 'tool_call_delta' ? [e.arguments] : [])).join('');
      assert.deepEqual(JSON.parse(args), { text: 'hello there' });
      const end = events.at(-1)!;
      assert.equal(end.type === 'end' && end.finishReason, 'tool_calls');
      const usage = events.at(-2)!;
      assert.ok(usage.type === 'usage' && typeof usage.usage.cost === 'number' && usage.usage.cost > 0);
      assert.equal((await settled(env, user)).reserved, 0);
    });

    it('a cross-protocol call reaches an OpenAI-compatible upstream as a chat body (system, tools, cap) and comes back canonical', async () => {
      const user = await fundedUser(env, 1);
      const tools = [{ name: 'lookup', description: 'Looks up', parameters: { type: 'object' } }];
      const result = await completeCall(
        env.service.ctx,
        principalOf(user),
        call('acme/oa', { tools, toolChoice: { name: 'lookup' }, temperature: 0.2, maxOutputTokens: 50 }),
        new AbortController().signal,
      );
      const sent = mock.requests.at(-1)!.body;
      assert.deepEqual(sent.messages, [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello there' },
      ]);
      assert.deepEqual(sent.tools, [
        { type: 'function', function: { name: 'lookup', description: 'Looks up', parameters: { type: 'object' } } },
      ]);
      assert.deepEqual(sent.tool_choice, { type: 'function', function: { name: 'lookup' } });
      assert.equal(sent.max_tokens, 50);
      assert.equal(sent.temperature, 0.2);
      assert.deepEqual(result.content, [{ type: 'text', text: 'alpha beta gamma delta' }]);
      // Reported: 11 prompt × 1 + 4 completion × 3 micro-credits.
      assert.equal(result.usage.cost, 0.000023);
      assert.equal(result.model, 'acme/oa');
    });

    it('a fallback answers when the model asked for is down before output, and the result names the fallback', async () => {
      const user = await fundedUser(env, 1);
      const result = await completeCall(
        env.service.ctx,
        principalOf(user),
        call('acme/oa-down'),
        new AbortController().signal,
      );
      assert.equal(result.model, 'acme/oa');
      assert.equal((await settled(env, user)).balance, 1_000_000 - 23);
    });

    it('an Anthropic upstream gets a native Messages body as sent (cache_control, thinking kept) and its frames come back tagged native', async () => {
      const user = await fundedUser(env, 1);
      const body = {
        model: 'anthropic/claude-p',
        max_tokens: 64,
        stream: true,
        system: [{ type: 'text', text: 'Long context', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
        metadata: {
          mock_usage: {
            input_tokens: 5,
            cache_read_input_tokens: 100,
            cache_creation_input_tokens: 10,
            output_tokens: 4,
          },
        },
      };
      const canonical = call('anthropic/claude-p', {
        stream: true,
        maxOutputTokens: 64,
        native: { protocol: 'anthropic-messages', body },
      });
      const stream = await streamCall(env.service.ctx, principalOf(user), canonical, new AbortController().signal);
      assert.equal(stream.native, true);
      const events = await collect(stream);
      const sent = mock.requests.at(-1)!.body;
      assert.deepEqual(sent, { ...body, model: 'claude-x', max_tokens: 64, stream: true });
      const frames = events.filter((e) => e.native).map((e) => (e.native!.frame as any).type);
      assert.deepEqual(frames, [
        'message_start',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ]);
      // message_start's input counts come first (the output not yet known), message_delta's whole usage last.
      const [early, usage] = events.filter((e) => e.type === 'usage');
      assert.ok(early?.type === 'usage' && usage?.type === 'usage');
      assert.equal(early.usage.inputTokens, 115);
      // Anthropic's input excludes the cache: 5 + 100 read + 10 written; charged 5×1 + 100×1 + 10×2 + 4×3.
      assert.equal(usage.usage.inputTokens, 115);
      assert.equal(usage.usage.cacheReadTokens, 100);
      assert.equal(usage.usage.cacheWriteTokens, 10);
      assert.equal(usage.usage.cost, 0.000137);
      assert.equal((await settled(env, user)).balance, 1_000_000 - 137);
    });

    it('Anthropic streams one after another reuse one upstream connection (each stream is read to its end)', async () => {
      const user = await fundedUser(env, 1);
      const once = async () => {
        const stream = await streamCall(
          env.service.ctx,
          principalOf(user),
          call('anthropic/claude-p', { stream: true }),
          new AbortController().signal,
        );
        const events = await collect(stream);
        assert.equal(events.at(-1)!.type, 'end');
        await mock.settled(mock.requests.length);
      };
      await once();
      const before = mock.connections();
      for (let i = 0; i < 4; i++) await once();
      assert.equal(mock.connections() - before, 0, 'no new connection to the upstream');
    });

    it('an Anthropic upstream takes a cross-protocol call: system, image, tool call and result, signed thinking', async () => {
      const user = await fundedUser(env, 1);
      const canonical = call('anthropic/claude-p', {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image', url: 'data:image/png;base64,AAAA' },
            ],
          },
          {
            role: 'assistant',
            content: [
              { type: 'reasoning', text: 'hmm', signature: 'sig' },
              { type: 'tool_call', id: 'call_1', name: 'look', arguments: '{"q":"x"}' },
            ],
          },
          { role: 'tool', content: [{ type: 'tool_result', callId: 'call_1', content: 'a cat' }] },
        ],
        tools: [{ name: 'look', parameters: { type: 'object' } }],
        reasoning: { budgetTokens: 2000 },
        maxOutputTokens: 150,
      });
      const result = await completeCall(env.service.ctx, principalOf(user), canonical, new AbortController().signal);
      const sent = mock.requests.at(-1)!.body;
      assert.equal(sent.system, 'Be brief.');
      assert.deepEqual(sent.messages, [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig' },
            { type: 'tool_use', id: 'call_1', name: 'look', input: { q: 'x' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'a cat' }] },
      ]);
      assert.deepEqual(sent.tools, [{ name: 'look', input_schema: { type: 'object' } }]);
      assert.equal(sent.max_tokens, 150);
      assert.equal(result.native, undefined);
      assert.deepEqual(result.content, [{ type: 'text', text: 'alpha beta gamma delta' }]);
      assert.equal(result.usage.inputTokens, 11);
    });

    it('a stream the consumer leaves is settled client_aborted for what it produced, and the upstream is stopped', async () => {
      const user = await fundedUser(env, 1);
      const stream = await streamCall(
        env.service.ctx,
        principalOf(user),
        call('acme/oa', { stream: true }),
        new AbortController().signal,
      );
      for await (const event of stream) if (event.type === 'text') break;
      const [record] = await usageOf(env, user);
      assert.equal(record.status, 'client_aborted');
      assert.ok(Number(record.completion_tokens) >= 1);
      assert.equal((await settled(env, user)).reserved, 0);
    });

    it('a stream given up before its first event is read (return() first) is still settled, once', async () => {
      const user = await fundedUser(env, 1);
      const stream = await streamCall(
        env.service.ctx,
        principalOf(user),
        call('acme/oa', { stream: true }),
        new AbortController().signal,
      );
      const iterator = stream[Symbol.asyncIterator]();
      await iterator.return!();
      assert.deepEqual(await iterator.next(), { done: true, value: undefined });
      const records = await usageOf(env, user);
      assert.equal(records.length, 1);
      assert.equal(records[0].status, 'client_aborted');
      assert.equal((await settled(env, user)).reserved, 0);
    });

    it('a stream the upstream breaks after output yields an error event and is settled upstream_error', async () => {
      const user = await fundedUser(env, 1);
      const stream = await streamCall(
        env.service.ctx,
        principalOf(user),
        call('acme/oa-cut', { stream: true }),
        new AbortController().signal,
      );
      const events = await collect(stream);
      assert.equal(events.at(-1)!.type, 'error');
      const [record] = await usageOf(env, user);
      assert.equal(record.status, 'upstream_error');
      assert.equal(Number(record.completion_tokens), 2);
    });
  },
  {
    config: {
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1`, apiKey: 'sk-mock' }],
      ANTHROPIC_BASE_URL: mock.url,
      ANTHROPIC_API_KEY: 'sk-mock',
    },
  },
);
