import { ApiError, errors } from '../../platform/errors.ts';
import type { CanonicalCall, CanonicalMessage, CanonicalPart, CanonicalTool } from '../../gateway/canonical.ts';
import type { ReasoningEffort } from '../../gateway/canonical.ts';
import type { CatalogueModel } from '../../models/catalogue.ts';
import { findLongCache, isPricedCacheTtl } from '../../gateway/long-cache.ts';
import { documentParts, documentRefusal } from './documents.ts';
import { DEFAULTED_TOOL_FIELDS, toolTypeRefusal } from './tool-types.ts';
import * as webSearch from './web-search.ts';

/**
 * Anthropic's Messages request → the canonical call, with the client's own body kept as `native` so that an
 * Anthropic upstream gets it as sent (`cache_control`, thinking signatures, `top_k` and every block intact).
 *
 * Security invariant: the native body reaches an Anthropic upstream without another look, so every field
 * and block that can make the upstream charge more than the hold bounds is refused here, before anything
 * is held: only the top-level fields of {@link ALLOWED_FIELDS} pass, tools must be custom tools or Anthropic's
 * web search (its `max_uses` set or lowered and every allowed search held for, `web-search.ts`; `tool-types.ts`
 * says why each other type is refused), and blocks must be of a type the canonical call carries (or replayed web
 * search blocks, carried as its `nativeInput`), so that the pipeline counts every one of them into the hold. A
 * field on no list is a 400 `UNSUPPORTED_PARAMETER` naming it, never passed on unread (as chat's pass-through
 * allow-list).
 */

/** The request body as the route validated it (the parser checks the blocks). */
export type MessagesRequest = Record<string, unknown> & {
  model: string;
  messages: Array<{ role: 'user' | 'assistant' | 'system'; content: string | Array<Record<string, unknown>> }>;
  max_tokens?: number;
};

/** Top-level fields that may reach an upstream; their cost is bounded by the tokens held. */
const ALLOWED_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'stream',
  'temperature',
  'top_p',
  'top_k',
  'stop_sequences',
  'tools',
  'tool_choice',
  'thinking',
  'metadata',
  'output_config',
  'cache_control',
  'diagnostics',
  'service_tier',
  'speed',
]);

/** Allowed fields passed only with a value billed at the catalogue price; why another value is refused. */
const CHECKED_FIELDS: Readonly<Record<string, { priced: readonly unknown[]; why: string }>> = {
  service_tier: {
    priced: ['standard_only'],
    why: 'Anthropic\'s priority tier ("auto" may use it) is billed above the catalogue price; send "standard_only"',
  },
  speed: {
    priced: ['standard', null],
    why: 'fast mode is billed at a premium above the catalogue price; send "standard"',
  },
};

/** Fields known to cost beyond what the catalogue prices, refused with why. */
const REFUSED_FIELDS: Readonly<Record<string, string>> = {
  inference_geo: 'inference pinned to a region is billed above the catalogue price',
  container: 'code-execution containers are billed per hour on top of tokens',
  mcp_servers: 'remote MCP tool calls are not bounded by the tokens the gateway holds for',
  compaction: 'server-side compaction runs extra model calls the gateway does not hold for',
};

/**
 * `thread` asks Anthropic to keep the conversation between turns (the message-threads beta, which the SDK's
 * `beta.messages.toolRunner()` asks for on its first turn). The gateway holds no conversation, so it answers as
 * Anthropic does for a request it cannot thread: 400 with `details.error_code: "thread_unsupported_request"`,
 * on which the SDK sends every later turn without `thread`, whole history included. Any other 400 would end
 * the SDK's loop.
 */
function threadRefused(): ApiError {
  return new ApiError(
    'UNSUPPORTED_PARAMETER',
    'The field "thread" is not accepted: the gateway keeps no conversation between calls; send the whole history without it.',
    { details: { param: 'thread', details: { error_code: 'thread_unsupported_request' } } },
  );
}

/**
 * Fields left out of the call, silently: `context_management` (which Claude Code sends by itself) is a beta
 * whose header is not forwarded, so Anthropic would refuse the body with it; without its edits, the whole
 * context goes upstream, which is what the hold counted.
 */
