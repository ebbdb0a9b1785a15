import type { CanonicalEvent, CanonicalResult, CanonicalUsage, FinishReason } from '../../gateway/canonical.ts';
import { openAiUsageOf } from '../../gateway/chat-usage.ts';
import { dataFrame, DONE_FRAME, OpenAiStyleStreamRenderer } from '../openai-chat/stream-render.ts';

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

/**
 * A pipeline stream's events as legacy completion SSE frames, one event at a time (an upstream's own chunks relayed
 * by the base class); another provider's text is built as `text_completion` chunks here.
 */
export class TextCompletionStreamRenderer extends OpenAiStyleStreamRenderer {
  #usage: CanonicalUsage | null = null;

  constructor(publicModel: string, clientWantsUsage: boolean, native: boolean) {
    super(publicModel, clientWantsUsage, native, { protocol: 'openai-completions', object: 'text_completion' }, 'cmpl');
  }

  /** Another provider's events as chunks: the finish chunk and then the usage chunk come at the end. */
  protected build(event: CanonicalEvent): string[] {
    const chunk = (text: string, finish: string | null = null) =>
      dataFrame({
        ...this.last,
        object: 'text_completion',
        model: this.model,
        choices: [{ index: 0, text, logprobs: null, finish_reason: finish }],
      });
    switch (event.type) {
      case 'start':
        this.last = { id: `cmpl-${event.id}`, created: event.created };
        return [];
      case 'text':
        return event.delta ? [chunk(event.delta)] : [];
      case 'usage':
        this.#usage = event.usage;
        return [];
      case 'end': {
        const usage = this.#usage ? this.usageChunk(this.#usage) : [];
        return [chunk('', FINISH[event.finishReason]), ...usage, DONE_FRAME];
      }
    }
    // Reasoning has no place in a text completion, and the call has no tools.
    return [];
  }
}
