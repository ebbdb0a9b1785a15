import type { CanonicalEvent, CanonicalPart, CanonicalResult, FinishReason } from '../../gateway/canonical.ts';
import { openAiUsageOf } from '../../gateway/chat-usage.ts';
import { ApiError, ERROR_CODES, type ErrorCode } from '../../platform/errors.ts';
import type { ChatChunk, ChatCompletion } from '../../providers/types.ts';

/**
 * Canonical results and events in OpenAI chat's wire format. When the provider spoke OpenAI chat itself,
 * its own answer and chunks are relayed (model renamed to the public id, usage replaced by what was billed);
 * otherwise they are built from the canonical fields.
 */

const FINISH: Record<FinishReason, string> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  content_filter: 'content_filter',
  error: 'stop',
};

function messageOf(content: CanonicalPart[]): ChatCompletion['choices'][number]['message'] {
  const text = content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
  const reasoning = content.flatMap((part) => (part.type === 'reasoning' ? [part.text] : [])).join('');
  const calls = content.flatMap((part) =>
    part.type === 'tool_call'
      ? [{ id: part.id, type: 'function', function: { name: part.name, arguments: part.arguments } }]
      : [],
  );
  return {
    role: 'assistant',
    content: text || (calls.length ? null : ''),
    ...(reasoning ? { reasoning } : {}),
    ...(calls.length ? { tool_calls: calls } : {}),
  };
}

/** A `chat.completion` of a pipeline result. */
export function renderCompletion(result: CanonicalResult): ChatCompletion {
  const usage = openAiUsageOf(result.usage);
  if (result.native?.protocol === 'openai-chat')
    return { ...(result.native.body as ChatCompletion), model: result.model, usage };
  return {
    id: result.id,
    object: 'chat.completion',
    created: result.created,
    model: result.model,
    choices: [{ index: 0, message: messageOf(result.content), finish_reason: FINISH[result.finishReason] }],
    usage,
  };
}

/**
 * The SSE error frame of a stream that broke after output began (the contract's envelope as `event: error`):
 * the event's code when the catalogue has it (SERVICE_UNAVAILABLE: the charge could not be written), else
 * UPSTREAM_ERROR.
 */
function errorFrame(event: Extract<CanonicalEvent, { type: 'error' }>): string {
  const code = event.code in ERROR_CODES ? (event.code as ErrorCode) : 'UPSTREAM_ERROR';
  return chatErrorFrame(new ApiError(code, event.message));
}

/** The SSE error frame of `error`: the contract's envelope as `event: error` (also a failure once a slow stream was opened). */
export function chatErrorFrame(error: ApiError): string {
  return `event: error\ndata: ${JSON.stringify(error.toEnvelope())}\n\n`;
}

const data = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;

/**
 * Turns a pipeline stream's events into chat SSE frames, one event at a time. The client sees the usage
 * chunk only when it asked (`stream_options.include_usage`), but always the usage it was billed on.
 */
export class ChatStreamRenderer {
  readonly #model: string;
  readonly #wantsUsage: boolean;
  readonly #native: boolean;
  #last: Pick<ChatChunk, 'id' | 'created'> = { id: 'chatcmpl', created: 0 };
  #pendingUsage: CanonicalEvent | null = null;

  constructor(publicModel: string, clientWantsUsage: boolean, native: boolean) {
    this.#model = publicModel;
    this.#wantsUsage = clientWantsUsage;
    this.#native = native;
  }

  /** The frames for one event (often none or one). */
  frames(event: CanonicalEvent): string[] {
    if (event.type === 'error') return [errorFrame(event)];
    return this.#native ? this.#relay(event) : this.#build(event);
  }

  /** Native: the upstream's own chunks, relayed one for one. */
  #relay(event: CanonicalEvent): string[] {
    if (event.type === 'end') return ['data: [DONE]\n\n'];
    if (event.type === 'usage' && !event.native) {
      // The upstream reported none: the gateway writes the usage chunk on its own counts.
      return this.#wantsUsage
        ? [
            data({
              ...this.#last,
              object: 'chat.completion.chunk',
              model: this.#model,
              choices: [],
              usage: openAiUsageOf(event.usage),
            }),
          ]
        : [];
    }
    if (event.native?.protocol !== 'openai-chat') return [];
    const chunk = event.native.frame as ChatChunk;
    this.#last = { id: chunk.id, created: chunk.created };
    if (event.type === 'usage') {
      if (!this.#wantsUsage) {
        if (!chunk.choices?.length) return [];
        delete chunk.usage;
      } else {
        chunk.usage = openAiUsageOf(event.usage);
      }
    }
    chunk.model = this.#model;
    return [data(chunk)];
  }

  /** Another provider's events as chunks: the finish chunk and then the usage chunk come at the end. */
  #build(event: CanonicalEvent): string[] {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      data({
        ...this.#last,
        object: 'chat.completion.chunk',
        model: this.#model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
    switch (event.type) {
      case 'start':
        this.#last = { id: event.id, created: event.created };
        return [chunk({ role: 'assistant', content: '' })];
      case 'text':
        return event.delta ? [chunk({ content: event.delta })] : [];
      case 'reasoning':
        return event.delta ? [chunk({ reasoning: event.delta })] : [];
      case 'tool_call_start':
        return [
          chunk({
            tool_calls: [
              { index: event.index, id: event.id, type: 'function', function: { name: event.name, arguments: '' } },
            ],
          }),
        ];
      case 'tool_call_delta':
        return [chunk({ tool_calls: [{ index: event.index, function: { arguments: event.arguments } }] })];
      case 'usage':
        this.#pendingUsage = event;
        return [];
      case 'end': {
        const frames = [chunk({}, FINISH[event.finishReason])];
        const usage = this.#pendingUsage;
        if (usage?.type === 'usage' && this.#wantsUsage)
          frames.push(
            data({
              ...this.#last,
              object: 'chat.completion.chunk',
              model: this.#model,
              choices: [],
              usage: openAiUsageOf(usage.usage),
            }),
          );
        frames.push('data: [DONE]\n\n');
        return frames;
      }
    }
    return [];
  }
}