const DROPPED_FIELDS: readonly string[] = ['context_management'];

/** Anthropic's efforts (`output_config.effort`): each is an OpenAI effort too, and reaches an OpenAI model as sent. */
const EFFORTS: readonly ReasoningEffort[] = ['low', 'medium', 'high', 'xhigh', 'max'];

const unsupported = errors.unsupported;

function invalid(param: string, message: string): ApiError {
  return errors.invalid(message, { param });
}

/**
 * Parses a Messages (or count_tokens) body into the canonical call. `requireMaxTokens`: `/messages` needs
 * `max_tokens` as Anthropic does (its clients always send it); count_tokens ignores it.
 */
export function parseMessagesRequest(
  sent: MessagesRequest,
  options: { requireMaxTokens: boolean; webSearch?: webSearch.WebSearchLimits },
): CanonicalCall {
  const body = DROPPED_FIELDS.some((field) => field in sent) ? dropFields(sent) : sent;
  for (const [field, value] of Object.entries(body)) {
    const checked = CHECKED_FIELDS[field];
    if (checked && value !== undefined && !checked.priced.includes(value)) {
      throw unsupported(field, `The field "${field}" is refused with ${JSON.stringify(value)}: ${checked.why}.`);
    }
    if (value === undefined || ALLOWED_FIELDS.has(field)) continue;
    if (field === 'thread') throw threadRefused();
    const why = REFUSED_FIELDS[field];
    throw unsupported(
      field,
      why
        ? `The field "${field}" is refused: ${why}.`
        : `The field "${field}" is not accepted: the gateway passes only fields whose cost it can hold for (README "Anthropic Messages").`,
    );
  }
  if (options.requireMaxTokens && body.max_tokens === undefined) {
    throw invalid(
      'max_tokens',
      'max_tokens is required: the most tokens the answer may have (the Messages API has no default).',
    );
  }
  const cacheControl = checkCacheControl(body.cache_control, 'cache_control');
  // Web search: its tools go upstream with their max_uses set (web-search.ts), and are held for.
  const searchLimits = options.webSearch ?? webSearch.DEFAULT_WEB_SEARCH_LIMITS;
  const search = webSearch.webSearchTools(body.tools, searchLimits);
  const call: CanonicalCall = {
    model: body.model,
    ...parseConversation(body.system, body.messages),
    tools: parseTools(body.tools),
    maxOutputTokens: options.requireMaxTokens ? body.max_tokens! : null,
    stream: body.stream === true,
    native: { protocol: 'anthropic-messages', body: search ? { ...body, tools: search.tools } : body },
    ...(cacheControl ? { cacheControl } : {}),
  };
  const replayed = webSearch.replayedSearches(body, search?.tools);
  const searches = (search?.maxUses ?? 0) + replayed.pending;
  if (searches) call.webSearch = { maxUses: searches, inputTokensPerUse: searchLimits.WEB_SEARCH_HOLD_TOKENS };
  if (replayed.nativeInput.length) call.nativeInput = replayed.nativeInput;
  const longCache = findLongCache(body, '');
  if (longCache) call.longCache = longCache;
  const toolChoice = parseToolChoice(body.tool_choice, call.tools, search?.names);
  if (toolChoice) call.toolChoice = toolChoice;
  if ((body.tool_choice as { disable_parallel_tool_use?: unknown } | undefined)?.disable_parallel_tool_use === true)
    call.parallelToolCalls = false;
  if (typeof body.temperature === 'number') call.temperature = body.temperature;
  if (typeof body.top_p === 'number') call.topP = body.top_p;
  if (typeof body.top_k === 'number') call.topK = body.top_k;
  // `metadata` stays in the native body only: Anthropic's is the end user's id (Claude Code always sends it), and
  // OpenAI refuses a `metadata` sent without `store: true`, so a translated call leaves it out.
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length) call.stop = body.stop_sequences as string[];
  const thinking = body.thinking as { type: string; budget_tokens?: number } | undefined;
  if (thinking?.type === 'enabled') {
    if (thinking.budget_tokens === undefined)
      throw invalid('thinking.budget_tokens', 'thinking.budget_tokens is required when thinking is enabled.');
    if (body.max_tokens !== undefined && thinking.budget_tokens >= body.max_tokens) {
      const message = `thinking.budget_tokens (${thinking.budget_tokens}) must be less than max_tokens (${body.max_tokens}).`;
      throw invalid('thinking.budget_tokens', message);
    }
    call.reasoning = { budgetTokens: thinking.budget_tokens };
  }
  const output = body.output_config as
    { effort?: string | null; format?: { schema: Record<string, unknown> } | null } | undefined;
  // `thinking: { type: "adaptive" }` lets the model decide how much to think: an OpenAI-compatible model does that at
  // its own default effort, so it adds nothing here (its `output_config.effort`, when sent, is the effort).
  if (output?.effort && EFFORTS.includes(output.effort as ReasoningEffort))
    call.reasoning = { ...call.reasoning, effort: output.effort as ReasoningEffort };
  if (output?.format) call.responseFormat = { type: 'json_schema', name: 'output', schema: output.format.schema };
  return call;
}

