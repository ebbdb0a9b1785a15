import { ApiError, errors } from '../../platform/errors.ts';
import type { CatalogueModel } from '../../models/catalogue.ts';
import type { CanonicalCall, CanonicalMessage, CanonicalPart, CanonicalTool } from '../../gateway/canonical.ts';
import { REASONING_EFFORTS, type ReasoningEffort } from '../../gateway/canonical.ts';
import type { ChatRequest } from '../../gateway/chat-plan.ts';
import { passThroughProblem } from './pass-through.ts';
import { anthropicToolsProblem, malformedToolProblem, providerToolsProblem } from './tools.ts';
import { findLongCache, isPricedCacheTtl } from '../../gateway/long-cache.ts';
import { claudeThinkingConflict } from '../../providers/reasoning.ts';
import { inlineFileDocument, inlineFileRefusal } from '../../gateway/documents.ts';

/**
 * An OpenAI chat request as a canonical call. The body itself travels as `native`: an OpenAI-compatible
 * provider receives it as sent (model and cap replaced), so every allow-listed field reaches it; the
 * canonical fields are what another provider (Anthropic) is built from.
 */

/**
 * Content part types whose cost the hold bounds: text and refusals are counted; images are held at the
 * model's budget; `input_audio` is counted as the text of its base64 data, far more tokens than the audio it
 * carries; an inline `file` (`file_data`) is a document held at the model's whole context
 * (`gateway/documents.ts`: its tokens are not bounded by its bytes).
 */
const HELD_PART_TYPES: ReadonlySet<string> = new Set(['text', 'refusal', 'image_url', 'input_audio', 'file']);

/**
 * Parts a role other than the user's may not carry (as in OpenAI's API, where only a user message takes them): its
 * content becomes text only (system, developer and tool messages: `messagesOf`) or text, images and tool calls
 * (assistant), so such a part would reach no canonical message, and a native upstream without being held for (an
 * image is held only as a canonical image part; a file's bytes are left out of the count, held as a document).
 */
const REFUSED_PARTS_BY_ROLE: Readonly<Record<string, ReadonlySet<string>>> = {
  system: new Set(['input_audio', 'file', 'image_url']),
  developer: new Set(['input_audio', 'file', 'image_url']),
  tool: new Set(['input_audio', 'file', 'image_url']),
  assistant: new Set(['input_audio', 'file']),
};

/**
 * Refuses (400 `UNSUPPORTED_PARAMETER`, `param: "messages"`) a content part whose cost nothing here bounds:
 * an unknown part type, or a `file` given by `file_id` (an uploaded document of any length, which the
 * request's own bytes do not show); and (naming `messages[i].content[j]`) an audio, file or image part where
 * only a user message takes it ({@link REFUSED_PARTS_BY_ROLE}).
 */
export function checkContentParts(messages: unknown[]): void {
  for (const [m, message] of (messages as any[]).entries()) {
    if (!Array.isArray(message?.content)) continue;
    for (const [p, part] of message.content.entries()) {
      const type = typeof part?.type === 'string' ? part.type : String(part?.type);
      if (Object.hasOwn(REFUSED_PARTS_BY_ROLE, message.role) && REFUSED_PARTS_BY_ROLE[message.role]!.has(type)) {
        const field = `messages[${m}].content[${p}]`;
        throw errors.unsupported(
          field,
          `${field}: a part of type "${type}" is accepted in a user message only, not in a ${message.role} message.`,
        );
      }
      if (!HELD_PART_TYPES.has(type)) {
        throw new ApiError(
          'UNSUPPORTED_PARAMETER',
          `Content parts of type "${type}" are not accepted: the gateway cannot hold for their cost. Use text, image_url, input_audio or file with file_data.`,
          { details: { param: 'messages' } },
        );
      }
      if (part.cache_control !== undefined && part.cache_control !== null) checkCacheControl(part.cache_control);
      if (type === 'file' && typeof part.file?.file_data !== 'string') {
        throw new ApiError(
          'UNSUPPORTED_PARAMETER',
          'A file content part must carry its data inline (file.file_data): a file_id refers to an upload of any length, whose cost the request does not show.',
          { details: { param: 'messages' } },
        );
      }
    }
  }
}

/**
 * A content part's or a tool's `cache_control` (the prompt-caching marker OpenRouter takes in chat for Anthropic
 * models, on content parts and on tool definitions, and that reaches an Anthropic upstream from a content part):
 * `{ type: "ephemeral" }`, with the 5-minute lifetime (the default, priced by `cacheWrite`) or the 1-hour one
 * (priced by `cacheWrite1h`; a model without that price refuses it when the call is planned,
 * `gateway/long-cache.ts`). Any other lifetime has no price. `owner` and `param` say where it is.
 */
