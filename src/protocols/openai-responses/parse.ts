import type { CanonicalCall, CanonicalMessage, CanonicalPart, CanonicalTool } from '../../gateway/canonical.ts';
import { REASONING_EFFORTS, type ReasoningEffort } from '../../gateway/canonical.ts';
import { ApiError, errors } from '../../platform/errors.ts';
import { isOff, modelCallsOnly, type DefaultedToolField } from '../../gateway/tool-switches.ts';
import type { CatalogueModel } from '../../models/catalogue.ts';
import { BUILT_IN_TOOL_TYPES, toolTypeRefusal } from './tool-types.ts';
import { claudeThinkingConflict } from '../../providers/reasoning.ts';
import { inlineFileDocument, inlineFileRefusal } from '../../gateway/documents.ts';

/**
 * The Responses request as the gateway reads it (`POST /api/v1/responses`), and its translation into the
 * canonical call. Only function tools are accepted: OpenAI's built-in tools (web search, file search,
 * code interpreter…) run on OpenAI's side at prices the gateway cannot hold for, and no other provider has them.
 */

/** One input item as sent (validated here by hand: the union is too wide for the route schema to explain). */
export type InputItem = Record<string, unknown>;

/** The fields of a Responses request the gateway reads. */
export interface ResponsesRequest {
  model: string;
  input?: string | InputItem[];
  instructions?: string | null;
  tools?: Array<Record<string, unknown>>;
  tool_choice?: unknown;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  text?: { format?: Record<string, unknown>; [k: string]: unknown } | null;
  reasoning?: { effort?: string | null; [k: string]: unknown } | null;
  parallel_tool_calls?: boolean | null;
  metadata?: Record<string, string> | null;
  store?: boolean | null;
  previous_response_id?: string | null;
  stream?: boolean | null;
  [field: string]: unknown;
}

/**
 * Fields accepted and not acted on: they change neither the answer's cost nor its meaning here
 * (`include` asks for extra detail, e.g. encrypted reasoning, which is returned whenever the provider has it;
 * `client_metadata` is the Codex CLI's ids of its session and turn, sent on every call).
 */
const IGNORED_FIELDS: ReadonlySet<string> = new Set([
  'user',
  'client_metadata',
  'safety_identifier',
  'include',
  'service_tier',
  'stream_options',
  'truncation',
  'top_logprobs',
]);

/** Fields the gateway reads (see {@link ResponsesRequest}). */
const READ_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'max_output_tokens',
  'temperature',
  'top_p',
  'text',
  'reasoning',
  'parallel_tool_calls',
  'metadata',
  'store',
  'previous_response_id',
  'stream',
  // The cache routing (the Codex CLI sends its thread id as the key): on to an OpenAI-compatible upstream.
  'prompt_cache_key',
  'prompt_cache_retention',
]);

/** Why a known field is refused, by name. */
const REFUSED_FIELDS: Record<string, string> = {
  background:
    'background responses are not supported; call without `background` and keep the connection open (or stream)',
  conversation: 'conversations are not supported; continue with `previous_response_id` and `store: true`',
  prompt: 'stored prompt templates are not supported; send the text as `instructions` and `input`',
  max_tool_calls: 'only function tools are supported, and the client runs them: limit the calls in the client',
};

const unsupported = errors.unsupported;
const invalid = (param: string, message: string) => new ApiError('INVALID_REQUEST', message, { details: { param } });

/** Refuses fields the gateway does not implement, naming each (400 UNSUPPORTED_PARAMETER, never silently dropped). */
export function checkFields(body: ResponsesRequest): void {
  for (const [field, value] of Object.entries(body)) {
    if (value === undefined || value === null || READ_FIELDS.has(field) || IGNORED_FIELDS.has(field)) continue;
    if (field === 'background' && value === false) continue;
    const why = REFUSED_FIELDS[field];
    throw unsupported(
      field,
      why
        ? `"${field}" is not supported: ${why}.`
        : `The field "${field}" is not supported by Tollgate's Responses API.`,
    );
  }
}