function dropFields(sent: MessagesRequest): MessagesRequest {
  const kept = { ...sent };
  for (const field of DROPPED_FIELDS) delete kept[field];
  return kept;
}

/**
 * Why a model cannot take this call, or null (the pipeline's `refuses`): documents another upstream cannot take
 * (`documents.ts`), Anthropic's web search on a model that cannot run or price it (`web-search.ts`); a thinking
 * budget must stay below the output cap the upstream receives, and the model's cap may be lower than the client's
 * `max_tokens`, which Anthropic would refuse only after the hold; and reasoning another upstream has no word for
 * (`thinking` of type `between_tools`, an unknown `output_config.effort`) is refused for a model that is not
 * Anthropic's, never dropped. The model asked for answers a 400; a fallback is skipped.
 */
export function messagesRefusal(call: CanonicalCall): ((model: CatalogueModel) => ApiError | null) | undefined {
  const budget = call.reasoning?.budgetTokens;
  const untranslatable = untranslatableReasoning(call);
  const documents = documentRefusal(call);
  const serverTools = webSearch.serverToolRefusal(call);
  if (budget === undefined && !untranslatable && !documents && !serverTools) return undefined;
  return (model) => {
    const refused = documents?.(model) ?? serverTools?.(model);
    if (refused) return refused;
    if (untranslatable && model.provider !== 'anthropic')
      return unsupported(untranslatable.param, untranslatable.message(model.id));
    if (budget === undefined || model.maxOutputTokens === null || budget < model.maxOutputTokens) return null;
    const message = `thinking.budget_tokens (${budget}) must be less than the output cap of "${model.id}" (${model.maxOutputTokens} tokens).`;
    return invalid('thinking.budget_tokens', message);
  };
}

/**
 * The reasoning of a Messages body that only Anthropic can take, or null: another upstream would have to run the
 * call without it (an Anthropic model gets the body as sent, and judges it itself).
 */
function untranslatableReasoning(call: CanonicalCall): { param: string; message: (model: string) => string } | null {
  const body = call.native?.body ?? {};
  const thinking = body.thinking as { type?: unknown } | undefined;
  if (thinking?.type === 'between_tools')
    return {
      param: 'thinking.type',
      message: (model) =>
        `thinking "between_tools" has no equivalent on "${model}" (not an Anthropic model): send thinking "enabled" with budget_tokens, "adaptive", or an output_config.effort.`,
    };
  const effort = (body.output_config as { effort?: unknown } | undefined)?.effort;
  if (effort !== undefined && effort !== null && !EFFORTS.includes(effort as ReasoningEffort))
    return {
      param: 'output_config.effort',
      message: (model) =>
        `output_config.effort ${JSON.stringify(effort)} has no equivalent on "${model}" (not an Anthropic model): use one of ${EFFORTS.join(', ')}.`,
    };
  return null;
}

/**
 * Refuses a cache lifetime the catalogue cannot price: only "5m" (`cacheWrite`) and "1h" (`cacheWrite1h`; a
 * model without that price refuses it when the call is planned, `gateway/long-cache.ts`).
 */
