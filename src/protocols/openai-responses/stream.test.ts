import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { accumulateResponse } from 'openai/lib/responses/ResponseAccumulator';
import type { CanonicalEvent } from '../../gateway/canonical.ts';
import { parseSse } from '../../testing/sse.ts';
import { ResponsesEventWriter } from './stream.ts';
import { renderResult, type ResponseFrame } from './render.ts';

const frame: ResponseFrame = {
  id: 'resp_AAAAAAAAAAAAAAAAAAAAAAAA',
  createdAt: 1_700_000_000,
  model: 'acme/chat',
  request: { model: 'acme/chat', input: 'hi' },
  store: false,
};

/** Renders the events and reads them back as the SDK's accumulator does (it throws on a malformed sequence). */
function play(events: CanonicalEvent[]) {
  const writer = new ResponsesEventWriter(frame);
  const text = events.map((event) => writer.write(event)).join('');
  const parsed = parseSse(text).map((f) => ({ event: f.event, data: f.data as any }));
  let snapshot: any;
  for (const { data } of parsed) if (data.type !== 'error') snapshot = accumulateResponse(data, snapshot);
  return { parsed, snapshot, writer };
}

describe('rendering canonical events as Responses SSE', () => {
  it('text streams as one message item; numbered events end in response.completed with usage; the SDK accumulates the same output', () => {
    const { parsed, snapshot, writer } = play([
      { type: 'start', id: 'x', model: 'acme/chat', created: 1 },
      { type: 'text', delta: 'alpha ' },
      { type: 'text', delta: 'beta' },
      { type: 'usage', usage: { inputTokens: 11, outputTokens: 2, cacheReadTokens: 3, cost: 0.000123 } },
      { type: 'end', finishReason: 'stop' },
    ]);
    assert.deepEqual(
      parsed.map((f) => f.data.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.ok(parsed.every((f, i) => f.data.sequence_number === i && f.event === f.data.type));
    assert.equal(snapshot.output_text, 'alpha beta');
    const completed = parsed.at(-1)!.data.response;
    assert.equal(completed.status, 'completed');
    assert.deepEqual(completed.usage, {
      input_tokens: 11,
      input_tokens_details: { cached_tokens: 3, cache_write_tokens: 0 },
      output_tokens: 2,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 13,
      cost: 0.000123,
    });
    assert.deepEqual(writer.final!.output, snapshot.output);
    // The non-streamed rendering of the same answer has the same output.
    const whole = renderResult(frame, {
      id: 'x',
      model: 'acme/chat',
      created: 1,
      content: [{ type: 'text', text: 'alpha beta' }],
      finishReason: 'stop',
      usage: { inputTokens: 11, outputTokens: 2 },
    });
    assert.deepEqual(whole.output, snapshot.output);
  });

  it('reasoning, then text, then two tool calls: each its own item, arguments streamed and done; a cap is response.incomplete', () => {
    const { parsed, snapshot } = play([
      { type: 'reasoning', delta: 'think', signature: 'sig' },
      { type: 'text', delta: 'calling' },
      { type: 'tool_call_start', index: 0, id: 'call_1', name: 'weather' },
      { type: 'tool_call_start', index: 1, id: 'call_2', name: 'weather' },
      { type: 'tool_call_delta', index: 0, arguments: '{"city":' },
      { type: 'tool_call_delta', index: 1, arguments: '{"city":"Rome"}' },
      { type: 'tool_call_delta', index: 0, arguments: '"Paris"}' },
      { type: 'end', finishReason: 'length' },
    ]);
    assert.deepEqual(
      snapshot.output.map((item: any) => [item.type, item.status]),
      [
        ['reasoning', 'completed'],
        ['message', 'completed'],
        ['function_call', 'incomplete'],
        ['function_call', 'incomplete'],
      ],
    );
    assert.equal(snapshot.output[0].encrypted_content, 'sig');
    assert.deepEqual(snapshot.output[0].summary, [{ type: 'summary_text', text: 'think' }]);
    assert.deepEqual(
      snapshot.output.slice(2).map((item: any) => [item.call_id, item.arguments]),
      [
        ['call_1', '{"city":"Paris"}'],
        ['call_2', '{"city":"Rome"}'],
      ],
    );
    const last = parsed.at(-1)!.data;
    assert.equal(last.type, 'response.incomplete');
    assert.deepEqual(last.response.incomplete_details, { reason: 'max_output_tokens' });
    assert.deepEqual(
      parsed.filter((f) => f.data.type === 'response.function_call_arguments.done').map((f) => f.data.arguments),
      ['{"city":"Paris"}', '{"city":"Rome"}'],
    );
  });

  it('an error after output began is response.failed then an error event carrying the code and the envelope', () => {
    const writer = new ResponsesEventWriter(frame);
    const text =
      writer.write({ type: 'text', delta: 'half' }) +
      writer.fail('UPSTREAM_ERROR', 'broke', { code: 'UPSTREAM_ERROR', type: 'upstream_error' });
    const frames = parseSse(text).map((f) => f.data as any);
    assert.deepEqual(
      frames.slice(-2).map((f) => f.type),
      ['response.failed', 'error'],
    );
    assert.equal(frames.at(-2).response.status, 'failed');
    assert.equal(frames.at(-2).response.output[0].content[0].text, 'half');
    assert.equal(frames.at(-1).code, 'UPSTREAM_ERROR');
    assert.equal(frames.at(-1).error.code, 'UPSTREAM_ERROR');
    assert.equal(writer.end('stop'), '', 'nothing follows the failure');
  });
});