/**
 * The name an upstream knows a namespaced function by: OpenAI's `namespace` tools (the Codex CLI groups its
 * sub-agent tools in one) reach a chat or Anthropic upstream as plain functions, whose names allow neither dots
 * nor nesting; the answer's calls are split back into `namespace` and `name` ({@link namespacedCalls}).
 */
export function namespacedName(namespace: string, name: string): string {
  return `${namespace}__${name}`;
}

/** The request's namespaced functions, by the name the upstream knows them by. */
export function namespacedCalls(
  tools: Array<Record<string, unknown>> | null | undefined,
): Map<string, { namespace: string; name: string }> {
  const calls = new Map<string, { namespace: string; name: string }>();
  for (const tool of Array.isArray(tools) ? tools : []) {
    if (tool?.type !== 'namespace' || typeof tool.name !== 'string' || !Array.isArray(tool.tools)) continue;
    for (const inner of tool.tools as Array<Record<string, unknown>>) {
      if (typeof inner?.name === 'string')
        calls.set(namespacedName(tool.name, inner.name), { namespace: tool.name, name: inner.name });
    }
  }
  return calls;
}

/**
 * Function tools (and the functions of `namespace` tools) into canonical tools; any other tool type is refused
 * (400 `UNSUPPORTED_PARAMETER`, `param` its path `tools[i].type` or `tools[i].tools[j].type`) saying what it is.
 */
export function parseTools(tools: Array<Record<string, unknown>> | undefined): CanonicalTool[] {
  const list = tools ?? [];
  const inner = (tool: Record<string, unknown>) =>
    tool.type === 'namespace' && Array.isArray(tool.tools) ? (tool.tools as Array<Record<string, unknown>>) : [];
  // Every built-in type of the request in the message, so a client (Codex…) turns them all off at once.
  const builtIns = [
    ...new Set(
      list
        .flatMap((tool) => [tool, ...inner(tool)])
        .flatMap((tool) => (BUILT_IN_TOOL_TYPES.has(tool?.type) ? [String(tool.type)] : [])),
    ),
  ];
  list.forEach((tool, i) => {
    if (tool.type !== 'function' && tool.type !== 'namespace')
      throw toolTypeRefusal(tool.type, `tools[${i}]`, builtIns);
    if (tool.type === 'namespace' && !Array.isArray(tool.tools))
      throw invalid(`tools[${i}].tools`, `tools[${i}] is a namespace without "tools", the list of its functions.`);
    inner(tool).forEach((member, j) => {
      const at = `tools[${i}].tools[${j}]`;
      if (typeof member !== 'object' || member === null) throw invalid(at, `${at} must be a function tool object.`);
      if (member.type !== 'function') throw toolTypeRefusal(member.type, at, builtIns);
    });
  });
  return (tools ?? []).flatMap((tool, i) => {
    if (typeof tool.name !== 'string' || tool.name === '')
      throw invalid(`tools[${i}].name`, `tools[${i}] needs a name.`);
    if (tool.type !== 'namespace') return [functionTool(tool, tool.name, `tools[${i}]`)];
    checkNamespaceFields(tool, `tools[${i}]`);
    const namespace = tool.name;
    return (tool.tools as Array<Record<string, unknown>>).map((inner, j) => {
      if (typeof inner.name !== 'string' || inner.name === '')
        throw invalid(`tools[${i}].tools[${j}].name`, `tools[${i}].tools[${j}] needs a name.`);
      const parsed = functionTool(inner, namespacedName(namespace, inner.name), `tools[${i}].tools[${j}]`);
      // The namespace's description is what the model reads about the group; each function carries it.
      if (typeof tool.description === 'string' && tool.description !== '')
        parsed.description = parsed.description ? `${tool.description}\n\n${parsed.description}` : tool.description;
      return parsed;
    });
  });
}

/** What a function tool's translation carries to a chat or Anthropic upstream (`strict` only when true). */
const FUNCTION_FIELDS: ReadonlySet<string> = new Set(['type', 'name', 'description', 'parameters', 'strict']);

/**
 * A function tool's fields that have no form on a chat or Anthropic upstream but change nothing at their
 * default (the value a translated call then behaves as), and why another value is refused.
 */