function checkCacheControl(value: unknown, param: string): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  const control = value as { type?: unknown; ttl?: unknown };
  if (control.type !== 'ephemeral') throw invalid(param, `${param}.type must be "ephemeral".`);
  if (control.ttl !== undefined && !isPricedCacheTtl(control.ttl)) {
    const why = 'the catalogue prices cache writes of 5 minutes and 1 hour only; use "5m" (the default) or "1h"';
    throw unsupported(param, `${param}.ttl ${JSON.stringify(control.ttl)} is refused: ${why}.`);
  }
  return control as Record<string, unknown>;
}

function parseSystem(system: unknown): CanonicalPart[] {
  if (system === undefined || system === null) return [];
  if (typeof system === 'string') return system ? [{ type: 'text', text: system }] : [];
  return (system as Array<Record<string, unknown>>).map((block, i) => {
    const param = `system[${i}]`;
    if (block.type !== 'text' || typeof block.text !== 'string')
      throw invalid(param, `${param} must be a text block ({ type: "text", text }).`);
    return textPart(block, param);
  });
}

function textPart(block: Record<string, unknown>, param: string): CanonicalPart {
  if (typeof block.text !== 'string') throw invalid(`${param}.text`, `${param}.text must be a string.`);
  const cacheControl = checkCacheControl(block.cache_control, `${param}.cache_control`);
  return cacheControl ? { type: 'text', text: block.text, cacheControl } : { type: 'text', text: block.text };
}

