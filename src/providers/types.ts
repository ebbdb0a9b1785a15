import type { Readable } from 'node:stream';
import type { CanonicalCall, CanonicalEvent, CanonicalResult, WireProtocol } from '../gateway/canonical.ts';
/**
 * The provider adapter contract. The gateway hands adapters canonical calls (`gateway/canonical.ts`); each
 * adapter translates to its upstream (or relays the client's own body when it speaks the inbound protocol)
 * and reports failures as {@link UpstreamError}.
 * Adapters never bill and never touch the database: they only move bytes, so they can be tested against a
 * plain HTTP server and reused by the benchmark.
 */

/** An OpenAI chat completion request body; `model` is already the upstream model. Unknown fields pass through. */
export type ChatBody = Record<string, unknown> & { model: string; messages: unknown[] };

/** Token counts as the upstream reported them (OpenAI names). */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
  [extra: string]: unknown;
}

/** An OpenAI `chat.completion` object. */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: string; content: string | null; tool_calls?: unknown[]; [k: string]: unknown };
    finish_reason: string | null;
    [k: string]: unknown;
  }>;
  usage?: TokenUsage;
  [extra: string]: unknown;
}

/** An OpenAI `chat.completion.chunk` object (one SSE `data:` frame of a stream). */
export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: {
      role?: string;
      content?: string | null;
      tool_calls?: Array<{
        index: number;
        id?: string;
        type?: string;
        function?: { name?: string; arguments?: string };
      }>;
      [k: string]: unknown;
    };
    finish_reason: string | null;
    [k: string]: unknown;
  }>;
  usage?: TokenUsage | null;
  [extra: string]: unknown;
}

/**
 * A canonical call as a provider receives it: the upstream model and the output cap are decided, and what the
 * catalogue says of the model that the translation needs: `modelReasons`, whether it takes a reasoning effort
 * (a thinking budget becomes one only then; an effort the client named is sent regardless to an OpenAI-compatible
 * model, and turns a Claude model's thinking on only then: `reasoning.ts`).
 */
export type ProviderCall = CanonicalCall & { maxOutputTokens: number; modelReasons: boolean };

/** What every call receives: the abort signal that the client's disconnect and the upstream deadline share. */
export interface CallOptions {
  signal: AbortSignal;
}

/** A binary answer relayed as-is (text-to-speech audio). */
export interface BinaryResponse {
  contentType: string;
  body: Readable;
}

/**
 * One event of a speech answer asked as an event stream (`stream_format: "sse"`, OpenAI's token-priced speech
 * models): `audio` is a `speech.audio.delta`'s audio, decoded; `done` is the `speech.audio.done` event, whose
 * `usage` is as the upstream sent it (unsanitized; the gateway prices it). `frame` is the event's JSON text as
 * it came, so a client that asked for the event stream is sent the upstream's own frames.
 */
export type SpeechEvent =
  | { type: 'audio'; audio: Buffer; frame: string | null }
  | { type: 'done'; usage: unknown; frame: string }
  | { type: 'other'; frame: string };

/** A model as an upstream's `/models` list describes it, prices in USD per token or per unit as decimal strings. */
export interface UpstreamModel {
  id: string;
  name?: string;
  contextLength?: number;
  maxOutputTokens?: number;
  inputModalities?: string[];
  outputModalities?: string[];
  /** The request parameters the model takes, when the list says (OpenRouter's `supported_parameters`). */
  supportedParameters?: string[];
  /**
   * USD decimal strings, exactly as listed (OpenRouter: per token for the token prices, per call, per image,
   * per search). `cacheRead`/`cacheWrite`/`cacheWrite1h` are OpenRouter's `input_cache_read`/`input_cache_write`
   * (the 5-minute rate)/`input_cache_write_1h` (listed only where a provider prices 1-hour writes apart),
   * `reasoning` its `internal_reasoning`, `audioInput`/`audioOutput` its `audio`/`audio_output`, `webSearch`
   * its `web_search`.
   */
  usdPricing?: {
    prompt?: string;
    completion?: string;
    request?: string;
    image?: string;
    cacheRead?: string;
    cacheWrite?: string;
    cacheWrite1h?: string;
    reasoning?: string;
    audioInput?: string;
    audioOutput?: string;
    webSearch?: string;
  };
}