const DEFAULTED_FUNCTION_FIELDS: Readonly<Record<string, DefaultedToolField>> = {
  defer_loading: {
    harmless: isOff,
    why: 'a deferred function is found through the tool_search tool, which is not supported; send the function without defer_loading',
  },
  allowed_callers: {
    // Only direct calls exist here: programmatic tool calling is a built-in tool, refused.
    harmless: modelCallsOnly,
    why: 'only the model calls functions here (programmatic tool calling is a built-in tool, not supported); leave it out or send ["direct"]',
  },
  async: {
    harmless: isOff,
    why: 'a function answered asynchronously in a later response has no form on the upstreams the gateway calls; leave it out',
  },
  output_schema: {
    harmless: () => false,
    why: "the schema of a function's output has no form on the upstreams the gateway calls and would be dropped; describe the output in the description instead",
  },
};

/** The fields of a `namespace` tool (its functions are checked one by one). */
const NAMESPACE_FIELDS: ReadonlySet<string> = new Set(['type', 'name', 'description', 'tools']);

/**
 * Refuses (400 `UNSUPPORTED_PARAMETER`, `param` the field's path) a field of a function tool that the translation
 * to a chat or Anthropic upstream would drop: the model would answer a different call than the one sent. A field
 * at the value that changes nothing (`defer_loading: false`, `allowed_callers: ["direct"]`) passes.
 */
function checkFunctionFields(tool: Record<string, unknown>, param: string): void {
  for (const [field, value] of Object.entries(tool)) {
    if (value === undefined || value === null || FUNCTION_FIELDS.has(field)) continue;
    const rule = DEFAULTED_FUNCTION_FIELDS[field];
    if (rule?.harmless(value)) continue;
    throw unsupported(
      `${param}.${field}`,
      rule
        ? `${param}.${field} is not supported: ${rule.why}.`
        : `${param}.${field} is not supported: a function tool reaches the upstream with its name, description, parameters and strict only; leave it out.`,
    );
  }
}

function checkNamespaceFields(tool: Record<string, unknown>, param: string): void {
  const extra = Object.keys(tool).find(
    (key) => !NAMESPACE_FIELDS.has(key) && tool[key] !== undefined && tool[key] !== null,
  );
  if (extra) {
    throw unsupported(
      `${param}.${extra}`,
      `${param}.${extra} is not supported: a namespace reaches the upstream as its functions, with its description; leave it out.`,
    );
  }
}

function functionTool(tool: Record<string, unknown>, name: string, param: string): CanonicalTool {
  checkFunctionFields(tool, param);
  const parameters =
    tool.parameters && typeof tool.parameters === 'object'
      ? (tool.parameters as Record<string, unknown>)
      : { type: 'object', properties: {} };
  return {
    name,
    ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
    parameters,
    ...(tool.strict === true ? { strict: true } : {}),
  };
}

/** `tool_choice`: `auto`, `none`, `required` or `{ type: "function", name }`. */
export function parseToolChoice(choice: unknown, tools: CanonicalTool[]): CanonicalCall['toolChoice'] {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  const object = choice as Record<string, unknown>;
  if (object && typeof object === 'object' && object.type === 'function' && typeof object.name === 'string') {
    const extra = Object.keys(object).find((key) => key !== 'type' && key !== 'name' && object[key] != null);
    if (extra)
      throw unsupported(
        `tool_choice.${extra}`,
        `tool_choice.${extra} is not supported: a function choice names the function only.`,
      );
    if (!tools.some((tool) => tool.name === object.name))
      throw invalid('tool_choice', `tool_choice names "${object.name}", which is not among the tools.`);
    return { name: object.name };
  }
  // The client's own tool, but free-form: told as such (as in `tools`), not as an unsupported choice.
  if (object && typeof object === 'object' && object.type === 'custom')
    throw toolTypeRefusal('custom', 'tool_choice', []);
  throw unsupported(
    'tool_choice',
    'tool_choice must be "auto", "none", "required" or { "type": "function", "name": … }: only function tools are supported.',
  );
}

