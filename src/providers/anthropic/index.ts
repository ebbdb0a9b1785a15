import type { Config } from '../../platform/config.ts';
import { joinUrl, readJson, readSse, upstreamFetch } from '../http.ts';
import { anthropicEvents, canonicalUsageOfAnthropic, fromAnthropicResult, toAnthropicMessages } from './wire.ts';
import { UpstreamError, type CallOptions, type ChatBody, type ChatCompletion, type ProviderAdapter, type TokenUsage, type UpstreamModel } from '../types.ts';

/** The Anthropic API version the translation follows. */
export const ANTHROPIC_VERSION = '2023-06-01';

/** Anthropic requires `max_tokens`; used only when neither the client nor the catalogue gave a cap. */
const DEFAULT_MAX_TOKENS = 4096;

/** The `anthropic` provider the configuration names (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`). */
export function anthropicProvider(config: Config): ProviderAdapter {
  return anthropicAdapter({ baseUrl: config.ANTHROPIC_BASE_URL, apiKey: config.ANTHROPIC_API_KEY });
}

/**
 * Anthropic's Messages API. It speaks Anthropic Messages natively (a Messages call's body and SSE events are
 * relayed as sent, model and `max_tokens` replaced); a call from another protocol is built from its
 * canonical fields and answered in canonical events (`wire.ts`).
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

/**
 * Translates an OpenAI chat request to an Anthropic Messages request directly (the pipeline goes through the
 * canonical call instead: `wire.ts`); kept as the reference translation the tests compare against.
 */
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

/** Translates an Anthropic Messages response to an OpenAI chat completion (usage summed as `wire.ts` does). */
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
    usage: canonicalUsageOfAnthropic(message.usage).reported as TokenUsage,
  };
}
