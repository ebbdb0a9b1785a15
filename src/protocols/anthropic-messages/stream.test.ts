import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CanonicalEvent } from '../../gateway/canonical.ts';
import { ApiError } from '../../platform/errors.ts';
import { parseSse } from '../../testing/sse.ts';
import { anthropicErrorBody } from './errors.ts';
import { renderMessage } from './render.ts';
import { AnthropicStreamRenderer } from './stream.ts';

const usage = { inputTokens: 30, outputTokens: 7, cacheReadTokens: 10, cacheWriteTokens: 5, cost: 0.000042 };

function render(events: CanonicalEvent[]): Array<{ event: string; data: any }> {
  const renderer = new AnthropicStreamRenderer('acme/model');
  return parseSse(events.map((e) => renderer.render(e)).join(''));
}

describe('rendering canonical answers as Anthropic Messages', () => {
  it('a canonical result becomes a Message: blocks, stop reason, public model, usage with the cache taken out of input_tokens', () => {
    const message = renderMessage({
      id: 'chatcmpl-1',
      model: 'acme/model',
      created: 1,
      finishReason: 'tool_calls',
      usage,
      content: [
        { type: 'reasoning', text: 'hm', signature: 's' },
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
        { type: 'tool_call', id: 'call_1', name: 'f', arguments: '{"x":1}' },
      ],
    });
    assert.match(message.id as string, /^msg_/);
    assert.deepEqual(
      { ...message, id: 'msg' },
      {
        id: 'msg',
        type: 'message',
        role: 'assistant',
        model: 'acme/model',
        stop_reason: 'tool_use',
        stop_sequence: null,
        content: [
          { type: 'thinking', thinking: 'hm', signature: 's' },
          { type: 'text', text: 'ab' },
          { type: 'tool_use', id: 'call_1', name: 'f', input: { x: 1 } },
        ],
        usage: {
          input_tokens: 15,
          output_tokens: 7,
          cache_creation_input_tokens: 5,
          cache_read_input_tokens: 10,
          cost: 0.000042,
        },
      },
    );
  });

  it("an Anthropic upstream's message is relayed as it came, with the public model and our usage", () => {
    const native = {
      id: 'msg_up',
      type: 'message',
      role: 'assistant',
      model: 'claude-x',
      content: [{ type: 'text', text: 'hi' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
      usage: { input_tokens: 1, output_tokens: 1 },
    };
    const message = renderMessage({
      id: 'msg_up',
      model: 'acme/model',
      created: 1,
      finishReason: 'stop',
      usage,
      content: [{ type: 'text', text: 'hi' }],
      native: { protocol: 'anthropic-messages', body: native },
    });
    assert.deepEqual(message, {
      ...native,
      model: 'acme/model',
      usage: {
        input_tokens: 15,
        output_tokens: 7,
        cache_creation_input_tokens: 5,
        cache_read_input_tokens: 10,
        cost: 0.000042,
      },
    });
  });

  it('canonical events become the exact Anthropic event sequence, blocks opened and closed in order', () => {
    const frames = render([
      { type: 'start', id: 'x', model: 'up', created: 1 },
      { type: 'reasoning', delta: 'think' },
      { type: 'reasoning', delta: '', signature: 'sig' },
      { type: 'text', delta: 'Hel' },
      { type: 'text', delta: 'lo' },
      { type: 'tool_call_start', index: 0, id: 'call_1', name: 'f' },
      { type: 'tool_call_delta', index: 0, arguments: '{"x"' },
      { type: 'tool_call_delta', index: 0, arguments: ':1}' },
      { type: 'usage', usage },
      { type: 'end', finishReason: 'tool_calls' },
    ]);
    assert.deepEqual(
      frames.map((f) => f.event),
      [
        'message_start',
        'ping',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.ok(frames.every((f) => f.data.type === f.event));
    assert.equal(frames[0].data.message.model, 'acme/model');
    assert.match(frames[0].data.message.id, /^msg_/);
    assert.deepEqual(frames[2].data, {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    });
    assert.deepEqual(frames[3].data.delta, { type: 'thinking_delta', thinking: 'think' });
    assert.deepEqual(frames[4].data.delta, { type: 'signature_delta', signature: 'sig' });
    assert.deepEqual(frames[7].data, {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'text_delta', text: 'Hel' },
    });
    assert.deepEqual(frames[10].data, {
      type: 'content_block_start',
      index: 2,
      content_block: { type: 'tool_use', id: 'call_1', name: 'f', input: {} },
    });
    assert.deepEqual(frames[12].data.delta, { type: 'input_json_delta', partial_json: ':1}' });
    assert.deepEqual(frames[13].data, { type: 'content_block_stop', index: 2 });
    assert.deepEqual(frames[14].data, {
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: {
        input_tokens: 15,
        output_tokens: 7,
        cache_creation_input_tokens: 5,
        cache_read_input_tokens: 10,
        cost: 0.000042,
      },
    });
  });

  it("an Anthropic upstream's frames are relayed, model renamed, its message_delta written last with our usage", () => {
    const native = (frame: Record<string, unknown>) => ({ native: { protocol: 'anthropic-messages' as const, frame } });
    const frames = render([
      {
        type: 'start',
        id: 'msg_up',
        model: 'claude-x',
        created: 1,
        ...native({
          type: 'message_start',
          message: { id: 'msg_up', model: 'claude-x', content: [], usage: { input_tokens: 3 } },
        }),
      },
      { type: 'text', delta: '', ...native({ type: 'ping' }) },
      {
        type: 'text',
        delta: '',
        ...native({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      },
      {
        type: 'text',
        delta: 'hi',
        ...native({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } }),
      },
      { type: 'text', delta: '', ...native({ type: 'content_block_stop', index: 0 }) },
      {
        type: 'usage',
        usage: { inputTokens: 3, outputTokens: 1 },
        ...native({
          type: 'message_delta',
          delta: { stop_reason: 'stop_sequence', stop_sequence: 'END' },
          usage: { output_tokens: 1 },
        }),
      },
      { type: 'usage', usage: { ...usage } },
      { type: 'end', finishReason: 'stop', ...native({ type: 'message_stop' }) },
    ]);
    assert.deepEqual(
      frames.map((f) => f.event),
      [
        'message_start',
        'ping',
        'content_block_start',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.deepEqual(frames[0].data.message, {
      id: 'msg_up',
      model: 'acme/model',
      content: [],
      usage: { input_tokens: 3 },
    });
    assert.deepEqual(frames[5].data, {
      type: 'message_delta',
      delta: { stop_reason: 'stop_sequence', stop_sequence: 'END' },
      usage: {
        input_tokens: 15,
        output_tokens: 7,
        cache_creation_input_tokens: 5,
        cache_read_input_tokens: 10,
        cost: 0.000042,
      },
    });
  });

  it('an error after output began is an event: error frame in the Anthropic envelope, and nothing follows it', () => {
    const renderer = new AnthropicStreamRenderer('acme/model');
    const text =
      renderer.render({ type: 'text', delta: 'a' }) +
      renderer.render({ type: 'error', code: 'UPSTREAM_ERROR', message: 'broke' }) +
      renderer.render({ type: 'end', finishReason: 'stop' });
    const frames = parseSse(text);
    assert.deepEqual(frames.at(-1), {
      event: 'error',
      data: { type: 'error', error: { type: 'api_error', message: 'broke', code: 'UPSTREAM_ERROR' } },
    });
    assert.ok(renderer.ended);
  });

  it("restriction errors keep the contract's fields inside Anthropic's envelope, typed by status", () => {
    const limit = new ApiError('SPENDING_LIMIT_EXCEEDED', 'Daily limit.', {
      details: { limitType: 'daily', limit: 5, current: 4.5, requested: 1, resetsAt: '2026-03-11T00:00:00.000Z' },
    });
    assert.deepEqual(anthropicErrorBody(limit), {
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: 'Daily limit.',
        code: 'SPENDING_LIMIT_EXCEEDED',
        limitType: 'daily',
        limit: 5,
        current: 4.5,
        requested: 1,
        resetsAt: '2026-03-11T00:00:00.000Z',
      },
    });
    const credits = new ApiError('INSUFFICIENT_CREDITS', 'Broke.', { details: { available: 0.5, required: 1 } });
    assert.deepEqual(anthropicErrorBody(credits), {
      type: 'error',
      error: { type: 'billing_error', message: 'Broke.', code: 'INSUFFICIENT_CREDITS', available: 0.5, required: 1 },
    });
    const statuses: Array<[ApiError, string]> = [
      [new ApiError('INVALID_REQUEST', 'x'), 'invalid_request_error'],
      [new ApiError('UNAUTHENTICATED', 'x'), 'authentication_error'],
      [new ApiError('PERMISSION_DENIED', 'x'), 'permission_error'],
      [new ApiError('MODEL_NOT_FOUND', 'x'), 'not_found_error'],
      [new ApiError('PAYLOAD_TOO_LARGE', 'x'), 'request_too_large'],
      [new ApiError('RATE_LIMITED', 'x'), 'rate_limit_error'],
      [new ApiError('INTERNAL_ERROR', 'x'), 'api_error'],
      [new ApiError('SERVICE_UNAVAILABLE', 'x'), 'overloaded_error'],
      [new ApiError('UPSTREAM_ERROR', 'x', { status: 504 }), 'api_error'],
    ];
    for (const [error, type] of statuses) assert.equal(anthropicErrorBody(error).error.type, type, error.code);
  });
});
