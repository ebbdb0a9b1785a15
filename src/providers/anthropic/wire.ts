import type {
  CanonicalDocument,
  CanonicalEvent,
  CanonicalPart,
  CanonicalResult,
  CanonicalUsage,
  FinishReason,
} from '../../gateway/canonical.ts';
import { UpstreamError, type ProviderCall, type TokenUsage } from '../types.ts';
import { anthropicReasoning } from '../reasoning.ts';

/**
 * Canonical calls ⇄ Anthropic Messages. A call that arrived as Anthropic Messages (`native`) is sent as the
 * client's own body, model and `max_tokens` replaced, so `cache_control`, thinking blocks and every field
 * Anthropic knows survive; its answer and SSE events are relayed tagged `native`. Any other call is built
 * from its canonical fields: system, text, images, tools, tool calls and results, thinking.
 */

const objectOr = (value: unknown): Record<string, any> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, any>) : {};

/** A `data:` URL of base64 data (an image's, a PDF's): its media type and its data, as Anthropic's `base64` source. */
const BASE64_DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** A canonical part as Anthropic content blocks (none for a part Anthropic cannot take). */
function toBlocks(part: CanonicalPart): unknown[] {
  switch (part.type) {
    case 'text':
      // Anthropic refuses an empty text block ("text content blocks must be non-empty").
      return part.text
        ? [{ type: 'text', text: part.text, ...(part.cacheControl ? { cache_control: part.cacheControl } : {}) }]
        : [];
    case 'image': {
      const data = BASE64_DATA_URL.exec(part.url);
      return [
        data
          ? { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } }
          : { type: 'image', source: { type: 'url', url: part.url } },
      ];
    }
    case 'tool_call': {
      let input: unknown = {};
      try {
        input = JSON.parse(part.arguments || '{}');
      } catch {}
      return [{ type: 'tool_use', id: part.id, name: part.name, input }];
    }
    case 'tool_result':
      return [
        {
          type: 'tool_result',
          tool_use_id: part.callId,
          content: part.content,
          ...(part.isError ? { is_error: true } : {}),
          ...(part.cacheControl ? { cache_control: part.cacheControl } : {}),
        },
      ];
    case 'reasoning':
      // Anthropic accepts a replayed thinking block only with its signature; one from another vendor is dropped.
      return part.signature ? [{ type: 'thinking', thinking: part.text, signature: part.signature }] : [];
    case 'document':
      return [documentBlock(part)];
  }
}

/** A canonical document as Anthropic's `document` block (a PDF as base64 data or by URL, or a text). */
function documentBlock(part: CanonicalDocument): Record<string, unknown> {
  const data = part.source.type === 'pdf' ? BASE64_DATA_URL.exec(part.source.url) : null;
  const source =
    part.source.type === 'text'
      ? { type: 'text', media_type: 'text/plain', data: part.source.text }
      : data
        ? { type: 'base64', media_type: data[1], data: data[2] }
        : { type: 'url', url: part.source.url };
  return {
    type: 'document',
    source,
    ...(part.title ? { title: part.title } : {}),
    ...(part.context ? { context: part.context } : {}),
    ...(part.citations ? { citations: { enabled: true } } : {}),
    ...(part.cacheControl ? { cache_control: part.cacheControl } : {}),
  };
}