/**
 * One upstream provider, a folder of `src/providers/`. `complete` and `stream` (the canonical call, any
 * inbound protocol's) are required; the other capabilities are optional and a model whose provider lacks
 * one answers 400.
 */
export interface ProviderAdapter {
  readonly name: string;
  /**
   * The inbound protocols this provider speaks itself: a call carrying `native` in one of them is sent as the
   * client's own body (model and output cap replaced), and its answer comes back tagged `native`.
   */
  readonly speaks: readonly WireProtocol[];
  /**
   * A whole answer to a canonical call. `call.model` is already the upstream model and `call.maxOutputTokens`
   * the cap the hold was computed with (the gateway always sets it: the provider must send exactly it).
   * `usage.reported` carries the upstream's counts unsanitized; the gateway prices them.
   */
  complete(call: ProviderCall, options: CallOptions): Promise<CanonicalResult>;
  /**
   * A streamed answer: resolves once the upstream accepted the call, then yields canonical events (`start`,
   * deltas, `usage`, `end`; see {@link CanonicalEvent}). The iterator throws {@link UpstreamError} when the
   * stream breaks; `return()` stops the upstream.
   */
  stream(call: ProviderCall, options: CallOptions): Promise<AsyncIterable<CanonicalEvent>>;
  embeddings?(body: Record<string, unknown>, options: CallOptions): Promise<Record<string, any>>;
  images?(body: Record<string, unknown>, options: CallOptions): Promise<Record<string, any>>;
  /**
   * An image edit (OpenAI's `/images/edits`): the client's multipart form as sent (its `image`/`image[]` files, its
   * `mask`, its allow-listed text fields), `model` already the upstream model. Answers the upstream's JSON.
   */
  imageEdits?(form: FormData, options: CallOptions): Promise<Record<string, any>>;
  speech?(body: Record<string, unknown>, options: CallOptions): Promise<BinaryResponse>;
  /**
   * Speech asked as an event stream, for a model billed on the tokens it reports: resolves once the upstream
   * accepted the call, then yields its events. The iterator throws {@link UpstreamError} when the stream breaks
   * or ends without its `done` event; `return()` stops the upstream. An upstream that answers plain audio
   * instead yields it as `audio` events (with `frame` null) and no `done`.
   */
  speechEvents?(body: Record<string, unknown>, options: CallOptions): Promise<AsyncIterable<SpeechEvent>>;
  transcription?(form: FormData, options: CallOptions): Promise<Record<string, any>>;
  /** OpenAI's `/audio/translations` (speech in any language to English text), answered as a transcription is. */
  translation?(form: FormData, options: CallOptions): Promise<Record<string, any>>;
  realtimeSession?(body: Record<string, unknown>, options: CallOptions): Promise<Record<string, any>>;
  /** The Realtime API's ephemeral key for a session (`POST /realtime/client_secrets`): `{ value, expires_at, session }`. */
  realtimeClientSecret?(body: Record<string, unknown>, options: CallOptions): Promise<Record<string, any>>;
  /**
   * The input tokens of an Anthropic Messages body as the provider counts them (Anthropic's free
   * `/v1/messages/count_tokens`, exact for every block type); `body.model` is already the upstream model. Absent:
   * the provider has no such endpoint, and `count_tokens` counts with the gateway's tokenizer.
   */
  countTokens?(body: Record<string, unknown>, options: CallOptions): Promise<number>;
  /** The upstream's model list, for `POST /api/admin/models/sync`. */
  listModels?(options: CallOptions): Promise<UpstreamModel[]>;
}

/**
 * An upstream failure. `status` is the upstream's HTTP status (502 for a network failure or a broken
 * stream); `retryable` says a fallback model may be tried (5xx, network, broken before output).
 */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
  readonly status: number;
  readonly retryable: boolean;
  /**
   * The upstream's own words for an HTTP error answer ("model not found."), credentials redacted; undefined when it
   * gave none. The message says them after the status; a refusal relayed to the caller says them once, its own way.
   */
  readonly detail: string | undefined;

  constructor(status: number, message: string, options: { cause?: unknown; detail?: string } = {}) {
    super(message, { cause: options.cause });
    this.status = status;
    this.detail = options.detail;
    this.retryable = status >= 500 || status === 408;
  }
}

/** True when `error` is the abort of a fetch or stream (client gone or deadline passed). */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}