/** `text.format` into the canonical JSON output request (`text` alone is the default). */
export function parseTextFormat(text: ResponsesRequest['text']): CanonicalCall['responseFormat'] {
  const format = text?.format;
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema') {
    if (typeof format.name !== 'string' || !format.schema || typeof format.schema !== 'object') {
      throw invalid('text.format', 'A json_schema format needs a name and a schema.');
    }
    return {
      type: 'json_schema',
      name: format.name,
      schema: format.schema as Record<string, unknown>,
      ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}),
    };
  }
  throw unsupported(
    'text.format',
    `text.format.type must be "text", "json_object" or "json_schema", not "${String(format.type)}".`,
  );
}

/**
 * Why a model cannot take this call, or null (the pipeline's `refuses`, checked before the hold), both on Anthropic
 * models: its structured output takes a schema only (`output_config.format`), so `text.format: json_object` has
 * nothing to become there (sent on without it, the answer would be free text the client then fails to parse); and
 * where `reasoning.effort` turns Claude's thinking on, a `temperature` other than 1, a `top_p` below 0.95 or a
 * forced `tool_choice` is refused beside it by Anthropic (`providers/reasoning.ts`); and an `input_file` a model
 * cannot take (`gateway/documents.ts`: not a PDF on Anthropic, a PDF on an OpenRouter model that does not read files,
 * which OpenRouter would parse at a per-page fee). The model asked for answers a 400 naming the field; a fallback
 * that cannot take the call is left out.
 */
export function responsesRefusal(call: CanonicalCall): ((model: CatalogueModel) => ApiError | null) | undefined {
  const jsonObject = call.responseFormat?.type === 'json_object';
  const effort = call.reasoning?.effort;
  const files = inlineFileRefusal(call);
  if (!jsonObject && (effort === undefined || effort === 'none')) return files;
  return (model) => {
    const file = files?.(model);
    if (file) return file;
    if (model.provider !== 'anthropic') return null;
    if (jsonObject)
      return unsupported(
        'text.format',
        `text.format "json_object" is not supported on "${model.id}" (an Anthropic model): give a "json_schema" format instead.`,
      );
    return claudeThinkingConflict(call, model, 'reasoning.effort');
  };
}

/**
 * `reasoning.effort`, every value OpenAI knows, kept as sent: an OpenAI-compatible upstream gets it as
 * `reasoning_effort` (`none` included: it asks for no reasoning, which is not the model's default everywhere; in a
 * level the model has), an Anthropic one as the thinking its Claude generation takes or, for `none`, disabled
 * thinking (`providers/reasoning.ts`).
 */
export function parseReasoning(reasoning: ResponsesRequest['reasoning']): CanonicalCall['reasoning'] {
  const effort = reasoning?.effort;
  if (effort === undefined || effort === null) return undefined;
  if (REASONING_EFFORTS.includes(effort as ReasoningEffort)) return { effort: effort as ReasoningEffort };
  throw invalid(
    'reasoning.effort',
    `reasoning.effort must be one of ${REASONING_EFFORTS.join(', ')}, not "${String(effort)}".`,
  );
}

/** The text of an `output`/`content` given as a string or as text parts. */
function textOf(value: unknown, param: string): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    return value
      .map((part: any, i) => {
        if (typeof part?.text === 'string') return part.text;
        throw unsupported(`${param}[${i}]`, `Only text parts are accepted here, not "${String(part?.type)}".`);
      })
      .join('');
  }
  throw invalid(param, 'Expected a string or an array of text parts.');
}

