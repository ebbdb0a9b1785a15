import type {
  CanonicalEvent,
  CanonicalPart,
  CanonicalResult,
  CanonicalUsage,
  FinishReason,
} from '../../gateway/canonical.ts';
import { openAiUsageOf } from '../../gateway/chat-usage.ts';
import type { ChatCompletion } from '../../providers/types.ts';
import { dataFrame, DONE_FRAME, OpenAiStyleStreamRenderer } from './stream-render.ts';

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
 * Turns a pipeline stream's events into chat SSE frames, one event at a time (an upstream's own chunks relayed by
 * the base class); another provider's events are built as `chat.completion.chunk`s here.
 */
export class ChatStreamRenderer extends OpenAiStyleStreamRenderer {
  #pendingUsage: CanonicalUsage | null = null;

  constructor(publicModel: string, clientWantsUsage: boolean, native: boolean) {
    super(
      publicModel,
      clientWantsUsage,
      native,
      { protocol: 'openai-chat', object: 'chat.completion.chunk' },
      'chatcmpl',
    );
  }

  /** Another provider's events as chunks: the finish chunk and then the usage chunk come at the end. */
  protected build(event: CanonicalEvent): string[] {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      dataFrame({
        ...this.last,
        object: 'chat.completion.chunk',
        model: this.model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
    switch (event.type) {
      case 'start':
        this.last = { id: event.id, created: event.created };
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
        this.#pendingUsage = event.usage;
        return [];
      case 'end': {
        const usage = this.#pendingUsage ? this.usageChunk(this.#pendingUsage) : [];
        return [chunk({}, FINISH[event.finishReason]), ...usage, DONE_FRAME];
      }
    }
    return [];
  }
}
