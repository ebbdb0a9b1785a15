import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP server speaking OpenAI chat (`/v1/chat/completions`) and Anthropic Messages (`/v1/messages`),
 * streamed and not, that calls a tool and reports cache and reasoning tokens: what the Responses tests need
 * beyond `providers/testing/mock-upstream.ts` (which answers text only).
 *
 * Every answer depends on the conversation: when it holds no tool result and the request offers tools, the
 * model calls the first tool with `{"city":"Paris"}`; otherwise it answers `Result: <last tool result>` or,
 * without one, `Seen: <the last user text>` (so a test sees what reached the upstream), or `{"seen":"<the last user
 * text>"}` when the request asks for a JSON schema (OpenAI's `response_format`, Anthropic's `output_config.format`).
 *
 * The upstream model `stall` streams three words, then nothing until the client goes away (a cut stream);
 * `break` streams three words, then drops the connection (an upstream failing after output began).
 *
 * Usage reported (the same tokens on both wires): 20 input tokens of which 5 cache reads and (Anthropic only)
 * 3 cache writes, and 7 output tokens (OpenAI: 2 of them reasoning).
 */
export const SCRIPTED_USAGE = {
  openai: {
    prompt_tokens: 20,
    completion_tokens: 7,
    total_tokens: 27,
    prompt_tokens_details: { cached_tokens: 5 },
    completion_tokens_details: { reasoning_tokens: 2 },
  },
  anthropic: { input_tokens: 12, cache_read_input_tokens: 5, cache_creation_input_tokens: 3, output_tokens: 7 },
};

/** A running scripted upstream; `requests` are the bodies received, in order. */
export interface ScriptedUpstream {
  url: string;
  requests: Array<{ path: string; body: any }>;
  close(): Promise<void>;
}

/** What the model does with a conversation, wire-neutral. */
type Turn = { kind: 'text'; text: string } | { kind: 'tool'; name: string; arguments: string };

function openaiTurn(body: any): Turn {
  const messages: any[] = body.messages ?? [];
  const toolResult = [...messages].reverse().find((m) => m.role === 'tool');
  if (toolResult)
    return {
      kind: 'text',
      text: `Result: ${typeof toolResult.content === 'string' ? toolResult.content : JSON.stringify(toolResult.content)}`,
    };
  if (body.tools?.length) return { kind: 'tool', name: body.tools[0].function.name, arguments: '{"city":"Paris"}' };
  const user = [...messages].reverse().find((m) => m.role === 'user');
  const text =
    typeof user?.content === 'string'
      ? user.content
      : (user?.content ?? [])
          .filter((p: any) => p.type === 'text')
          .map((p: any) => p.text)
          .join(' ');
  return seen(text, body.response_format?.type === 'json_schema');
}

/** The answer to the last user text: `Seen: <text>`, or `{"seen":"<text>"}` when a JSON schema was asked for. */
function seen(text: string, json: boolean): Turn {
  return { kind: 'text', text: json ? JSON.stringify({ seen: text }) : `Seen: ${text}` };
}

function anthropicTurn(body: any): Turn {
  const blocks = (body.messages ?? []).flatMap((m: any) =>
    typeof m.content === 'string'
      ? [{ type: 'text', text: m.content, role: m.role }]
      : m.content.map((b: any) => ({ ...b, role: m.role })),
  );
  const toolResult = [...blocks].reverse().find((b: any) => b.type === 'tool_result');
  if (toolResult)
    return {
      kind: 'text',
      text: `Result: ${typeof toolResult.content === 'string' ? toolResult.content : toolResult.content.map((c: any) => c.text).join('')}`,
    };
  if (body.tools?.length) return { kind: 'tool', name: body.tools[0].name, arguments: '{"city":"Paris"}' };
  const text =
    blocks
      .filter((b: any) => b.role === 'user' && b.type === 'text')
      .map((b: any) => b.text)
      .at(-1) ?? '';
  return seen(text, body.output_config?.format?.type === 'json_schema');
}

const send = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

