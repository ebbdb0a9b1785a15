import type { CanonicalPart, CanonicalResult, CanonicalUsage, FinishReason } from '../../gateway/canonical.ts';
import { itemId } from './ids.ts';
import { namespacedCalls, type ResponsesRequest } from './parse.ts';

/**
 * The Response object as the `openai` SDK types it (`Response` in `resources/responses/responses.d.ts`),
 * built from a canonical result or, while streaming, from the output items so far. `output_text` is left
 * out: the SDK computes it from `output`.
 */

/** An output item: `message` (with `output_text` parts), `function_call` or `reasoning`. */
export type OutputItem = Record<string, unknown> & { type: 'message' | 'function_call' | 'reasoning'; id: string };

/** `usage` as rendered (see {@link renderUsage}). */
export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
  cost?: number;
}

/** The Response object. */
export type ResponseObject = Record<string, unknown> & {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  model: string;
  output: OutputItem[];
  usage: ResponseUsage | null;
};

/** `in_progress` while streaming; then `completed`, `incomplete` (the output cap or a filter cut it) or `failed`. */
export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** What the Response object repeats of its request, fixed when the call begins. */
export interface ResponseFrame {
  id: string;
  createdAt: number;
  /** The public model id (`<vendor>/<model>`) that answers. */
  model: string;
  request: ResponsesRequest;
  store: boolean;
}

/** The status a finish reason gives, and why an incomplete response stopped. */
export function statusOf(finish: FinishReason): {
  status: ResponseStatus;
  incomplete: { reason: 'max_output_tokens' | 'content_filter' } | null;
} {
  if (finish === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  if (finish === 'error') return { status: 'failed', incomplete: null };
  return { status: 'completed', incomplete: null };
}

/**
 * `usage` in the Responses names: input (cache reads and writes included) with its cached part, output
 * (reasoning included) with its reasoning part, and Tollgate's `cost` in credits. `cache_write_tokens` is
 * OpenRouter's name for the written part, kept beside OpenAI's `cached_tokens`.
 */
export function renderUsage(usage: CanonicalUsage): ResponseUsage {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: {
      cached_tokens: usage.cacheReadTokens ?? 0,
      cache_write_tokens: usage.cacheWriteTokens ?? 0,
    },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
    total_tokens: usage.inputTokens + usage.outputTokens,
    ...(usage.cost !== undefined ? { cost: usage.cost } : {}),
  };
}

/** A message item holding one `output_text` part. */
export function messageItem(id: string, text: string, status: 'in_progress' | 'completed' | 'incomplete'): OutputItem {
  return {
    id,
    type: 'message',
    role: 'assistant',
    status,
    content: text === '' && status === 'in_progress' ? [] : [outputText(text)],
  };
}

/** An `output_text` content part. */
export function outputText(text: string): Record<string, unknown> {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

/**
 * A function_call item; `call_id` is the id the client answers with a function_call_output. A call of a
 * namespace's function (`namespaces`: the request's, by the name the upstream knows them by) names its
 * namespace beside the function's own name, as OpenAI answers it.
 */
export function functionCallItem(
  id: string,
  callId: string,
  name: string,
  args: string,
  status: 'in_progress' | 'completed' | 'incomplete',
  namespaces?: ReadonlyMap<string, { namespace: string; name: string }>,
): OutputItem {
  const namespaced = namespaces?.get(name);
  return {
    id,
    type: 'function_call',
    call_id: callId,
    ...(namespaced ? { name: namespaced.name, namespace: namespaced.namespace } : { name }),
    arguments: args,
    status,
  };
}

/** A reasoning item: its text as one summary part, the provider's signature as `encrypted_content` (replayed verbatim). */
export function reasoningItem(
  id: string,
  text: string,
  signature: string | undefined,
  status: 'in_progress' | 'completed' | 'incomplete',
): OutputItem {
  return {
    id,
    type: 'reasoning',
    summary: text === '' ? [] : [{ type: 'summary_text', text }],
    encrypted_content: signature ?? null,
    status,
  };
}

/** The output items of a whole answer: consecutive text parts form one message; each reasoning part and tool call its own item. */
export function outputItems(
  responseId: string,
  content: CanonicalPart[],
  finish: FinishReason,
  namespaces?: ReadonlyMap<string, { namespace: string; name: string }>,
): OutputItem[] {
  const items: OutputItem[] = [];
  const itemStatus = finish === 'length' || finish === 'content_filter' ? 'incomplete' : 'completed';
  let text: string | null = null;
  const flush = () => {
    if (text !== null) items.push(messageItem(itemId(responseId, 'msg', items.length), text, itemStatus));
    text = null;
  };
  for (const part of content) {
    if (part.type === 'text') {
      text = (text ?? '') + part.text;
      continue;
    }
    flush();
    if (part.type === 'reasoning')
      items.push(reasoningItem(itemId(responseId, 'rs', items.length), part.text, part.signature, 'completed'));
    else if (part.type === 'tool_call')
      items.push(
        functionCallItem(
          itemId(responseId, 'fc', items.length),
          part.id,
          part.name,
          part.arguments,
          'completed',
          namespaces,
        ),
      );
  }
  flush();
  return items;
}

/** The Response object: the frame's echo of the request, the output, and (once known) the usage. */
export function responseObject(
  frame: ResponseFrame,
  status: ResponseStatus,
  output: OutputItem[],
  options: {
    usage?: CanonicalUsage;
    incomplete?: { reason: string } | null;
    error?: { code: string; message: string } | null;
  } = {},
): ResponseObject {
  const request = frame.request;
  return {
    id: frame.id,
    object: 'response',
    created_at: frame.createdAt,
    status,
    ...(status === 'completed' ? { completed_at: Math.floor(Date.now() / 1000) } : {}),
    background: false,
    error: options.error ?? null,
    incomplete_details: options.incomplete ?? null,
    instructions: typeof request.instructions === 'string' ? request.instructions : null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    model: frame.model,
    output,
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: { effort: request.reasoning?.effort ?? null, summary: null },
    store: frame.store,
    temperature: request.temperature ?? 1,
    text: { format: request.text?.format ?? { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_p: request.top_p ?? 1,
    truncation: 'disabled',
    usage: options.usage ? renderUsage(options.usage) : null,
  };
}

/** The Response object of a whole (non-streamed) answer. */
export function renderResult(frame: ResponseFrame, result: CanonicalResult): ResponseObject {
  const { status, incomplete } = statusOf(result.finishReason);
  return responseObject(
    { ...frame, model: result.model },
    status,
    outputItems(frame.id, result.content, result.finishReason, namespacedCalls(frame.request.tools)),
    { usage: result.usage, incomplete },
  );
}
