import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CanonicalEvent } from '../../gateway/canonical.ts';
import type { ProviderCall } from '../types.ts';
import { echoAdapter } from './index.ts';

const echo = echoAdapter();
const options = { signal: new AbortController().signal };
const call = (extra: Partial<ProviderCall> = {}): ProviderCall => ({
  model: 'echo',
  system: [],
  tools: [],
  maxOutputTokens: 1000,
  modelReasons: false,
  stream: false,
  messages: [{ role: 'user', content: [{ type: 'text', text: 'one two three' }] }],
  ...extra,
});

async function events(extra: Partial<ProviderCall>): Promise<CanonicalEvent[]> {
  const out: CanonicalEvent[] = [];
  for await (const event of await echo.stream(call({ ...extra, stream: true }), options)) out.push(event);
  return out;
}

describe('the echo provider answers any canonical call deterministically', () => {
  it('echoes the last user text, cut to the output cap (finish length), with usage', async () => {
    const whole = await echo.complete(call(), options);
    assert.deepEqual(whole.content, [{ type: 'text', text: 'one two three' }]);
    assert.equal(whole.finishReason, 'stop');
    assert.equal(whole.usage.outputTokens, 3);
    assert.ok(whole.usage.inputTokens > 3);
    const cut = await echo.complete(call({ maxOutputTokens: 1 }), options);
    assert.deepEqual(cut.content, [{ type: 'text', text: 'one' }]);
    assert.equal(cut.finishReason, 'length');
  });

  it('streams several text deltas, then usage, then end', async () => {
    const out = await events({});
    assert.deepEqual(
      out.map((e) => e.type),
      ['start', 'text', 'text', 'text', 'usage', 'end'],
    );
  });

  it('calls the named tool when asked, and answers the tool result on the next turn (a round trip)', async () => {
    const tools = [
      { name: 'a', parameters: {} },
      { name: 'b', parameters: {} },
    ];
    const first = await echo.complete(call({ tools, toolChoice: { name: 'b' } }), options);
    assert.equal(first.finishReason, 'tool_calls');
    const [part] = first.content;
    assert.ok(part.type === 'tool_call' && part.name === 'b' && part.arguments === '{"text":"one two three"}');
    const again = await echo.complete(call({ tools, toolChoice: { name: 'b' } }), options);
    assert.deepEqual(again.content, first.content, 'deterministic, the call id included');
    const second = await echo.complete(
      call({
        tools,
        toolChoice: 'auto',
        messages: [
          ...call().messages,
          { role: 'assistant', content: [part] },
          { role: 'tool', content: [{ type: 'tool_result', callId: part.id, content: 'sunny' }] },
        ],
      }),
      options,
    );
    assert.deepEqual(second.content, [{ type: 'text', text: 'sunny' }]);
    const tool = await events({ tools, toolChoice: 'required' });
    assert.deepEqual(
      tool.map((e) => e.type),
      ['start', 'tool_call_start', 'tool_call_delta', 'tool_call_delta', 'usage', 'end'],
    );
  });

  it('a chat (native OpenAI chat body) that requires a tool gets the call too, whole and streamed (LangChain withStructuredOutput forces one)', async () => {
    const tools = [{ name: 'extract', parameters: { type: 'object', properties: { answer: { type: 'string' } } } }];
    const body = {
      model: 'echo',
      messages: [{ role: 'user', content: 'one two three' }],
      tools: [{ type: 'function', function: { name: 'extract', parameters: tools[0].parameters } }],
      tool_choice: { type: 'function', function: { name: 'extract' } },
    };
    const native = { protocol: 'openai-chat' as const, body };
    const whole = await echo.complete(call({ tools, toolChoice: { name: 'extract' }, native }), options);
    assert.equal(whole.finishReason, 'tool_calls');
    assert.equal(whole.content[0].type, 'tool_call');
    const streamed = await events({
      tools,
      toolChoice: 'required',
      native: { ...native, body: { ...body, stream: true } },
    });
    assert.ok(streamed.some((e) => e.type === 'tool_call_start'));
    // Without a required tool, a chat is still answered in chat's own chunks.
    const plain = await echo.complete(call({ tools, toolChoice: 'auto', native }), options);
    assert.deepEqual(plain.content, [{ type: 'text', text: 'one two three' }]);
  });
});