/** The Messages request of a call; `call.maxOutputTokens` is the `max_tokens` sent (the hold's cap). */
export function toAnthropicMessages(call: ProviderCall, stream: boolean): Record<string, unknown> {
  if (call.native?.protocol === 'anthropic-messages') {
    return { ...call.native.body, model: call.model, max_tokens: call.maxOutputTokens, stream };
  }
  const messages: Array<{ role: 'user' | 'assistant'; content: unknown[] }> = [];
  for (const message of call.messages) {
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const blocks = message.content.flatMap(toBlocks);
    if (blocks.length === 0) continue;
    const last = messages.at(-1);
    // Anthropic wants alternating turns: consecutive messages of one role (tool results) merge.
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  }
  const request: Record<string, unknown> = { model: call.model, messages, max_tokens: call.maxOutputTokens, stream };
  if (call.system.length) {
    const cached = call.system.some((part) => part.type === 'text' && part.cacheControl);
    request.system = cached
      ? call.system.flatMap(toBlocks)
      : call.system.map((part) => (part.type === 'text' ? part.text : '')).join('\n\n');
  }
  if (call.temperature !== undefined) request.temperature = call.temperature;
  if (call.topP !== undefined) request.top_p = call.topP;
  if (call.topK !== undefined) request.top_k = call.topK;
  if (call.metadata) request.metadata = call.metadata;
  if (call.stop?.length) request.stop_sequences = call.stop;
  if (call.tools.length)
    request.tools = call.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.parameters ?? { type: 'object', properties: {} },
      ...(tool.strict ? { strict: true } : {}),
    }));
  const choice = call.toolChoice;
  if (choice === 'auto') request.tool_choice = { type: 'auto' };
  else if (choice === 'required') request.tool_choice = { type: 'any' };
  else if (choice === 'none') request.tool_choice = { type: 'none' };
  else if (choice) request.tool_choice = { type: 'tool', name: choice.name };
  // Anthropic says "one tool call at most" on the tool choice; `none` calls no tool, so there is nothing to limit.
  if (call.parallelToolCalls === false && call.tools.length && choice !== 'none')
    request.tool_choice = { ...(request.tool_choice ?? { type: 'auto' }), disable_parallel_tool_use: true };
  // Anthropic's structured output: the schema only (its name and `strict` have no place there). A JSON mode without
  // a schema has none; the protocols refuse it for Anthropic models before the hold (chat's allow-list, Responses'
  // `responsesRefusal`).
  const outputConfig: Record<string, unknown> = {};
  if (call.responseFormat?.type === 'json_schema')
    outputConfig.format = { type: 'json_schema', schema: call.responseFormat.schema };
  // An OpenAI effort turns thinking on as this Claude generation takes it (its effort beside the format, in the one
  // output_config), `none` disabled thinking; nothing for a model that does not reason.
  const { thinking, effort } = anthropicReasoning(call.reasoning, call.maxOutputTokens, call.model, call.modelReasons);
  if (effort) outputConfig.effort = effort;
  if (Object.keys(outputConfig).length) request.output_config = outputConfig;
  if (thinking) request.thinking = thinking;
  return request;
}

const FINISH: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  pause_turn: 'stop',
  refusal: 'content_filter',
};

/** Anthropic's stop reason in canonical terms. */
export function finishOfAnthropic(reason: unknown): FinishReason {
  return FINISH[String(reason)] ?? 'stop';
}

/**
 * Anthropic usage in canonical terms. Anthropic's `input_tokens` **excludes** the cache: reads
 * (`cache_read_input_tokens`) and writes (`cache_creation_input_tokens`) come on top, so `inputTokens` is
 * their sum. `reported` restates it in OpenAI's shape (as the chat translation always did) for the
 * gateway's sanitizer: an unusable input count makes the total NaN, so the gateway falls back to its own count.
 */