function openaiAnswer(body: any, res: ServerResponse): void {
  const turn = openaiTurn(body);
  const base = { id: 'chatcmpl-scripted', created: 1, model: body.model };
  const toolCall =
    turn.kind === 'tool'
      ? { id: 'call_scripted_1', type: 'function', function: { name: turn.name, arguments: turn.arguments } }
      : null;
  const finish = toolCall ? 'tool_calls' : 'stop';
  if (!body.stream) {
    const message = {
      role: 'assistant',
      content: turn.kind === 'text' ? turn.text : null,
      ...(toolCall ? { tool_calls: [toolCall] } : {}),
    };
    return send(res, 200, {
      ...base,
      object: 'chat.completion',
      choices: [{ index: 0, message, finish_reason: finish }],
      usage: SCRIPTED_USAGE.openai,
    });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta: unknown, finishReason: string | null = null) =>
    res.write(
      `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`,
    );
  chunk({ role: 'assistant', content: '' });
  if (body.model === 'stall' || body.model === 'break') {
    ['one', ' two', ' three'].forEach((word) => chunk({ content: word }));
    if (body.model === 'break') setTimeout(() => res.destroy(), 20);
    return;
  }
  if (turn.kind === 'text') for (const word of turn.text.split(/(?= )/)) chunk({ content: word });
  else {
    chunk({
      tool_calls: [{ index: 0, id: toolCall!.id, type: 'function', function: { name: turn.name, arguments: '' } }],
    });
    chunk({ tool_calls: [{ index: 0, function: { arguments: turn.arguments.slice(0, 8) } }] });
    chunk({ tool_calls: [{ index: 0, function: { arguments: turn.arguments.slice(8) } }] });
  }
  chunk({}, finish);
  res.write(
    `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage: SCRIPTED_USAGE.openai })}\n\n`,
  );
  res.end('data: [DONE]\n\n');
}

function anthropicAnswer(body: any, res: ServerResponse): void {
  const turn = anthropicTurn(body);
  const block =
    turn.kind === 'text'
      ? { type: 'text', text: turn.text }
      : { type: 'tool_use', id: 'toolu_scripted_1', name: turn.name, input: JSON.parse(turn.arguments) };
  const stop = turn.kind === 'tool' ? 'tool_use' : 'end_turn';
  const message = { id: 'msg_scripted', type: 'message', role: 'assistant', model: body.model, stop_sequence: null };
  if (!body.stream)
    return send(res, 200, { ...message, content: [block], stop_reason: stop, usage: SCRIPTED_USAGE.anthropic });
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (type: string, data: object) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const { output_tokens: output, ...input } = SCRIPTED_USAGE.anthropic;
  event('message_start', {
    message: { ...message, content: [], stop_reason: null, usage: { ...input, output_tokens: 1 } },
  });
  if (body.model === 'stall' || body.model === 'break') {
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    ['one', ' two', ' three'].forEach((text) =>
      event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }),
    );
    if (body.model === 'break') setTimeout(() => res.destroy(), 20);
    return;
  }
  if (turn.kind === 'text') {
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    for (const word of turn.text.split(/(?= )/))
      event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: word } });
  } else {
    event('content_block_start', {
      index: 0,
      content_block: { type: 'tool_use', id: 'toolu_scripted_1', name: turn.name, input: {} },
    });
    event('content_block_delta', {
      index: 0,
      delta: { type: 'input_json_delta', partial_json: turn.arguments.slice(0, 8) },
    });
    event('content_block_delta', {
      index: 0,
      delta: { type: 'input_json_delta', partial_json: turn.arguments.slice(8) },
    });
  }
  event('content_block_stop', { index: 0 });
  event('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: output } });
  event('message_stop', {});
  res.end();
}

/** Starts the scripted upstream on a random loopback port (OpenAI base URL `${url}/v1`, Anthropic base URL `url`). */
export async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  const requests: ScriptedUpstream['requests'] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    const path = (req.url ?? '').split('?')[0];
    requests.push({ path, body });
    if (path === '/v1/chat/completions') return openaiAnswer(body, res);
    if (path === '/v1/messages') return anthropicAnswer(body, res);
    send(res, 404, { error: { message: `no route ${path}` } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
