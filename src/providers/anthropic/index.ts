import { joinUrl, readJson, readSse, upstreamFetch } from '../http.ts';
import { anthropicEvents, fromAnthropicResult, toAnthropicMessages } from './wire.ts';
import { UpstreamError, type CallOptions, type ChatBody, type ChatChunk, type ChatCompletion, type ProviderAdapter, type TokenUsage, type UpstreamModel } from '../types.ts';

/** The Anthropic API version the translation follows. */
export const ANTHROPIC_VERSION = '2023-06-01';

/** Anthropic requires `max_tokens`; used only when neither the client nor the catalogue gave a cap. */
const DEFAULT_MAX_TOKENS = 4096;

/**
 * Anthropic's Messages API behind the OpenAI chat format: requests are translated to Messages (system
 * prompts, vision parts, tools, tool results, stop sequences), and responses and SSE streams are translated
 * back to `chat.completion` objects and chunks, usage included.
 */
export function anthropicAdapter(options: { name?: string; baseUrl: string; apiKey?: string }): ProviderAdapter {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'anthropic-version': ANTHROPIC_VERSION, ...(options.apiKey ? { 'x-api-key': options.apiKey } : {}) };
  const post = (body: unknown, call: CallOptions) =>
    upstreamFetch(joinUrl(options.baseUrl, '/v1/messages'), { method: 'POST', headers, body: JSON.stringify(body), signal: call.signal });

  return {
    name: options.name ?? 'anthropic',
    speaks: ['anthropic-messages'],

    async complete(canonical, call) {
      const message = await readJson(await post(toAnthropicMessages(canonical, false), call));
      return fromAnthropicResult(message, canonical.native?.protocol === 'anthropic-messages');
    },

    async stream(canonical, call) {
      const response = await post(toAnthropicMessages(canonical, true), call);
      return anthropicEvents(readSse(response.body, call.signal), canonical.native?.protocol === 'anthropic-messages');
    },

    async chat(body, call) {
      const message = await readJson(await post(toAnthropicRequest(body, false), call));
      return fromAnthropicMessage(message, body.model);
    },

    async streamChat(body, call) {
      const response = await post(toAnthropicRequest(body, true), call);
      return translateStream(readSse(response.body, call.signal), body.model);
    },

    async listModels(call): Promise<UpstreamModel[]> {
      const response = await upstreamFetch(joinUrl(options.baseUrl, '/v1/models?limit=1000'), { headers, signal: call.signal });
      const list = await readJson(response);
      return (Array.isArray(list?.data) ? list.data : []).map((m: any) => ({ id: m.id, name: m.display_name, inputModalities: ['text', 'image'], outputModalities: ['text'] }));
    },
  };
}

/** Text of an OpenAI content value (a string or an array of parts). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part: any) => (part?.type === 'text' ? String(part.text ?? '') : '')).join('');
  return '';
}

/** One OpenAI content part as Anthropic content blocks (text and images; data URLs become base64 sources). */
function toAnthropicBlocks(content: unknown): any[] {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  if (!Array.isArray(content)) return [];
  return content.flatMap((part: any): any[] => {
    if (part?.type === 'text') return [{ type: 'text', text: String(part.text ?? '') }];
    if (part?.type === 'image_url') {
      const url: string = typeof part.image_url === 'string' ? part.image_url : part.image_url?.url ?? '';
      const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
      return [data ? { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } } : { type: 'image', source: { type: 'url', url } }];
    }
    return [];
  });
}

/** Translates an OpenAI chat request to an Anthropic Messages request. */
export function toAnthropicRequest(body: ChatBody, stream: boolean): Record<string, unknown> {
  const system: string[] = [];
  const messages: Array<{ role: 'user' | 'assistant'; content: any[] }> = [];
  const push = (role: 'user' | 'assistant', blocks: any[]) => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    // Anthropic wants alternating turns: consecutive messages of one role (tool results) merge.
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const message of body.messages as any[]) {
    switch (message?.role) {
      case 'system':
      case 'developer':
        system.push(textOf(message.content));
        break;
      case 'assistant': {
        const blocks = toAnthropicBlocks(message.content);
        for (const call of message.tool_calls ?? []) {
          let input: unknown = {};
          try {
            input = JSON.parse(call.function?.arguments || '{}');
          } catch {}
          blocks.push({ type: 'tool_use', id: call.id, name: call.function?.name, input });
        }
        push('assistant', blocks);
        break;
      }
      case 'tool':
        push('user', [{ type: 'tool_result', tool_use_id: message.tool_call_id, content: textOf(message.content) }]);
        break;
      default:
        push('user', toAnthropicBlocks(message?.content));
    }
  }
  const request: Record<string, unknown> = {
    model: body.model,
    messages,
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS,
    stream,
  };
  if (system.length) request.system = system.join('\n\n');
  for (const field of ['temperature', 'top_p', 'top_k', 'metadata'] as const) if (body[field] !== undefined) request[field] = body[field];
  if (body.stop !== undefined && body.stop !== null) request.stop_sequences = Array.isArray(body.stop) ? body.stop : [body.stop];
  if (Array.isArray(body.tools)) {
    request.tools = (body.tools as any[]).filter((t) => t?.type === 'function').map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters ?? { type: 'object', properties: {} } }));
  }
  const choice = body.tool_choice as any;
  if (choice === 'auto') request.tool_choice = { type: 'auto' };
  else if (choice === 'required') request.tool_choice = { type: 'any' };
  else if (choice === 'none') request.tool_choice = { type: 'none' };
  else if (choice?.type === 'function') request.tool_choice = { type: 'tool', name: choice.function?.name };
  return request;
}