function checkCacheControl(control: any, owner = 'A content part', param = 'messages'): void {
  if (control?.type !== 'ephemeral')
    throw new ApiError('INVALID_REQUEST', `${owner}'s cache_control.type must be "ephemeral".`, {
      details: { param },
    });
  if (control.ttl !== undefined && !isPricedCacheTtl(control.ttl)) {
    throw new ApiError(
      'UNSUPPORTED_PARAMETER',
      `${owner}'s cache_control.ttl ${JSON.stringify(control.ttl)} is refused: the catalogue prices cache writes of 5 minutes and 1 hour only; use "5m" (the default) or "1h".`,
      { details: { param } },
    );
  }
}

/**
 * The `cache_control` of each tool definition, which OpenRouter passes to Anthropic (its tool caching): checked as
 * a content part's is. A 1-hour one is found with the messages' ({@link parseChat}), so that it is held and priced at
 * `cacheWrite1h`, or refused on a model without that price; an Anthropic model refuses the field itself.
 */
function checkToolCacheControls(tools: unknown): void {
  if (!Array.isArray(tools)) return;
  for (const [i, tool] of tools.entries()) {
    const control = (tool as { cache_control?: unknown } | null)?.cache_control;
    if (control !== undefined && control !== null) checkCacheControl(control, 'A tool', `tools[${i}].cache_control`);
  }
}

/** The canonical caching marker of a content part, when it has one (checked by {@link checkContentParts}). */
function cacheControlOf(part: any): { cacheControl?: Record<string, unknown> } {
  return part?.cache_control && typeof part.cache_control === 'object' ? { cacheControl: part.cache_control } : {};
}

/**
 * The chat refusal of a model: a field of the body that may not reach its provider (`pass-through.ts`), a
 * nested field of its tools that the Anthropic translation cannot carry, a tool an OpenAI-compatible provider
 * would run at its own price (`tools.ts`), or, on a Claude model where `reasoning_effort` turns thinking on, a
 * `temperature`, `top_k`, `top_p` or forced `tool_choice` Anthropic refuses beside thinking
 * (`providers/reasoning.ts`). `call` is the body's canonical call.
 * Security invariant: a field on no allow-list never reaches an upstream unread (see pass-through.ts).
 */
export function chatRefusal(body: ChatRequest, call: CanonicalCall): (model: CatalogueModel) => ApiError | null {
  const files = inlineFileRefusal(call);
  return (model) => {
    const problem =
      (model.provider === 'anthropic' ? anthropicAudioProblem(body) : null) ??
      passThroughProblem(body, model.provider) ??
      (model.provider === 'anthropic' ? anthropicToolsProblem(body) : providerToolsProblem(body));
    if (problem) return errors.unsupported(problem.field, problem.message);
    return files?.(model) ?? claudeThinkingConflict(call, model, 'reasoning_effort');
  };
}

/**
 * An `input_audio` part cannot reach a Claude model: Anthropic's Messages API takes no audio, so the translation
 * has nothing to put it in (it was left out, and the model answered without hearing it). Refused by its path,
 * before anything is held, saying what to do instead. (A `file` part reaches Claude as a `document` block.)
 */
function anthropicAudioProblem(body: ChatRequest): { field: string; message: string } | null {
  for (const [m, message] of (body.messages as any[]).entries()) {
    if (!Array.isArray(message?.content)) continue;
    for (const [p, part] of message.content.entries()) {
      if (part?.type !== 'input_audio') continue;
      const field = `messages[${m}].content[${p}]`;
      return {
        field,
        message: `${field}: Claude models take no audio input (Anthropic's API has none), so the model would answer without hearing it; transcribe the audio first (POST /api/v1/audio/transcriptions) and send its text, or send the call to a model that takes audio input.`,
      };
    }
  }
  return null;
}

/** Text of an OpenAI content value (a string or text parts). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((part: any) => (part?.type === 'text' ? String(part.text ?? '') : '')).join('');
  return '';
}

/**
 * User content as canonical parts: text, images and inline files (documents held at the model's context, which
 * reach Claude as `document` blocks; `at` is the message's path, `messages[i]`, that names them). Audio reaches
 * only OpenAI-compatible upstreams, natively (an Anthropic model refuses it: {@link chatRefusal}).
 */
function partsOf(content: unknown, at: string): CanonicalPart[] {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  if (!Array.isArray(content)) return [];
  return content.flatMap((part: any, j): CanonicalPart[] => {
    if (part?.type === 'text') return [{ type: 'text', text: String(part.text ?? ''), ...cacheControlOf(part) }];
    if (part?.type === 'image_url') {
      const url: string = typeof part.image_url === 'string' ? part.image_url : String(part.image_url?.url ?? '');
      const detail = part.image_url?.detail;
      return [
        { type: 'image', url, ...(detail === 'auto' || detail === 'low' || detail === 'high' ? { detail } : {}) },
      ];
    }
    if (part?.type === 'file' && typeof part.file?.file_data === 'string') {
      const file = { fileData: part.file.file_data, filename: part.file.filename, ...cacheControlOf(part) };
      return [inlineFileDocument(file, `${at}.content[${j}]`)];
    }
    return [];
  });
}

