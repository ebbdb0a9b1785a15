import type {
  CanonicalCall,
  CanonicalDocument,
  CanonicalEvent,
  CanonicalPart,
  CanonicalResult,
  CanonicalUsage,
  FinishReason,
  ReasoningEffort,
} from '../../gateway/canonical.ts';
import { UpstreamError, type ChatBody, type ChatChunk, type ChatCompletion, type ProviderCall } from '../types.ts';
import { openAiEffortOf, openAiReasoningFields } from '../reasoning.ts';

/**
 * Canonical calls ⇄ OpenAI chat completions. A call that arrived as OpenAI chat (`native`) is sent as the
 * client's own body; any other is built from its canonical fields.
 */

const objectOr = (value: unknown): Record<string, any> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, any>) : {};

/** Text parts joined; what OpenAI's `content` string holds. */
function textOf(parts: CanonicalPart[]): string {
  return parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** Whether a part carries Anthropic's caching marker (kept only for an upstream that reads it: OpenRouter). */
const marked = (part: CanonicalPart): boolean =>
  (part.type === 'text' || part.type === 'tool_result') && !!part.cacheControl;

/** Text parts as OpenAI content parts, each with its `cache_control` (OpenRouter's form for Anthropic models). */
function markedTextParts(parts: CanonicalPart[]): unknown[] {
  return parts.flatMap((part) =>
    part.type === 'text'
      ? [{ type: 'text', text: part.text, ...(part.cacheControl ? { cache_control: part.cacheControl } : {}) }]
      : [],
  );
}

/**
 * A text document as the text the model reads: its title and context in front, each a paragraph (Anthropic's
 * `document` block has no chat equivalent, and these are what the model is told of it).
 */
function documentText(part: CanonicalDocument & { source: { type: 'text' } }): CanonicalPart {
  const text = [part.title, part.context, part.source.text].filter((piece) => piece).join('\n\n');
  return { type: 'text', text, ...(part.cacheControl ? { cacheControl: part.cacheControl } : {}) };
}

/**
 * A PDF as chat's inline `file` part (its context, when given, as a text part in front). Only a `data:` URL gets
 * here: a PDF by http(s) URL has no chat form, and the Messages parser refuses it for such a model before the hold.
 */
function pdfParts(part: CanonicalDocument & { source: { type: 'pdf' } }): unknown[] {
  const file = { type: 'file', file: { filename: part.title || 'document.pdf', file_data: part.source.url } };
  return part.context ? [{ type: 'text', text: part.context }, file] : [file];
}

/**
 * User content: a plain string when it is only text (the common case, and the cheapest to count), else parts.
 * `pdfs: false` leaves PDFs out (the prompt counted for the hold, which holds a call with a PDF at the model's
 * whole context instead: `gateway/chat-plan.ts`).
 */
function userContent(sent: CanonicalPart[], cacheControl = false, pdfs = true): string | unknown[] {
  const parts = sent.flatMap((part) =>
    part.type !== 'document'
      ? [part]
      : part.source.type === 'text'
        ? [documentText({ ...part, source: part.source })]
        : pdfs
          ? [part]
          : [],
  );
  if (parts.every((part) => part.type === 'text') && !(cacheControl && parts.some(marked))) return textOf(parts);
  return parts.flatMap((part): unknown[] => {
    if (part.type === 'text')
      return [
        {
          type: 'text',
          text: part.text,
          ...(cacheControl && part.cacheControl ? { cache_control: part.cacheControl } : {}),
        },
      ];
    if (part.type === 'image')
      return [{ type: 'image_url', image_url: { url: part.url, ...(part.detail ? { detail: part.detail } : {}) } }];
    if (part.type === 'document' && part.source.type === 'pdf') return pdfParts({ ...part, source: part.source });
    return [];
  });
}

/**
 * The call with Anthropic's top-level `cache_control` (automatic caching: the breakpoint on the last cacheable
 * block) placed where Anthropic places it, on the last text or tool result of the conversation, for an upstream
 * that takes the marker on content parts only.
 */
function withAutomaticBreakpoint(call: Pick<CanonicalCall, 'system' | 'messages' | 'cacheControl'>) {
  if (!call.cacheControl) return call;
  const messages = [...call.messages];
  for (let m = messages.length - 1; m >= 0; m--) {
    const content = messages[m]!.content;
    const at = content.findLastIndex((part) => part.type === 'text' || part.type === 'tool_result');
    if (at < 0) continue;
    const part = content[at] as CanonicalPart & { cacheControl?: Record<string, unknown> };
    if (part.cacheControl) return call;
    const parts = [...content];
    parts[at] = { ...part, cacheControl: call.cacheControl } as CanonicalPart;
    messages[m] = { ...messages[m]!, content: parts };
    return { ...call, messages };
  }
  return call;
}

/**
 * The OpenAI chat messages of a canonical call: system parts as one system message, tool results as `tool`
 * messages, tool calls as an assistant's `tool_calls`. Reasoning parts have no OpenAI chat input and are left out.
 * `cacheControl`: keep Anthropic's caching markers on the content parts (OpenRouter reads them for the models that
 * cache only when asked, Anthropic's), the top-level one placed on the last part as Anthropic would.
 */
export function toOpenAiMessages(
  sent: Pick<CanonicalCall, 'system' | 'messages' | 'cacheControl'>,
  options: { cacheControl?: boolean; pdfs?: boolean } = {},
): Array<Record<string, unknown>> {
  const cache = options.cacheControl === true;
  const call = cache ? withAutomaticBreakpoint(sent) : sent;
  const messages: Array<Record<string, unknown>> = [];
  // The system's blocks (Anthropic's system array, Responses' instructions and developer messages) are separate
  // texts: joined as paragraphs, as the Anthropic wire joins them, never run together mid-sentence.
  const system = call.system.map((part) => (part.type === 'text' ? part.text : '')).join('\n\n');
  if (call.system.length)
    messages.push({
      role: 'system',
      content: cache && call.system.some(marked) ? markedTextParts(call.system) : system,
    });
  for (const message of call.messages) {
    const results = message.content.filter((part) => part.type === 'tool_result');
    for (const result of results)
      messages.push({
        role: 'tool',
        tool_call_id: result.callId,
        content:
          cache && result.cacheControl
            ? [{ type: 'text', text: result.content, cache_control: result.cacheControl }]
            : result.content,
      });
    const rest = message.content.filter((part) => part.type !== 'tool_result' && part.type !== 'reasoning');
    if (message.role === 'assistant') {
      const calls = rest.filter((part) => part.type === 'tool_call');
      const text = textOf(rest);
      if (!text && !calls.length) continue;
      messages.push({
        role: 'assistant',
        content: cache && rest.some(marked) ? markedTextParts(rest) : text || (calls.length ? null : ''),
        ...(calls.length
          ? {
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: 'function',
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      });
    } else if (rest.length || !results.length) {
      messages.push({ role: 'user', content: userContent(rest, cache, options.pdfs !== false) });
    }
  }
  return messages;
}

/**
 * The OpenAI chat fields of a canonical call that count as prompt (tools and response format are sent as text).
 * PDFs are left out, and so are a chat body's `file` parts (each is a document the hold holds at the model's whole
 * context instead, `gateway/documents.ts`): counted as their base64 text they would lower the output cap, to a
 * single token once that count passed the context.
 */
export function toOpenAiPromptFields(call: CanonicalCall): {
  messages: unknown[];
  tools?: unknown;
  response_format?: unknown;
} {
  if (call.native?.protocol === 'openai-chat') {
    const body = call.native.body as { messages: unknown[] };
    return { ...body, messages: body.messages.map(withoutFileParts) };
  }
  return {
    messages: toOpenAiMessages(call, { pdfs: false }),
    ...(call.tools.length ? { tools: toOpenAiTools(call) } : {}),
    ...(call.responseFormat ? { response_format: toOpenAiResponseFormat(call) } : {}),
  };
}

/** A chat message without its `file` parts (the same message when it has none). */
function withoutFileParts(message: unknown): unknown {
  const content = (message as { content?: unknown } | null)?.content;
  if (!Array.isArray(content) || !content.some((part) => part?.type === 'file')) return message;
  return { ...(message as object), content: content.filter((part) => part?.type !== 'file') };
}

function toOpenAiTools(call: CanonicalCall): unknown[] {
  return call.tools.map((tool) => ({
    type: 'function',
    function: {
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      parameters: tool.parameters,
      ...(tool.strict ? { strict: true } : {}),
    },
  }));
}

function toOpenAiResponseFormat(call: CanonicalCall): unknown {
  const format = call.responseFormat!;
  return format.type === 'json_object'
    ? { type: 'json_object' }
    : {
        type: 'json_schema',
        json_schema: {
          name: format.name,
          schema: format.schema,
          ...(format.strict !== undefined ? { strict: format.strict } : {}),
        },
      };
}

/**
 * The request body for one upstream. Invariant: the output cap sent is `call.maxOutputTokens`, the one the
 * hold was computed with. A native body keeps the client's own cap field name; otherwise OpenAI gets
 * `max_completion_tokens` (its reasoning models refuse `max_tokens`) and every other provider `max_tokens`.
 * A stream always asks for usage: it is what the call is billed on.
 */
export function toOpenAiChatBody(call: ProviderCall, provider: string, stream: boolean): ChatBody {
  let body: ChatBody;
  if (call.native?.protocol === 'openai-chat') {
    body = { ...(call.native.body as ChatBody), model: call.model };
    // The client's effort in a level the model has (gpt-5 has no `none`, the o-series no `minimal` or `xhigh`).
    if (typeof body.reasoning_effort === 'string')
      body.reasoning_effort = openAiEffortOf(call.model, body.reasoning_effort as ReasoningEffort);
  } else {
    body = { model: call.model, messages: toOpenAiMessages(call, { cacheControl: provider === 'openrouter' }) };
    if (call.tools.length) body.tools = toOpenAiTools(call);
    if (call.toolChoice !== undefined)
      body.tool_choice =
        typeof call.toolChoice === 'string'
          ? call.toolChoice
          : { type: 'function', function: { name: call.toolChoice.name } };
    // OpenAI refuses parallel_tool_calls on a request without tools.
    if (call.parallelToolCalls !== undefined && call.tools.length) body.parallel_tool_calls = call.parallelToolCalls;
    if (call.temperature !== undefined) body.temperature = call.temperature;
    if (call.topP !== undefined) body.top_p = call.topP;
    if (call.stop?.length) body.stop = call.stop;
    // An effort as sent (in a level the model has); an Anthropic thinking budget as the effort it amounts to (or
    // OpenRouter's own budget), on a model that reasons.
    Object.assign(
      body,
      openAiReasoningFields(call.reasoning, call.maxOutputTokens, provider, call.model, call.modelReasons),
    );
    if (call.responseFormat) body.response_format = toOpenAiResponseFormat(call);
    if (call.prediction !== undefined) body.prediction = { type: 'content', content: call.prediction };
    // The cache routing keeps a conversation's turns on the cached prefix (chat's allow-list passes the same).
    if (call.promptCache?.key !== undefined) body.prompt_cache_key = call.promptCache.key;
    if (call.promptCache?.retention !== undefined && provider === 'openai')
      body.prompt_cache_retention = call.promptCache.retention;
    // No `metadata`: OpenAI refuses it unless `store` is on ("The 'metadata' parameter is only allowed when
    // 'store' is enabled"), and storing another protocol's conversation upstream is not the client's ask.
  }
  const field =
    body.max_completion_tokens !== undefined || (body.max_tokens === undefined && provider === 'openai')
      ? 'max_completion_tokens'
      : 'max_tokens';
  delete body.max_tokens;
  delete body.max_completion_tokens;
  body[field] = call.maxOutputTokens;
  return withStreamFlags(body, stream);
}

/**
 * `body` with OpenAI's stream fields for a stream or not (chat's and legacy completions' alike): a stream always
 * asks for usage, which is what the call is billed on; a whole answer carries neither field (OpenAI refuses
 * `stream_options` without `stream`).
 */
export function withStreamFlags<B extends Record<string, unknown>>(body: B, stream: boolean): B {
  if (stream) {
    const fields: Record<string, unknown> = body;
    fields.stream = true;
    fields.stream_options = { ...objectOr(body.stream_options), include_usage: true };
  } else {
    delete body.stream;
    delete body.stream_options;
  }
  return body;
}

const FINISH: Record<string, FinishReason> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  content_filter: 'content_filter',
};

/** OpenAI's finish reason in canonical terms (an unknown one is a plain stop). */
export function finishOf(reason: unknown): FinishReason {
  return FINISH[String(reason)] ?? 'stop';
}

/** A number as reported, NaN when it is none (the gateway sanitizes every count before pricing it). */
const count = (value: unknown): number => (typeof value === 'number' ? value : Number.NaN);

/** OpenAI usage in canonical terms, the report kept as sent (`reported`) for the gateway's sanitizer. */
export function canonicalUsageOfOpenAi(usage: unknown): CanonicalUsage {
  const u = objectOr(usage);
  const prompt = objectOr(u.prompt_tokens_details);
  const completion = objectOr(u.completion_tokens_details);
  const optional = (value: unknown) => (typeof value === 'number' ? value : undefined);
  return {
    inputTokens: count(u.prompt_tokens),
    outputTokens: count(u.completion_tokens),
    cacheReadTokens: optional(prompt.cached_tokens ?? u.prompt_cache_hit_tokens),
    cacheWriteTokens: optional(prompt.cache_write_tokens),
    reasoningTokens: optional(completion.reasoning_tokens),
    audioInputTokens: optional(prompt.audio_tokens),
    audioOutputTokens: optional(completion.audio_tokens),
    webSearches: optional(objectOr(u.server_tool_use).web_search_requests),
    reported: u,
  };
}

/** A chat completion as a canonical result; `native` keeps the upstream's own answer when the call was OpenAI chat. */
export function fromOpenAiCompletion(completion: ChatCompletion, native: boolean): CanonicalResult {
  const choice = completion.choices[0];
  const others = completion.choices.slice(1).map((other) => partsOfMessage(objectOr(other?.message)));
  return {
    id: String(completion.id ?? 'chatcmpl'),
    model: String(completion.model ?? ''),
    created: typeof completion.created === 'number' ? completion.created : Math.floor(Date.now() / 1000),
    content: partsOfMessage(objectOr(choice?.message)),
    ...(others.length ? { otherChoices: others } : {}),
    finishReason: finishOf(choice?.finish_reason),
    usage: completion.usage
      ? canonicalUsageOfOpenAi(completion.usage)
      : { inputTokens: Number.NaN, outputTokens: Number.NaN },
    ...(native ? { native: { protocol: 'openai-chat' as const, body: completion } } : {}),
  };
}

/** An assistant message's output as canonical parts: reasoning (OpenRouter's, DeepSeek's), text, tool calls. */
function partsOfMessage(message: Record<string, any>): CanonicalPart[] {
  const content: CanonicalPart[] = [];
  const reasoning = message.reasoning ?? message.reasoning_content;
  if (typeof reasoning === 'string' && reasoning) content.push({ type: 'reasoning', text: reasoning });
  if (typeof message.content === 'string' && message.content) content.push({ type: 'text', text: message.content });
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    content.push({
      type: 'tool_call',
      id: String(call?.id ?? ''),
      name: String(call?.function?.name ?? ''),
      arguments: String(call?.function?.arguments ?? ''),
    });
  }
  return content;
}

/**
 * Follows an OpenAI chat stream chunk by chunk. In native mode every chunk comes out as exactly one event
 * carrying the chunk as its `native` frame (a chunk with nothing canonical in it is an empty text delta), so an
 * OpenAI chat client gets the upstream's frames relayed one for one; a chunk with usage comes out as the
 * `usage` event carrying the frame. The `end` event is the caller's, once the stream is done.
 */
export class OpenAiStreamReader {
  finish: FinishReason | null = null;
  #started = false;
  readonly #native: boolean;
  readonly #protocol: 'openai-chat' | 'openai-completions';

  /**
   * `protocol`: the stream's wire, chat's chunks (`choices[].delta`) or legacy completions' (`choices[].text`,
   * read as a content delta); a native event's frame is tagged with it.
   */
  constructor(native: boolean, protocol: 'openai-chat' | 'openai-completions' = 'openai-chat') {
    this.#native = native;
    this.#protocol = protocol;
  }

  events(chunk: ChatChunk): CanonicalEvent[] {
    // One array per chunk (a token's chunk is one event): the start event, if first, then the content.
    const events: CanonicalEvent[] = [];
    if (!this.#started) {
      this.#started = true;
      events.push({
        type: 'start',
        id: String(chunk.id ?? 'chatcmpl'),
        model: String(chunk.model ?? ''),
        created: typeof chunk.created === 'number' ? chunk.created : Math.floor(Date.now() / 1000),
      });
    }
    const contentFrom = events.length;
    for (const choice of chunk.choices ?? []) {
      const number = typeof choice?.index === 'number' ? choice.index : 0;
      if (choice?.finish_reason && number === 0) this.finish = finishOf(choice.finish_reason);
      const delta = (this.#protocol === 'openai-chat' ? choice?.delta : textDelta(choice)) as
        Record<string, any> | undefined;
      // Other choices (`n` > 1) exist only in a native chat, whose renderer relays the frames: they are kept
      // (tagged `choice`) so the call is billed for them when the upstream reports no usage.
      if (!delta || (number !== 0 && !this.#native)) continue;
      const tag = number !== 0 ? { choice: number } : {};
      const reasoning = delta.reasoning ?? delta.reasoning_content;
      if (typeof reasoning === 'string' && reasoning) events.push({ type: 'reasoning', delta: reasoning, ...tag });
      if (typeof delta.content === 'string' && delta.content)
        events.push({ type: 'text', delta: delta.content, ...tag });
      for (const call of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
        const index = typeof call?.index === 'number' ? call.index : 0;
        if (call?.id || call?.function?.name)
          events.push({
            type: 'tool_call_start',
            index,
            id: String(call.id ?? ''),
            name: String(call.function?.name ?? ''),
            ...tag,
          });
        if (call?.function?.arguments)
          events.push({ type: 'tool_call_delta', index, arguments: String(call.function.arguments), ...tag });
      }
    }
    if (chunk.usage) events.push({ type: 'usage', usage: canonicalUsageOfOpenAi(chunk.usage) });
    if (!this.#native) return events;
    // One frame, one event: the usage event when there is one (its renderer replaces the usage), else the last.
    if (events.length === contentFrom) events.push({ type: 'text', delta: '' });
    events[events.length - 1]!.native = { protocol: this.#protocol, frame: chunk };
    return events;
  }
}

/** A legacy completion chunk's choice as a chat delta: its `text` is the content. */
function textDelta(choice: unknown): { content: string } | undefined {
  const text = (choice as { text?: unknown } | null)?.text;
  return typeof text === 'string' ? { content: text } : undefined;
}