/** One content part of a message item into a canonical part. */
function contentPart(part: any, param: string): CanonicalPart {
  switch (part?.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      if (typeof part.text !== 'string') throw invalid(`${param}.text`, 'A text part needs its text.');
      return { type: 'text', text: part.text };
    case 'refusal':
      return { type: 'text', text: String(part.refusal ?? '') };
    case 'input_image': {
      if (typeof part.image_url !== 'string' || part.image_url === '') {
        throw unsupported(
          param,
          'An input_image must carry an image_url (an https: or data: URL): uploaded files (file_id) are not supported.',
        );
      }
      const detail =
        part.detail === 'low' || part.detail === 'high' || part.detail === 'auto' ? part.detail : undefined;
      return { type: 'image', url: part.image_url, ...(detail ? { detail } : {}) };
    }
    case 'input_file':
      return inputFile(part, param);
    case 'input_audio':
      // Translated to an upstream (chat or Anthropic) the canonical call has no audio: refused, never dropped.
      throw unsupported(
        param,
        `${param}: audio input is not supported on the Responses route (the model would answer without hearing it); transcribe it first (POST /api/v1/audio/transcriptions) and send its text, or send the audio through chat completions to a model that takes audio input.`,
      );
    default:
      throw unsupported(
        param,
        `Content parts of type "${String(part?.type)}" are not supported: use input_text, input_image (with image_url), input_file (with file_data) or output_text.`,
      );
  }
}

/**
 * An `input_file` part (a PDF as the OpenAI SDKs send it: `file_data` a `data:` URL, `filename`) as a document
 * held at the model's whole context (`gateway/documents.ts`); an OpenAI-compatible upstream gets it as chat's `file`
 * part, an Anthropic one as a `document` block. A `file_id` (an upload of any length, which the request does not
 * show) or a `file_url` (of a size unknown before the call, and no chat form) is refused by the part's path.
 */
function inputFile(part: any, param: string): CanonicalPart {
  if (typeof part.file_data !== 'string' || part.file_data === '') {
    throw unsupported(
      param,
      `${param}: an input_file must carry its data inline (file_data, a data:application/pdf;base64,… URL): a file_id refers to an upload of any length and a file_url to a file of unknown size, whose cost the request does not show.`,
    );
  }
  return inlineFileDocument({ fileData: part.file_data, filename: part.filename }, param);
}

/** A message item's content (a string or parts) as canonical parts. */
function messageParts(content: unknown, param: string): CanonicalPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (Array.isArray(content)) return content.map((part, j) => contentPart(part, `${param}.content[${j}]`));
  throw invalid(`${param}.content`, 'A message needs its content: a string or an array of parts.');
}

/** Resolves `item_reference` items (their ids name a stored response), or null when the id is unknown to the caller. */
export type ItemResolver = (id: string) => InputItem | null;

/**
 * The conversation as canonical system parts and messages. Consecutive assistant items (text, reasoning,
 * function calls) form one assistant turn, as chat and Anthropic want them; each function_call_output is a
 * tool message; system and developer messages join the system instructions, in order.
 */