function messagesOf(body: ChatRequest): { system: CanonicalPart[]; messages: CanonicalMessage[] } {
  const system: CanonicalPart[] = [];
  const messages: CanonicalMessage[] = [];
  for (const [m, message] of (body.messages as any[]).entries()) {
    const at = `messages[${m}]`;
    switch (message?.role) {
      case 'system':
      case 'developer':
        // A part marked for caching stays its own block (Anthropic caches up to the marked block).
        if (Array.isArray(message.content) && message.content.some((part: any) => part?.cache_control))
          system.push(...partsOf(message.content, at).filter((part) => part.type === 'text'));
        else system.push({ type: 'text', text: textOf(message.content) });
        break;
      case 'assistant': {
        const content = partsOf(message.content, at);
        const reasoning = message.reasoning ?? message.reasoning_content;
        if (typeof reasoning === 'string' && reasoning) content.unshift({ type: 'reasoning', text: reasoning });
        for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
          content.push({
            type: 'tool_call',
            id: String(call?.id ?? ''),
            name: String(call?.function?.name ?? ''),
            arguments: String(call?.function?.arguments ?? ''),
          });
        }
        messages.push({ role: 'assistant', content });
        break;
      }
      case 'tool': {
        const marked = Array.isArray(message.content)
          ? message.content.findLast((part: any) => part?.cache_control)
          : undefined;
        const result = { callId: String(message.tool_call_id ?? ''), content: textOf(message.content) };
        messages.push({ role: 'tool', content: [{ type: 'tool_result', ...result, ...cacheControlOf(marked) }] });
        break;
      }
      default:
        messages.push({ role: 'user', content: partsOf(message?.content, at) });
    }
  }
  return { system, messages };
}

function toolsOf(tools: unknown): CanonicalTool[] {
  if (!Array.isArray(tools)) return [];
  return tools
    .filter((tool: any) => tool?.type === 'function' && tool.function?.name)
    .map((tool: any) => ({
      name: String(tool.function.name),
      ...(typeof tool.function.description === 'string' ? { description: tool.function.description } : {}),
      parameters: tool.function.parameters ?? { type: 'object', properties: {} },
      ...(tool.function.strict === true ? { strict: true } : {}),
    }));
}

function toolChoiceOf(choice: any): CanonicalCall['toolChoice'] {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (choice?.type === 'function' && choice.function?.name) return { name: String(choice.function.name) };
  return undefined;
}

function responseFormatOf(format: any): CanonicalCall['responseFormat'] {
  if (format?.type === 'json_object') return { type: 'json_object' };
  if (format?.type === 'json_schema' && format.json_schema) {
    return {
      type: 'json_schema',
      name: String(format.json_schema.name ?? 'response'),
      schema: format.json_schema.schema ?? {},
      ...(typeof format.json_schema.strict === 'boolean' ? { strict: format.json_schema.strict } : {}),
    };
  }
  return undefined;
}

/**
 * The canonical call of a validated chat request (its content parts checked: 400 for one nothing bounds; its tools
 * checked: 400 `INVALID_REQUEST` naming a malformed one, which no provider would run).
 */
export function parseChat(body: ChatRequest): CanonicalCall {
  checkContentParts(body.messages);
  checkToolCacheControls(body.tools);
  const malformed = malformedToolProblem(body);
  if (malformed) throw new ApiError('INVALID_REQUEST', malformed.message, { details: { param: malformed.field } });
  const { system, messages } = messagesOf(body);
  const call: CanonicalCall = {
    model: body.model,
    system,
    messages,
    tools: toolsOf(body.tools),
    maxOutputTokens: body.max_completion_tokens ?? body.max_tokens ?? null,
    stream: body.stream === true,
    native: { protocol: 'openai-chat', body },
  };
  const longCache = findLongCache(body.messages, 'messages') ?? findLongCache(body.tools, 'tools');
  if (longCache) call.longCache = longCache;
  const choice = toolChoiceOf(body.tool_choice);
  if (choice) call.toolChoice = choice;
  if (typeof body.parallel_tool_calls === 'boolean') call.parallelToolCalls = body.parallel_tool_calls;
  if (typeof body.temperature === 'number') call.temperature = body.temperature;
  if (typeof body.top_p === 'number') call.topP = body.top_p;
  if (typeof body.top_k === 'number') call.topK = body.top_k;
  if (typeof body.stop === 'string') call.stop = [body.stop];
  else if (Array.isArray(body.stop)) call.stop = body.stop.map(String);
  if (body.metadata && typeof body.metadata === 'object') call.metadata = body.metadata as Record<string, unknown>;
  // Every effort OpenAI knows (an OpenAI-compatible upstream gets the body as sent, the effort in a level the model
  // has; an Anthropic one this, its value checked by the allow-list, as thinking: `providers/reasoning.ts`).
  const effort = body.reasoning_effort;
  if (REASONING_EFFORTS.includes(effort as ReasoningEffort)) call.reasoning = { effort: effort as ReasoningEffort };
  const format = responseFormatOf(body.response_format);
  if (format) call.responseFormat = format;
  const prediction = (body.prediction as any)?.content;
  if (prediction !== undefined) call.prediction = textOf(prediction);
  return call;
}