export function canonicalUsageOfAnthropic(usage: unknown, outputTokens?: unknown): CanonicalUsage {
  const u = objectOr(usage);
  const usable = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;
  const cacheRead = usable(u.cache_read_input_tokens) ? u.cache_read_input_tokens : 0;
  const cacheWrite = usable(u.cache_creation_input_tokens) ? u.cache_creation_input_tokens : 0;
  // `cache_creation` splits the writes by lifetime (their sum is `cache_creation_input_tokens`): the 1-hour ones
  // are restated as `cache_write_1h_tokens`, among `cache_write_tokens`. Absent, nothing is split (the gateway
  // then bills the writes of a call that asked for 1 hour at the 1-hour price).
  const lifetimes = u.cache_creation;
  const cacheWrite1h =
    lifetimes && typeof lifetimes === 'object'
      ? (lifetimes as Record<string, unknown>).ephemeral_1h_input_tokens
      : undefined;
  const input = usable(u.input_tokens) ? u.input_tokens + cacheRead + cacheWrite : Number.NaN;
  const output = outputTokens ?? u.output_tokens;
  const completion = usable(output) ? output : Number.NaN;
  const searches = u.server_tool_use?.web_search_requests;
  const reported: TokenUsage = {
    prompt_tokens: input,
    completion_tokens: completion,
    total_tokens: input + completion,
    prompt_tokens_details: {
      cached_tokens: cacheRead,
      cache_write_tokens: cacheWrite,
      ...(cacheWrite1h !== undefined ? { cache_write_1h_tokens: cacheWrite1h } : {}),
    },
    ...(searches !== undefined ? { server_tool_use: { web_search_requests: searches } } : {}),
  };
  return {
    inputTokens: input,
    outputTokens: completion,
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    ...(usable(cacheWrite1h) ? { cacheWrite1hTokens: Math.min(cacheWrite1h, cacheWrite) } : {}),
    ...(usable(searches) ? { webSearches: searches } : {}),
    reported,
  };
}

/** A Messages answer as a canonical result (`native` keeps the answer itself when the call was Anthropic Messages). */
export function fromAnthropicResult(message: any, native: boolean): CanonicalResult {
  if (!Array.isArray(message?.content))
    throw new UpstreamError(502, 'The upstream provider answered a message without content.');
  const content: CanonicalPart[] = [];
  for (const block of message.content) {
    if (block?.type === 'text') content.push({ type: 'text', text: String(block.text ?? '') });
    else if (block?.type === 'thinking')
      content.push({ type: 'reasoning', text: String(block.thinking ?? ''), signature: block.signature });
    else if (block?.type === 'tool_use')
      content.push({
        type: 'tool_call',
        id: String(block.id),
        name: String(block.name),
        arguments: JSON.stringify(block.input ?? {}),
      });
  }
  return {
    id: String(message.id ?? 'msg'),
    model: String(message.model ?? ''),
    created: Math.floor(Date.now() / 1000),
    content,
    finishReason: finishOfAnthropic(message.stop_reason),
    usage: canonicalUsageOfAnthropic(message.usage),
    ...(native ? { native: { protocol: 'anthropic-messages' as const, body: message } } : {}),
  };
}

/**
 * Translates Anthropic SSE events to canonical events as they arrive. Native mode relays every upstream
 * event as exactly one canonical event carrying it as `native.frame` (the parsed JSON; its `type` is the
 * SSE event name): `message_delta` is the `usage` event, `message_stop` the `end` event, and an event with
 * nothing canonical in it is an empty text delta; `message_start` is the `start` event, followed by a `usage` event
 * of its input counts (no frame of its own). Usage: `message_start` carries the input counts, `message_delta` the
 * output count (newer API versions restate the input there too). A web search that ran (its
 * `web_search_tool_result` block began with results; an error result is not billed) is counted as it arrives and
 * reported in a `usage` event of its own (no frame): Anthropic bills it then, so a stream cut before its
 * `message_delta` (the client gone, the upstream broken) is charged for it; `message_delta`'s count replaces ours.
 */
