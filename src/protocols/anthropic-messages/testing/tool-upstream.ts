import type { ServerResponse } from 'node:http';
import { startRecordingUpstream, type RecordingUpstream } from '../../../testing/recording-upstream.ts';

/**
 * A real HTTP server answering tool calls in both wire formats, for round trips through Tollgate: Anthropic
 * Messages at `/v1/messages` and OpenAI chat at `/v1/chat/completions`, streamed or not. While the
 * conversation holds no tool result, it calls the request's first tool with `{"city":"Paris"}`; once it
 * does, it answers {@link TOOL_UPSTREAM_ANSWER}. Usage is {@link TOOL_UPSTREAM_USAGE}, except for the model
 * `cache-report` on the OpenAI route, which reports {@link OPENAI_CACHE_USAGE} (cache reads and writes). On the
 * Anthropic route, the model `thinker` thinks first: a thinking block signed {@link THINKING_SIGNATURE}, then the text.
 * Its `url` is the Anthropic base URL; the OpenAI one is `${url}/v1`.
 */
export type ToolUpstream = RecordingUpstream;

/** The text answered after a tool result. */
export const TOOL_UPSTREAM_ANSWER = 'It is sunny in Paris.';
/** The counts every answer reports. */
export const TOOL_UPSTREAM_USAGE = { input: 20, output: 6 };

/** OpenAI-shaped usage with cache reads and writes (`prompt_tokens` includes both, as OpenAI counts). */
export const OPENAI_CACHE_USAGE = {
  prompt_tokens: 311,
  completion_tokens: 4,
  total_tokens: 315,
  prompt_tokens_details: { cached_tokens: 200, cache_write_tokens: 100 },
};

const ARGUMENTS = ['{"city":', '"Paris"}'];

/** The thinking of the `thinker` model. */
export const THINKING = 'The user asks about Paris.';
/** The signature of that thinking (Anthropic's upstream would check it when the block comes back). */
export const THINKING_SIGNATURE = 'sig-thinker-1';

/** Starts the scripted upstream on a random loopback port. */
export function startToolUpstream(): Promise<ToolUpstream> {
  return startRecordingUpstream((path, body, res) => {
    if (path === '/v1/messages') return anthropic(body, res);
    if (path === '/v1/chat/completions') return openai(body, res);
    res.writeHead(404).end();
  });
}

function sse(res: ServerResponse): (text: string) => void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  return (text) => res.write(text);
}

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function anthropic(body: any, res: ServerResponse): void {
  const answered = (body.messages ?? []).some(
    (m: any) => Array.isArray(m.content) && m.content.some((b: any) => b.type === 'tool_result'),
  );
  const tool = !answered && body.tools?.length ? body.tools[0].name : null;
  const usage = {
    input_tokens: TOOL_UPSTREAM_USAGE.input,
    output_tokens: TOOL_UPSTREAM_USAGE.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  const block = tool
    ? { type: 'tool_use', id: 'toolu_up1', name: tool, input: { city: 'Paris' } }
    : { type: 'text', text: TOOL_UPSTREAM_ANSWER };
  const stopReason = tool ? 'tool_use' : 'end_turn';
  const thinks = body.model === 'thinker';
  const thinking = { type: 'thinking', thinking: THINKING, signature: THINKING_SIGNATURE };
  if (!body.stream) {
    return json(res, {
      id: 'msg_up1',
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: thinks ? [thinking, block] : [block],
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    });
  }
  const write = sse(res);
  const event = (type: string, data: object) => write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', {
    message: {
      id: 'msg_up1',
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  const index = thinks ? 1 : 0;
  if (thinks) {
    event('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } });
    event('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: THINKING } });
    event('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: THINKING_SIGNATURE } });
    event('content_block_stop', { index: 0 });
  }
  if (tool) {
    event('content_block_start', { index, content_block: { ...block, input: {} } });
    for (const part of ARGUMENTS)
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } });
  } else {
    event('content_block_start', { index, content_block: { type: 'text', text: '' } });
    event('content_block_delta', { index, delta: { type: 'text_delta', text: TOOL_UPSTREAM_ANSWER } });
  }
  event('content_block_stop', { index });
  event('message_delta', {
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  event('message_stop', {});
  res.end();
}

function openai(body: any, res: ServerResponse): void {
  const answered = (body.messages ?? []).some((m: any) => m.role === 'tool');
  const tool = !answered && body.tools?.length ? body.tools[0].function.name : null;
  const usage =
    body.model === 'cache-report'
      ? OPENAI_CACHE_USAGE
      : {
          prompt_tokens: TOOL_UPSTREAM_USAGE.input,
          completion_tokens: TOOL_UPSTREAM_USAGE.output,
          total_tokens: TOOL_UPSTREAM_USAGE.input + TOOL_UPSTREAM_USAGE.output,
        };
  const base = { id: 'chatcmpl-up1', created: 1, model: body.model };
  const finish = tool ? 'tool_calls' : 'stop';
  if (!body.stream) {
    const message = tool
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_up1', type: 'function', function: { name: tool, arguments: ARGUMENTS.join('') } }],
        }
      : { role: 'assistant', content: TOOL_UPSTREAM_ANSWER };
    return json(res, {
      ...base,
      object: 'chat.completion',
      choices: [{ index: 0, message, finish_reason: finish }],
      usage,
    });
  }
  const write = sse(res);
  const chunk = (delta: object, finishReason: string | null = null) =>
    write(
      `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`,
    );
  chunk({ role: 'assistant', content: '' });
  if (tool) {
    chunk({ tool_calls: [{ index: 0, id: 'call_up1', type: 'function', function: { name: tool, arguments: '' } }] });
    for (const part of ARGUMENTS) chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] });
  } else {
    chunk({ content: TOOL_UPSTREAM_ANSWER });
  }
  chunk({}, finish);
  write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
  write('data: [DONE]\n\n');
  res.end();
}