/** An image block's source as a URL: base64 data becomes a `data:` URL (the pipeline holds it at the model's image budget). */
function imagePart(block: Record<string, unknown>, param: string): CanonicalPart {
  checkCacheControl(block.cache_control, `${param}.cache_control`);
  const source = block.source as Record<string, unknown> | undefined;
  if (source?.type === 'base64' && typeof source.media_type === 'string' && typeof source.data === 'string') {
    return { type: 'image', url: `data:${source.media_type};base64,${source.data}` };
  }
  if (source?.type === 'url' && typeof source.url === 'string' && /^https?:\/\//.test(source.url))
    return { type: 'image', url: source.url };
  throw invalid(
    `${param}.source`,
    `${param}.source must be { type: "base64", media_type, data } or { type: "url", url } with an http(s) URL.`,
  );
}

/**
 * The top-level `system` and the turns as canonical system parts and messages. A mid-conversation system
 * message (`role: "system"`, text only; Claude Code sends one after the user's turn) joins the system
 * instructions, in order, as a system message of the other protocols does: a translated upstream gets it there,
 * the hold counts it, and an Anthropic upstream gets the body as sent.
 */
function parseConversation(
  system: unknown,
  messages: MessagesRequest['messages'],
): { system: CanonicalPart[]; messages: CanonicalMessage[] } {
  const parts = parseSystem(system);
  messages.forEach((message, m) => {
    if (message.role !== 'system') return;
    if (typeof message.content === 'string') {
      if (message.content) parts.push({ type: 'text', text: message.content });
      return;
    }
    message.content.forEach((block, b) => {
      const param = `messages[${m}].content[${b}]`;
      if (block.type !== 'text')
        throw invalid(param, `${param}: a system message holds text blocks only ({ type: "text", text }).`);
      parts.push(textPart(block, param));
    });
  });
  if (messages.every((message) => message.role === 'system'))
    throw invalid('messages', 'messages must hold at least one turn of role user or assistant.');
  return { system: parts, messages: parseMessages(messages) };
}

/**
 * Anthropic's turns → canonical messages. A user turn's `tool_result` blocks become `tool` messages (one
 * per result, in order, as OpenAI-shaped upstreams want them), followed by the turn's other blocks as one
 * user message; an image or a document inside a tool result joins that user message, so that it is held for and
 * reaches a cross-protocol upstream too. Consecutive turns of one role stay apart, as the client sent them.
 */
function parseMessages(messages: MessagesRequest['messages']): CanonicalMessage[] {
  const out: CanonicalMessage[] = [];
  messages.forEach((message, m) => {
    const role = message.role;
    if (role === 'system') return; // in the system instructions (parseConversation)
    if (typeof message.content === 'string') {
      out.push({ role, content: [{ type: 'text', text: message.content }] });
      return;
    }
    if (message.content.length === 0)
      throw invalid(`messages[${m}].content`, `messages[${m}].content must not be empty.`);
    const rest: CanonicalPart[] = [];
    message.content.forEach((block, b) => {
      for (const part of parseBlock(block, role, `messages[${m}].content[${b}]`)) {
        if (part.type === 'tool_result') out.push({ role: 'tool', content: [part] });
        else rest.push(part);
      }
    });
    if (rest.length) out.push({ role, content: rest });
  });
  return out;
}

/** One block of a turn as canonical parts (a tool result with images is its result, then the images). */
function parseBlock(block: Record<string, unknown>, role: 'user' | 'assistant', param: string): CanonicalPart[] {
  const onlyIn = (wanted: 'user' | 'assistant') => {
    if (role !== wanted)
      throw invalid(
        param,
        `${param}: a ${String(block.type)} block belongs in ${wanted === 'user' ? 'a user' : 'an assistant'} turn.`,
      );
  };
  switch (block.type) {
    case 'text':
      return [textPart(block, param)];
    case 'image':
      onlyIn('user');
      return [imagePart(block, param)];
    case 'document':
      onlyIn('user');
      return documentParts(block, param, { imagePart, checkCacheControl });
    case 'tool_use': {
      onlyIn('assistant');
      checkCacheControl(block.cache_control, `${param}.cache_control`);
      if (typeof block.id !== 'string' || typeof block.name !== 'string') {
        throw invalid(param, `${param}: a tool_use block needs a string id and name.`);
      }
      const input = block.input ?? {};
      if (typeof input !== 'object' || Array.isArray(input))
        throw invalid(`${param}.input`, `${param}.input must be an object.`);
      return [{ type: 'tool_call', id: block.id, name: block.name, arguments: JSON.stringify(input) }];
    }
    case 'tool_result':
      onlyIn('user');
      return toolResultParts(block, param);
    case 'thinking':
      onlyIn('assistant');
      if (typeof block.thinking !== 'string') throw invalid(`${param}.thinking`, `${param}.thinking must be a string.`);
      return [
        {
          type: 'reasoning',
          text: block.thinking,
          ...(typeof block.signature === 'string' ? { signature: block.signature } : {}),
        },
      ];
    case 'redacted_thinking':
      onlyIn('assistant');
      if (typeof block.data !== 'string') throw invalid(`${param}.data`, `${param}.data must be a string.`);
      // The encrypted reasoning travels as the signature; its text is unknown, and held for as its data.
      return [{ type: 'reasoning', text: '', signature: block.data }];
    case 'server_tool_use':
    case 'web_search_tool_result':
      // An earlier web search, replayed: Anthropic's only (web-search.ts), counted into the hold as nativeInput.
      onlyIn('assistant');
      checkCacheControl(block.cache_control, `${param}.cache_control`);
      webSearch.checkReplayedBlock(block, param);
      return [];
    default:
      throw unsupported(
        param,
        `${param}: blocks of type ${JSON.stringify(block.type)} are not accepted (text, image, document, tool_use, tool_result, ` +
          'thinking and redacted_thinking are): the gateway cannot hold for their cost.',
      );
  }
}

function toolResultParts(block: Record<string, unknown>, param: string): CanonicalPart[] {
  const cacheControl = checkCacheControl(block.cache_control, `${param}.cache_control`);
  if (typeof block.tool_use_id !== 'string')
    throw invalid(`${param}.tool_use_id`, `${param}.tool_use_id must be a string.`);
  const texts: string[] = [];
  const images: CanonicalPart[] = [];
  const content = block.content ?? '';
  if (typeof content === 'string') texts.push(content);
  else if (Array.isArray(content)) {
    content.forEach((inner: Record<string, unknown>, i) => {
      const at = `${param}.content[${i}]`;
      if (inner?.type === 'text') texts.push((textPart(inner, at) as { text: string }).text);
      else if (inner?.type === 'image') images.push(imagePart(inner, at));
      else if (inner?.type === 'document') images.push(...documentParts(inner, at, { imagePart, checkCacheControl }));
      else throw unsupported(at, `${at}: a tool result may hold text, image and document blocks only.`);
    });
  } else
    throw invalid(
      `${param}.content`,
      `${param}.content must be a string or an array of text, image and document blocks.`,
    );
  const result: CanonicalPart = { type: 'tool_result', callId: block.tool_use_id, content: texts.join('\n') };
  if (block.is_error === true) result.isError = true;
  if (cacheControl) result.cacheControl = cacheControl;
  return [result, ...images];
}

/**
 * The properties a custom tool may have: its text (name, description, schema: counted into the hold, and carried
 * to an OpenAI-compatible upstream), `strict` (carried there as the function's `strict`), and two that change
 * nothing about the answer, so a translated call leaves them out: `cache_control` (a caching hint: an
 * OpenAI-compatible upstream caches prefixes by itself, and every call is billed on the cache reads and writes its
 * upstream reports) and `eager_input_streaming` (how the tool's input is streamed: the same arguments arrive).
 * `input_examples` would add uncounted text; `defer_loading` and `allowed_callers` are {@link DEFAULTED_TOOL_FIELDS}.
 */
const TOOL_FIELDS: ReadonlySet<string> = new Set([
  'name',
  'description',
  'input_schema',
  'type',
  'cache_control',
  'strict',
  'eager_input_streaming',
]);

function parseTools(tools: unknown): CanonicalTool[] {
  if (tools === undefined || tools === null) return [];
  return (tools as Array<Record<string, unknown>>).flatMap((tool, i) => {
    const param = `tools[${i}]`;
    // Anthropic's web search: no canonical tool (only an Anthropic model takes it), checked by web-search.ts.
    if (webSearch.isWebSearchTool(tool)) {
      checkCacheControl(tool.cache_control, `${param}.cache_control`);
      return [];
    }
    if (tool.type !== undefined && tool.type !== 'custom') throw toolTypeRefusal(tool.type, param);
    // The route's schema leaves these to here, so that a server tool (which has neither) is told its type.
    if (typeof tool.name !== 'string')
      throw invalid(`${param}.name`, `${param}.name is missing: a custom tool needs the name the model calls it by.`);
    if (typeof tool.input_schema !== 'object' || tool.input_schema === null || Array.isArray(tool.input_schema)) {
      throw invalid(
        `${param}.input_schema`,
        `${param}.input_schema is missing: a custom tool needs the JSON Schema of its input, e.g. { "type": "object", "properties": {} }.`,
      );
    }
    checkCacheControl(tool.cache_control, `${param}.cache_control`);
    for (const [field, rule] of Object.entries(DEFAULTED_TOOL_FIELDS)) {
      if (tool[field] === undefined || rule.harmless(tool[field])) continue;
      throw unsupported(`${param}.${field}`, `${param}.${field} is refused: ${rule.why}.`);
    }
    // A tool's other properties (input examples…) would reach Anthropic uncounted.
    const extra = Object.keys(tool).find(
      (key) => !TOOL_FIELDS.has(key) && !(key in DEFAULTED_TOOL_FIELDS) && tool[key] !== undefined,
    );
    if (extra) {
      throw unsupported(
        `${param}.${extra}`,
        `${param}.${extra} is not accepted: it would reach the model as text the gateway does not hold for.`,
      );
    }
    const parsed: CanonicalTool = { name: String(tool.name), parameters: tool.input_schema as Record<string, unknown> };
    if (typeof tool.description === 'string') parsed.description = tool.description;
    if (tool.strict === true) parsed.strict = true;
    return [parsed];
  });
}

function parseToolChoice(
  choice: unknown,
  tools: CanonicalTool[],
  serverTools: string[] = [],
): CanonicalCall['toolChoice'] {
  if (!choice) return undefined;
  const { type, name } = choice as { type: string; name?: string };
  switch (type) {
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      if (!name || !(tools.some((t) => t.name === name) || serverTools.includes(name))) {
        throw invalid('tool_choice.name', 'tool_choice { type: "tool" } must name one of the tools given.');
      }
      return { name };
    default:
      return 'auto';
  }
}