export async function* anthropicEvents(
  events: AsyncIterable<{ event: string; data: string }>,
  native: boolean,
): AsyncGenerator<CanonicalEvent> {
  let inputUsage: Record<string, unknown> = {};
  let finish: FinishReason = 'stop';
  const toolIndexByBlock = new Map<number, number>();
  let searchesRun = 0;
  for await (const event of events) {
    let data: any;
    try {
      data = JSON.parse(event.data);
    } catch {
      throw new UpstreamError(502, 'The upstream stream carried a frame that is not JSON.');
    }
    const out: CanonicalEvent[] = [];
    switch (data?.type) {
      case 'message_start': {
        inputUsage = objectOr(data.message?.usage);
        const start: CanonicalEvent = {
          type: 'start',
          id: String(data.message?.id ?? 'msg'),
          model: String(data.message?.model ?? ''),
          created: Math.floor(Date.now() / 1000),
        };
        if (native) start.native = { protocol: 'anthropic-messages', frame: data };
        yield start;
        // The input counts (cache reads and writes apart) are final here: reported now, a stream cut before its
        // message_delta (the client gone, the upstream broken) is billed on them. The output is not known yet
        // (NaN: the gateway counts what was produced), and message_delta's usage replaces this one.
        yield { type: 'usage', usage: canonicalUsageOfAnthropic(inputUsage, Number.NaN) };
        continue;
      }
      case 'content_block_start':
        if (data.content_block?.type === 'web_search_tool_result' && Array.isArray(data.content_block.content)) {
          searchesRun++;
          const used = { ...objectOr(inputUsage.server_tool_use), web_search_requests: searchesRun };
          inputUsage = { ...inputUsage, server_tool_use: used };
          yield { type: 'usage', usage: canonicalUsageOfAnthropic(inputUsage, Number.NaN) };
        }
        if (data.content_block?.type === 'tool_use') {
          const index = toolIndexByBlock.size;
          toolIndexByBlock.set(data.index, index);
          out.push({
            type: 'tool_call_start',
            index,
            id: String(data.content_block.id),
            name: String(data.content_block.name),
          });
        }
        break;
      case 'content_block_delta': {
        const delta = data.delta ?? {};
        if (delta.type === 'text_delta') out.push({ type: 'text', delta: String(delta.text ?? '') });
        else if (delta.type === 'thinking_delta') out.push({ type: 'reasoning', delta: String(delta.thinking ?? '') });
        else if (delta.type === 'signature_delta')
          out.push({ type: 'reasoning', delta: '', signature: String(delta.signature ?? '') });
        else if (delta.type === 'input_json_delta')
          out.push({
            type: 'tool_call_delta',
            index: toolIndexByBlock.get(data.index) ?? 0,
            arguments: String(delta.partial_json ?? ''),
          });
        break;
      }
      case 'message_delta':
        finish = finishOfAnthropic(data.delta?.stop_reason);
        out.push({
          type: 'usage',
          usage: canonicalUsageOfAnthropic({ ...inputUsage, ...pickInput(data.usage) }, data.usage?.output_tokens),
        });
        break;
      case 'message_stop':
        yield {
          type: 'end',
          finishReason: finish,
          ...(native ? { native: { protocol: 'anthropic-messages' as const, frame: data } } : {}),
        };
        return;
      case 'error':
        // An overloaded Anthropic (its own 529) says so mid-stream too: kept, so a client can tell it from a fault.
        throw new UpstreamError(
          data.error?.type === 'overloaded_error' ? 529 : 502,
          `The upstream stream failed: ${data.error?.message ?? 'unknown error'}.`,
        );
    }
    if (native) {
      if (out.length === 0) out.push({ type: 'text', delta: '' });
      out.at(-1)!.native = { protocol: 'anthropic-messages', frame: data };
    }
    // Not `yield*` over an array: an async-from-sync iterator, ~0.4 µs more per event (bench/async-yield.ts).
    for (const event of out) yield event;
  }
  throw new UpstreamError(502, 'The upstream stream ended before it was complete.');
}

/** Input-token fields a `message_delta` may restate (the lifetimes' split `cache_creation` included). */
function pickInput(usage: any): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of ['input_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'])
    if (typeof usage?.[key] === 'number') out[key] = usage[key];
  if (usage?.server_tool_use) out.server_tool_use = usage.server_tool_use;
  if (usage?.cache_creation && typeof usage.cache_creation === 'object') out.cache_creation = usage.cache_creation;
  return out;
}
