import type { CanonicalEvent, CanonicalUsage, FinishReason } from '../../gateway/canonical.ts';
import { ApiError, ERROR_CODES, type ErrorCode } from '../../platform/errors.ts';
import { anthropicErrorFrame } from './errors.ts';
import { anthropicUsage, messageId, STOP_REASONS } from './render.ts';

/** One SSE frame in Anthropic's form: the event name is the data's `type`. */
function frame(data: { type: string; [k: string]: unknown }): string {
  return `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** An upstream frame as a provider may tag it: the parsed data, or the event and its data. */
function nativeData(value: unknown): Record<string, any> | null {
  if (value === null || typeof value !== 'object') return null;
  const tagged = value as { event?: unknown; data?: unknown };
  if (typeof tagged.event === 'string' && 'data' in tagged) {
    const data = typeof tagged.data === 'string' ? safeParse(tagged.data) : tagged.data;
    return data && typeof data === 'object' ? { type: tagged.event, ...(data as object) } : null;
  }
  return typeof (value as { type?: unknown }).type === 'string' ? (value as Record<string, any>) : null;
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * Turns the canonical event stream of one call into Anthropic's SSE events, exactly: `message_start`,
 * `ping`, then per block `content_block_start`, its `content_block_delta`s (`text_delta`, `thinking_delta`,
 * `signature_delta`, `input_json_delta`) and `content_block_stop`, then `message_delta` (stop reason and
 * usage) and `message_stop`.
 *
 * From an Anthropic upstream (events tagged `native`), its own frames are relayed as they came, the model
 * renamed to the public id; its `message_delta` and `message_stop` are held back and written at the end
 * with our usage (the counts billed and their `cost`), which the clients read from the last
 * `message_delta`. Every other upstream's events are rendered from their canonical meaning.
 */
export class AnthropicStreamRenderer {
  readonly #publicModel: string;
  #started = false;
  #ended = false;
  /** Canonical rendering: the index of the next block, and the open block (its kind and tool index). */
  #nextIndex = 0;
  #open: { kind: 'text' | 'thinking' | 'tool_use'; index: number } | null = null;
  #toolBlocks = new Map<number, number>();
  /** The last usage seen (the pipeline's last one carries the cost) and the upstream's held-back `message_delta`. */
  #usage: CanonicalUsage | null = null;
  #nativeDelta: Record<string, any> | null = null;

  readonly #countedInputTokens: number;

  /**
   * `countedInputTokens`: the prompt as the gateway counted it, shown in a rendered `message_start` (Anthropic
   * puts the input there, and some clients, LangChain's among them, read it only there; Claude Code's context
   * meter too); the last `message_delta` carries the count billed. A PDF is in it at its page estimate, as
   * count_tokens answers, not at the context it is held at, which would show the window full
   * (`CallStream.promptTokens`).
   */
  constructor(publicModel: string, countedInputTokens = 0) {
    this.#publicModel = publicModel;
    this.#countedInputTokens = countedInputTokens;
  }

  /** True once the closing `message_stop` was rendered. */
  get ended(): boolean {
    return this.#ended;
  }

  /** The frames (possibly none) that one canonical event becomes. */
  render(event: CanonicalEvent): string {
    if (this.#ended) return '';
    if (event.type === 'usage') {
      this.#usage = event.usage;
      const data = event.native?.protocol === 'anthropic-messages' ? nativeData(event.native.frame) : null;
      if (data?.type === 'message_delta') this.#nativeDelta = data;
      return '';
    }
    if (event.type === 'end') return this.#close(event.finishReason);
    if (event.type === 'error') return this.error(errorOf(event.code, event.message, event.overloaded));
    if (event.native?.protocol === 'anthropic-messages') return this.#relay(event.native.frame);
    return this.#canonical(event);
  }

  /** The `event: error` frame of a stream that failed after it began (nothing after it). */
  error(error: ApiError): string {
    if (this.#ended) return '';
    this.#ended = true;
    return anthropicErrorFrame(error);
  }

  #relay(value: unknown): string {
    const data = nativeData(value);
    if (!data) return '';
    switch (data.type) {
      case 'message_start':
        this.#started = true;
        return frame({ ...data, type: 'message_start', message: { ...data.message, model: this.#publicModel } });
      case 'message_delta':
        this.#nativeDelta = data;
        return '';
      case 'message_stop':
        return '';
      case 'error':
        // The pipeline reports the failure as a canonical error event, rendered in our envelope.
        return '';
      default:
        return (this.#started ? '' : this.#start('msg')) + frame(data as { type: string });
    }
  }

  #start(id: string): string {
    this.#started = true;
    const message = {
      id: messageId(id),
      type: 'message',
      role: 'assistant',
      model: this.#publicModel,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: this.#countedInputTokens,
        output_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    };
    return frame({ type: 'message_start', message }) + frame({ type: 'ping' });
  }

  #canonical(event: Exclude<CanonicalEvent, { type: 'usage' | 'end' | 'error' }>): string {
    if (event.type === 'start') return this.#started ? '' : this.#start(event.id);
    let out = this.#started ? '' : this.#start('msg');
    switch (event.type) {
      case 'text':
        if (!event.delta) return out;
        out += this.#openBlock('text', { type: 'text', text: '' });
        return out + this.#delta({ type: 'text_delta', text: event.delta });
      case 'reasoning':
        out += this.#openBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
        if (event.delta) out += this.#delta({ type: 'thinking_delta', thinking: event.delta });
        if (event.signature) out += this.#delta({ type: 'signature_delta', signature: event.signature });
        return out;
      case 'tool_call_start':
        out += this.#closeBlock();
        out += this.#openBlock('tool_use', { type: 'tool_use', id: event.id, name: event.name, input: {} });
        this.#toolBlocks.set(event.index, this.#open!.index);
        return out;
      case 'tool_call_delta': {
        // Upstreams stream tool calls one after another; a late delta still goes to its own block's index.
        const index = this.#toolBlocks.get(event.index);
        if (index === undefined || !event.arguments) return out;
        return (
          out +
          frame({
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: event.arguments },
          })
        );
      }
    }
  }

  /** A delta of the open block. */
  #delta(delta: Record<string, unknown>): string {
    return frame({ type: 'content_block_delta', index: this.#open!.index, delta });
  }

  #openBlock(kind: 'text' | 'thinking' | 'tool_use', block: Record<string, unknown>): string {
    if (this.#open?.kind === kind && kind !== 'tool_use') return '';
    const out = this.#closeBlock();
    this.#open = { kind, index: this.#nextIndex++ };
    return out + frame({ type: 'content_block_start', index: this.#open.index, content_block: block });
  }

  #closeBlock(): string {
    if (!this.#open) return '';
    const index = this.#open.index;
    this.#open = null;
    return frame({ type: 'content_block_stop', index });
  }

  #close(finishReason: FinishReason): string {
    let out = this.#started ? '' : this.#start('msg');
    out += this.#closeBlock();
    const usage = this.#usage ? anthropicUsage(this.#usage) : undefined;
    const upstream = this.#nativeDelta;
    const delta = upstream?.delta ?? { stop_reason: STOP_REASONS[finishReason], stop_sequence: null };
    out += frame({
      ...(upstream ?? {}),
      type: 'message_delta',
      delta,
      usage: usage ?? upstream?.usage ?? { output_tokens: 0 },
    });
    out += frame({ type: 'message_stop' });
    this.#ended = true;
    return out;
  }
}

/** The error of a canonical `error` event: its code when it is one of ours, else an upstream failure. */
function errorOf(code: string, message: string, overloaded = false): ApiError {
  // Overloaded: Anthropic's 529 status, which names the error `overloaded_error` in the frame (anthropicErrorType).
  if (overloaded) return new ApiError('UPSTREAM_ERROR', message, { status: 529 });
  return code in ERROR_CODES ? new ApiError(code as ErrorCode, message) : new ApiError('UPSTREAM_ERROR', message);
}
