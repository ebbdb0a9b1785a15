import type { CanonicalEvent, CanonicalResult, FinishReason } from '../../gateway/canonical.ts';
import { openAiUsageOf } from '../../gateway/chat-usage.ts';
import { chatErrorFrame } from '../openai-chat/render.ts';
import { ApiError, ERROR_CODES, type ErrorCode } from '../../platform/errors.ts';

/**
 * Canonical results and events as OpenAI legacy completions (`text_completion`). When the provider served the
 * completion itself, its own answer and chunks are relayed (model renamed to the public id, usage replaced by what
 * was billed); otherwise they are built from the canonical text.
 */

const FINISH: Record<FinishReason, string> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'stop',
  content_filter: 'content_filter',
  error: 'stop',
};

/** A `text_completion` of a pipeline result. */
export function renderTextCompletion(result: CanonicalResult): Record<string, unknown> {
  const usage = openAiUsageOf(result.usage);
  if (result.native?.protocol === 'openai-completions') return { ...result.native.body, model: result.model, usage };
  const text = result.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
  return {
    id: `cmpl-${result.id}`,
    object: 'text_completion',
    created: result.created,
    model: result.model,
    choices: [{ index: 0, text, logprobs: null, finish_reason: FINISH[result.finishReason] }],
    usage,
  };
}

/** The SSE error frame of a stream that broke after output began (the event's code when the catalogue has it). */
function errorFrame(event: Extract<CanonicalEvent, { type: 'error' }>): string {
  const code = event.code in ERROR_CODES ? (event.code as ErrorCode) : 'UPSTREAM_ERROR';
  return chatErrorFrame(new ApiError(code, event.message));
}

const data = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;

/**
 * A pipeline stream's events as legacy completion SSE frames, one event at a time. The client sees the usage chunk
 * only when it asked (`stream_options.include_usage`), but always the usage it was billed on.
 */
export class TextCompletionStreamRenderer {
  readonly #model: string;
  readonly #wantsUsage: boolean;
  readonly #native: boolean;
  #last: { id: string; created: number } = { id: 'cmpl', created: 0 };
  #usage: CanonicalEvent | null = null;

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

  /** The gateway's own usage chunk (no choices), when the client asked for usage. */
  #usageChunk(event: Extract<CanonicalEvent, { type: 'usage' }>): string[] {
    if (!this.#wantsUsage) return [];
    const chunk = { ...this.#last, object: 'text_completion', model: this.#model, choices: [] };
    return [data({ ...chunk, usage: openAiUsageOf(event.usage) })];
  }

  /** Native: the upstream's own chunks, relayed one for one. */
  #relay(event: CanonicalEvent): string[] {
    if (event.type === 'end') return ['data: [DONE]\n\n'];
    // The upstream reported no usage: the gateway writes the usage chunk on its own counts.
    if (event.type === 'usage' && !event.native) return this.#usageChunk(event);
    if (event.native?.protocol !== 'openai-completions') return [];
    const chunk = event.native.frame as Record<string, unknown> & { choices?: unknown[]; usage?: unknown };
    this.#last = { id: String(chunk.id ?? 'cmpl'), created: Number(chunk.created ?? 0) };
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
    const chunk = (text: string, finish: string | null = null) =>
      data({
        ...this.#last,
        object: 'text_completion',
        model: this.#model,
        choices: [{ index: 0, text, logprobs: null, finish_reason: finish }],
      });
    switch (event.type) {
      case 'start':
        this.#last = { id: `cmpl-${event.id}`, created: event.created };
        return [];
      case 'text':
        return event.delta ? [chunk(event.delta)] : [];
      case 'usage':
        this.#usage = event;
        return [];
      case 'end': {
        const usage = this.#usage?.type === 'usage' ? this.#usageChunk(this.#usage) : [];
        return [chunk('', FINISH[event.finishReason]), ...usage, 'data: [DONE]\n\n'];
      }
    }
    // Reasoning has no place in a text completion, and the call has no tools.
    return [];
  }
}