const FINISH_REASONS: Record<string, string> = { end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', tool_use: 'tool_calls', pause_turn: 'stop', refusal: 'content_filter' };

/**
 * Anthropic usage as OpenAI usage. Anthropic's `input_tokens` **excludes** the cache: cache reads
 * (`cache_read_input_tokens`) and cache writes (`cache_creation_input_tokens`) come on top. OpenAI's
 * `prompt_tokens` includes its cached tokens, so the three are summed into `prompt_tokens` and the two cache
 * counts are restated as its details (`cached_tokens`, and OpenRouter's `cache_write_tokens`): the gateway
 * prices each part once. Web searches the model ran travel as `server_tool_use`. Counts are passed on as
 * sent, an unusable total as NaN; the gateway sanitizes them before it prices them.
 */
function usageOf(usage: any, outputTokens?: unknown): TokenUsage {
  // An unusable cache count adds nothing (its tokens stay at the plain price); an unusable input count makes
  // the total unusable (NaN), so the gateway falls back to its own count rather than bill only the cache.
  const usable = (value: unknown) => typeof value === 'number' && Number.isFinite(value) && value >= 0;
  const cacheRead = usable(usage?.cache_read_input_tokens) ? usage.cache_read_input_tokens : 0;
  const cacheWrite = usable(usage?.cache_creation_input_tokens) ? usage.cache_creation_input_tokens : 0;
  const prompt = usable(usage?.input_tokens) ? usage.input_tokens + cacheWrite + cacheRead : Number.NaN;
  const output = outputTokens ?? usage?.output_tokens;
  const completion = usable(output) ? (output as number) : Number.NaN;
  const searches = usage?.server_tool_use?.web_search_requests;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead, cache_write_tokens: cacheWrite },
    ...(searches !== undefined ? { server_tool_use: { web_search_requests: searches } } : {}),
  };
}

/** Translates an Anthropic Messages response to an OpenAI chat completion. */
export function fromAnthropicMessage(message: any, model: string): ChatCompletion {
  if (!Array.isArray(message?.content)) throw new UpstreamError(502, 'The upstream provider answered a message without content.');
  const text = message.content.filter((b: any) => b.type === 'text').map((b: any) => b.text).join('');
  const toolCalls = message.content
    .filter((b: any) => b.type === 'tool_use')
    .map((b: any) => ({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } }));
  return {
    id: message.id ?? 'msg',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text || (toolCalls.length ? null : ''), ...(toolCalls.length ? { tool_calls: toolCalls } : {}) }, finish_reason: FINISH_REASONS[message.stop_reason] ?? 'stop' }],
    usage: usageOf(message.usage),
  };
}

/** Translates Anthropic stream events to OpenAI chunks as they arrive. */
async function* translateStream(events: AsyncIterable<{ event: string; data: string }>, model: string): AsyncGenerator<ChatChunk> {
  let id = 'msg';
  let inputUsage: any = {};
  const created = Math.floor(Date.now() / 1000);
  const toolIndexByBlock = new Map<number, number>();
  const chunk = (delta: ChatChunk['choices'][number]['delta'], finish: string | null = null): ChatChunk => ({
    id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }],
  });
  for await (const event of events) {
    let data: any;
    try {
      data = JSON.parse(event.data);
    } catch {
      throw new UpstreamError(502, 'The upstream stream carried a frame that is not JSON.');
    }
    switch (data.type) {
      case 'message_start':
        id = data.message?.id ?? id;
        inputUsage = data.message?.usage ?? {};
        yield chunk({ role: 'assistant', content: '' });
        break;
      case 'content_block_start':
        if (data.content_block?.type === 'tool_use') {
          const index = toolIndexByBlock.size;
          toolIndexByBlock.set(data.index, index);
          yield chunk({ tool_calls: [{ index, id: data.content_block.id, type: 'function', function: { name: data.content_block.name, arguments: '' } }] });
        }
        break;
      case 'content_block_delta':
        if (data.delta?.type === 'text_delta') yield chunk({ content: data.delta.text });
        else if (data.delta?.type === 'input_json_delta') yield chunk({ tool_calls: [{ index: toolIndexByBlock.get(data.index) ?? 0, function: { arguments: data.delta.partial_json } }] });
        break;
      case 'message_delta':
        yield chunk({}, FINISH_REASONS[data.delta?.stop_reason] ?? 'stop');
        // Usage travels as OpenAI's `include_usage` frame: a last chunk with no choices.
        yield { ...chunk({}), choices: [], usage: usageOf({ ...inputUsage, ...pickInput(data.usage) }, data.usage?.output_tokens) };
        break;
      case 'message_stop':
        return;
      case 'error':
        throw new UpstreamError(502, `The upstream stream failed: ${data.error?.message ?? 'unknown error'}.`);
    }
  }
  throw new UpstreamError(502, 'The upstream stream ended before it was complete.');
}

/** Input-token fields a `message_delta` may restate (newer API versions report them there too). */
function pickInput(usage: any): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of ['input_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens']) if (typeof usage?.[key] === 'number') out[key] = usage[key];
  if (usage?.server_tool_use) out.server_tool_use = usage.server_tool_use;
  return out;
}
