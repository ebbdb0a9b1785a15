import type { CanonicalEvent, CanonicalResult, CanonicalUsage } from '../../gateway/canonical.ts';
import type { CallWire } from '../../gateway/answer-call.ts';
import { openAiUsageOf } from '../../gateway/chat-usage.ts';
import { ApiError, ERROR_CODES, type ErrorCode } from '../../platform/errors.ts';

/**
 * What the event streams of OpenAI's chat and legacy completions share: `data:` frames of chunks, a last usage
 * chunk with no choices when the client asked for it (`stream_options.include_usage`), `data: [DONE]`, and a
 * failure as an `event: error` frame with the contract's envelope.
 */

/** A `data:` frame of a chunk. */
export const dataFrame = (chunk: unknown): string => `data: ${JSON.stringify(chunk)}\n\n`;

/** The stream's last frame. */
export const DONE_FRAME = 'data: [DONE]\n\n';

/** The SSE error frame of `error`: the contract's envelope as `event: error` (also a failure once a slow stream was opened). */
export function chatErrorFrame(error: ApiError): string {
  return `event: error\ndata: ${JSON.stringify(error.toEnvelope())}\n\n`;
}

/**
 * The SSE error frame of a stream that broke after output began: the event's code when the catalogue has it
 * (SERVICE_UNAVAILABLE: the charge could not be written), else UPSTREAM_ERROR.
 */
function errorFrame(event: Extract<CanonicalEvent, { type: 'error' }>): string {
  const code = event.code in ERROR_CODES ? (event.code as ErrorCode) : 'UPSTREAM_ERROR';
  return chatErrorFrame(new ApiError(code, event.message));
}

/**
 * An upstream's own chunk as its `data:` frame for the client: renamed to the public model id and, on the chunk
 * that carried the upstream's usage (`usage`, else null), the usage billed when the client asked for it, else none;
 * null when that leaves a usage-only chunk with nothing to say.
 */
export function relayedChunk(
  chunk: { model?: unknown; choices?: unknown[]; usage?: unknown },
  publicModel: string,
  usage: CanonicalUsage | null,
  clientWantsUsage: boolean,
): string | null {
  if (usage) {
    if (!clientWantsUsage) {
      if (!chunk.choices?.length) return null;
      delete chunk.usage;
    } else {
      chunk.usage = openAiUsageOf(usage);
    }
  }
  chunk.model = publicModel;
  return dataFrame(chunk);
}

/** The protocol a renderer writes: the native frames it relays, and its chunks' `object`. */
export interface OpenAiStreamWire {
  protocol: 'openai-chat' | 'openai-completions';
  object: string;
}

/**
 * Turns a pipeline stream's events into an OpenAI-style event stream, one event at a time. When the provider spoke
 * the protocol itself (`native`), its chunks are relayed one for one; otherwise a subclass builds them
 * ({@link build}). The client sees the usage chunk only when it asked, but always the usage it was billed on.
 */
export abstract class OpenAiStyleStreamRenderer {
  protected readonly model: string;
  protected readonly wantsUsage: boolean;
  /** The id and creation time the chunks carry: the upstream's, from its last chunk or the stream's start. */
  protected last: { id: string; created: number };
  readonly #native: boolean;
  readonly #wire: OpenAiStreamWire;

  constructor(publicModel: string, clientWantsUsage: boolean, native: boolean, wire: OpenAiStreamWire, id: string) {
    this.model = publicModel;
    this.wantsUsage = clientWantsUsage;
    this.#native = native;
    this.#wire = wire;
    this.last = { id, created: 0 };
  }

  /** The frames for one event (often none or one). */
  frames(event: CanonicalEvent): string[] {
    if (event.type === 'error') return [errorFrame(event)];
    return this.#native ? this.#relay(event) : this.build(event);
  }

  /** Another provider's events as chunks; the usage chunk ({@link usageChunk}) and {@link DONE_FRAME} come at the end. */
  protected abstract build(event: CanonicalEvent): string[];

  /** The gateway's own usage chunk (no choices) when the client asked for usage, else nothing. */
  protected usageChunk(usage: CanonicalUsage): string[] {
    if (!this.wantsUsage) return [];
    const chunk = { ...this.last, object: this.#wire.object, model: this.model, choices: [] };
    return [dataFrame({ ...chunk, usage: openAiUsageOf(usage) })];
  }

  /** Native: the upstream's own chunks, relayed one for one. */
  #relay(event: CanonicalEvent): string[] {
    if (event.type === 'end') return [DONE_FRAME];
    // The upstream reported none: the gateway writes the usage chunk on its own counts.
    if (event.type === 'usage' && !event.native) return this.usageChunk(event.usage);
    if (event.native?.protocol !== this.#wire.protocol) return [];
    const chunk = event.native.frame as { id?: unknown; created?: unknown; choices?: unknown[]; usage?: unknown };
    this.last = { id: String(chunk.id ?? this.last.id), created: Number(chunk.created ?? 0) };
    const frame = relayedChunk(chunk, this.model, event.type === 'usage' ? event.usage : null, this.wantsUsage);
    return frame === null ? [] : [frame];
  }
}

/**
 * The wire of an OpenAI-style protocol for `answerCall`: its whole answer, its stream renderer (told whether the
 * client asked for usage), and the `event: error` failure frame.
 */
export function openAiStyleWire<R>(
  whole: (result: CanonicalResult) => R,
  Renderer: new (publicModel: string, clientWantsUsage: boolean, native: boolean) => OpenAiStyleStreamRenderer,
  body: { stream_options?: { include_usage?: boolean } | null },
): CallWire<R> {
  const wantsUsage = body.stream_options?.include_usage === true;
  return {
    whole,
    frames: (stream) => {
      const renderer = new Renderer(stream.model.id, wantsUsage, stream.native);
      return (event) => renderer.frames(event).join('');
    },
    failureFrame: chatErrorFrame,
  };
}