export function parseInput(
  items: InputItem[],
  resolve: ItemResolver,
): { system: CanonicalPart[]; messages: CanonicalMessage[] } {
  const system: CanonicalPart[] = [];
  const messages: CanonicalMessage[] = [];
  const push = (role: CanonicalMessage['role'], parts: CanonicalPart[]) => {
    const last = messages.at(-1);
    if (role === 'assistant' && last?.role === 'assistant') last.content.push(...parts);
    else messages.push({ role, content: parts });
  };
  items.forEach((raw, i) => {
    const param = `input[${i}]`;
    let item = raw;
    if (item?.type === 'item_reference') {
      const found = typeof item.id === 'string' ? resolve(item.id) : null;
      if (!found) {
        throw invalid(
          param,
          `The item_reference "${String(item.id)}" names no stored item of yours: responses are kept only with \`store: true\` (the Vercel AI SDK sends references unless providerOptions.openai.store is false).`,
        );
      }
      item = found;
    }
    const type = item?.type ?? (typeof item?.role === 'string' ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = item.role;
        const parts = messageParts(item.content, param);
        if (role === 'system' || role === 'developer') {
          if (parts.some((part) => part.type !== 'text'))
            throw unsupported(`${param}.content`, 'System and developer messages take text only.');
          system.push(...parts);
        } else if (role === 'user' || role === 'assistant') {
          const file = parts.findIndex((part) => part.type === 'document');
          if (role === 'assistant' && file >= 0)
            throw unsupported(`${param}.content[${file}]`, 'An input_file is accepted in a user message only.');
          push(role, parts);
        } else {
          throw invalid(
            `${param}.role`,
            `A message's role must be user, assistant, system or developer, not "${String(role)}".`,
          );
        }
        return;
      }
      case 'function_call':
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string' || typeof item.arguments !== 'string') {
          throw invalid(param, 'A function_call item needs call_id, name and arguments (a JSON text).');
        }
        // A call of a namespace's function (its `namespace` beside the name) as the upstream knows it.
        push('assistant', [
          {
            type: 'tool_call',
            id: item.call_id,
            name: typeof item.namespace === 'string' ? namespacedName(item.namespace, item.name) : item.name,
            arguments: item.arguments,
          },
        ]);
        return;
      case 'function_call_output':
        if (typeof item.call_id !== 'string')
          throw invalid(`${param}.call_id`, 'A function_call_output item needs the call_id it answers.');
        push('tool', [{ type: 'tool_result', callId: item.call_id, content: textOf(item.output, `${param}.output`) }]);
        return;
      case 'reasoning': {
        // The full reasoning text when the item has it, else its summary.
        const texts = Array.isArray(item.content) ? item.content : Array.isArray(item.summary) ? item.summary : [];
        const text = texts.map((part: any) => (typeof part?.text === 'string' ? part.text : '')).join('');
        const signature = typeof item.encrypted_content === 'string' ? item.encrypted_content : undefined;
        // An empty, unsigned reasoning item carries nothing an upstream could use (Anthropic refuses empty thinking).
        if (text !== '' || signature)
          push('assistant', [{ type: 'reasoning', text, ...(signature ? { signature } : {}) }]);
        return;
      }
      default:
        throw unsupported(
          param,
          `Input items of type "${String(type)}" are not supported: use message, function_call, function_call_output, reasoning or item_reference.`,
        );
    }
  });
  return { system, messages };
}

/** The request's own input as items: a string is one user message. */
export function inputItems(input: ResponsesRequest['input']): InputItem[] {
  if (input === undefined) return [];
  return typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : input;
}

/**
 * The canonical call of a request continuing `history` (the stored conversation of `previous_response_id`,
 * empty otherwise). `instructions` are not carried over from the previous response, as OpenAI does.
 */
export function toCanonicalCall(body: ResponsesRequest, history: InputItem[], resolve: ItemResolver): CanonicalCall {
  checkFields(body);
  const items = [...history, ...inputItems(body.input)];
  if (items.length === 0)
    throw invalid('input', 'The request needs an input (a string or items), or a previous_response_id to continue.');
  const { system, messages } = parseInput(items, resolve);
  if (messages.length === 0) throw invalid('input', 'The input has no user or assistant message to answer.');
  const instructions =
    typeof body.instructions === 'string' && body.instructions !== ''
      ? [{ type: 'text', text: body.instructions } as CanonicalPart]
      : [];
  const tools = parseTools(body.tools);
  const call: CanonicalCall = {
    model: body.model,
    system: [...instructions, ...system],
    messages,
    tools,
    maxOutputTokens: body.max_output_tokens ?? null,
    stream: body.stream === true,
  };
  const toolChoice = parseToolChoice(body.tool_choice, tools);
  if (toolChoice) call.toolChoice = toolChoice;
  if (typeof body.parallel_tool_calls === 'boolean') call.parallelToolCalls = body.parallel_tool_calls;
  if (typeof body.temperature === 'number') call.temperature = body.temperature;
  if (typeof body.top_p === 'number') call.topP = body.top_p;
  const reasoning = parseReasoning(body.reasoning);
  if (reasoning) call.reasoning = reasoning;
  const responseFormat = parseTextFormat(body.text);
  if (responseFormat) call.responseFormat = responseFormat;
  const promptCache = {
    ...(typeof body.prompt_cache_key === 'string' ? { key: body.prompt_cache_key } : {}),
    ...(typeof body.prompt_cache_retention === 'string' ? { retention: body.prompt_cache_retention } : {}),
  };
  if (promptCache.key !== undefined || promptCache.retention !== undefined) call.promptCache = promptCache;
  return call;
}
