import type { PlatformConfig } from '../../platform/config.ts';
import type { ProvidersConfig } from '../config.ts';

type Config = PlatformConfig & ProvidersConfig;
import { joinUrl, readJson, readSse, upstreamDispatcher, upstreamFetch, type UpstreamResponse } from '../http.ts';
import type { Dispatcher } from 'undici';
import type { Readable } from 'node:stream';
import {
  UpstreamError,
  type BinaryResponse,
  type CallOptions,
  type ChatBody,
  type ChatChunk,
  type ChatCompletion,
  type ProviderAdapter,
  type SpeechEvent,
  type UpstreamModel,
} from '../types.ts';
import type { CanonicalEvent } from '../../gateway/canonical.ts';
import { fromOpenAiCompletion, OpenAiStreamReader, toOpenAiChatBody } from './wire.ts';
import { fromTextCompletion, toTextCompletionBody, type TextCompletion } from './text-completions.ts';

/**
 * The OpenAI-compatible providers the configuration names: `openai`, `openrouter` (with its attribution
 * headers), and each entry of `providers` in the config file. Each exists even without an API key (a local
 * vLLM or Ollama needs none), so a base URL alone is enough to use it.
 */
export function openAiCompatibleProviders(config: Config): ProviderAdapter[] {
  const dispatcher = upstreamDispatcher(config);
  return [
    openAiCompatibleAdapter({
      name: 'openai',
      baseUrl: config.OPENAI_BASE_URL,
      apiKey: config.OPENAI_API_KEY,
      dispatcher,
    }),
    openAiCompatibleAdapter({
      name: 'openrouter',
      baseUrl: config.OPENROUTER_BASE_URL,
      apiKey: config.OPENROUTER_API_KEY,
      headers: { 'HTTP-Referer': config.PUBLIC_BASE_URL, 'X-Title': 'Tollgate' },
      dispatcher,
    }),
    ...config.providers.map((provider) =>
      openAiCompatibleAdapter({ name: provider.name, baseUrl: provider.baseUrl, apiKey: provider.apiKey, dispatcher }),
    ),
  ];
}

/** Where an OpenAI-compatible upstream lives and how to authenticate to it. */
export interface OpenAiCompatibleOptions {
  name: string;
  baseUrl: string;
  apiKey?: string;
  /** Extra headers on every call (OpenRouter's `HTTP-Referer`/`X-Title`). */
  headers?: Record<string, string>;
  /** The connection pool with the configured timeouts ({@link upstreamDispatcher}); unset: the default one. */
  dispatcher?: Dispatcher;
}

/**
 * Any upstream that speaks the OpenAI API (OpenAI, OpenRouter, Groq, Together, vLLM, Ollama…). It speaks
 * OpenAI chat natively: a chat's body passes through untouched (whatever allow-listed OpenAI field the client
 * sent reaches the provider as sent), except `model` and the output cap, which the gateway has decided. A
 * call from another protocol is built from its canonical fields (`wire.ts`). A legacy completion goes to the
 * upstream's `/completions` the same way (`text-completions.ts`).
 */
export function openAiCompatibleAdapter(options: OpenAiCompatibleOptions): ProviderAdapter {
  const headers = (json: boolean): Record<string, string> => ({
    ...(json ? { 'content-type': 'application/json' } : {}),
    ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
    ...options.headers,
  });
  const post = (path: string, body: unknown, call: CallOptions) =>
    upstreamFetch(joinUrl(options.baseUrl, path), {
      method: 'POST',
      headers: headers(true),
      body: JSON.stringify(body),
      signal: call.signal,
      dispatcher: options.dispatcher,
    });
  /** A multipart POST (transcriptions, image edits): the form's own content type, with its boundary. */
  const postForm = (path: string, form: FormData, call: CallOptions) =>
    upstreamFetch(joinUrl(options.baseUrl, path), {
      method: 'POST',
      headers: headers(false),
      body: form,
      signal: call.signal,
      dispatcher: options.dispatcher,
    });

  /** A non-streaming chat completion (`what`: 'a chat completion') or legacy one, as the upstream sent it. */
  async function wholeCompletion(path: string, body: object, call: CallOptions, what: string): Promise<any> {
    const completion = await readJson(await post(path, body, call));
    if (!Array.isArray(completion?.choices))
      throw new UpstreamError(502, `The upstream provider answered ${what} without choices.`);
    return completion;
  }
  const chatCompletion = (body: ChatBody, call: CallOptions): Promise<ChatCompletion> =>
    wholeCompletion('/chat/completions', { ...body, stream: false }, call, 'a chat completion');
  const textCompletion = (body: Record<string, unknown>, call: CallOptions): Promise<TextCompletion> =>
    wholeCompletion('/completions', body, call, 'a completion');

  /**
   * A streaming chat completion (or legacy completion, on `path` `/completions`): resolves once the upstream
   * accepted it, then yields each chunk's canonical events and the `end`. One generator from the SSE events to the canonical ones: each layer of async
   * generators costs promises and microtask turns per token.
   */
  async function chatStream(
    body: ChatBody | Record<string, unknown>,
    call: CallOptions,
    reader: OpenAiStreamReader,
    path = '/chat/completions',
  ): Promise<AsyncIterable<CanonicalEvent>> {
    const response = await post(path, { ...body, stream: true }, call);
    return (async function* () {
      let finished = false;
      let done = false;
      for await (const event of readSse(response.body, call.signal)) {
        if (event.data === '[DONE]') {
          done = true;
          break;
        }
        let parsed: any;
        try {
          parsed = JSON.parse(event.data);
        } catch {
          throw new UpstreamError(502, 'The upstream stream carried a frame that is not JSON.');
        }
        // Some providers report a failure inside an open stream as a data frame with an error object.
        if (event.event === 'error' || (parsed?.error && !parsed.choices)) {
          throw new UpstreamError(502, `The upstream stream failed: ${parsed?.error?.message ?? 'unknown error'}.`);
        }
        if (parsed?.choices?.some?.((choice: any) => choice?.finish_reason)) finished = true;
        // Not `yield*` over an array: an async-from-sync iterator, ~0.4 µs more per event (bench/async-yield.ts).
        for (const canonical of reader.events(parsed as ChatChunk)) yield canonical;
      }
      // A clean end without `[DONE]` is accepted once a choice finished (some local servers omit it).
      if (!done && !finished) throw new UpstreamError(502, 'The upstream stream ended before it was complete.');
      yield { type: 'end', finishReason: reader.finish ?? 'stop' } satisfies CanonicalEvent;
    })();
  }

  const adapter: ProviderAdapter = {
    name: options.name,
    speaks: ['openai-chat', 'openai-completions'],

    async complete(canonical, call) {
      if (canonical.native?.protocol === 'openai-completions')
        return fromTextCompletion(await textCompletion(toTextCompletionBody(canonical, false), call));
      const native = canonical.native?.protocol === 'openai-chat';
      return fromOpenAiCompletion(await chatCompletion(toOpenAiChatBody(canonical, options.name, false), call), native);
    },

    async stream(canonical, call): Promise<AsyncIterable<CanonicalEvent>> {
      if (canonical.native?.protocol === 'openai-completions') {
        const reader = new OpenAiStreamReader(true, 'openai-completions');
        return chatStream(toTextCompletionBody(canonical, true), call, reader, '/completions');
      }
      const reader = new OpenAiStreamReader(canonical.native?.protocol === 'openai-chat');
      return chatStream(toOpenAiChatBody(canonical, options.name, true), call, reader);
    },

    async embeddings(body, call) {
      return readJson(await post('/embeddings', body, call));
    },

    async images(body, call) {
      return readJson(await post('/images/generations', body, call));
    },

    async imageEdits(form, call) {
      return readJson(await postForm('/images/edits', form, call));
    },

    async speech(body, call): Promise<BinaryResponse> {
      const response = await post('/audio/speech', body, call);
      return { contentType: response.header('content-type') ?? 'application/octet-stream', body: response.body };
    },

    async speechEvents(body, call): Promise<AsyncIterable<SpeechEvent>> {
      const response = await post('/audio/speech', { ...body, stream_format: 'sse' }, call);
      if (!(response.header('content-type') ?? '').includes('text/event-stream'))
        return plainAudio(response.body, call.signal);
      return speechEventStream(response.body, call.signal);
    },

    async transcription(form, call) {
      return audioText(await postForm('/audio/transcriptions', form, call));
    },

    async translation(form, call) {
      return audioText(await postForm('/audio/translations', form, call));
    },

    async realtimeSession(body, call) {
      return readJson(await post('/realtime/sessions', body, call));
    },

    async realtimeClientSecret(body, call) {
      return readJson(await post('/realtime/client_secrets', body, call));
    },

    async listModels(call): Promise<UpstreamModel[]> {
      const response = await upstreamFetch(joinUrl(options.baseUrl, '/models'), {
        headers: headers(false),
        signal: call.signal,
        dispatcher: options.dispatcher,
      });
      const list = await readJson(response);
      return (Array.isArray(list?.data) ? list.data : [])
        .filter((m: any) => typeof m?.id === 'string')
        .map(upstreamModelFromList);
    },
  };
  return adapter;
}

/**
 * OpenAI's speech event stream: `speech.audio.delta` events carry base64 `audio`, the last one,
 * `speech.audio.done`, the `usage` (`input_tokens`, `output_tokens`, `total_tokens`). A stream that ends
 * without it was cut (the usage never came), and an error frame is the upstream's failure: both throw.
 */
async function* speechEventStream(body: Readable, signal: AbortSignal): AsyncGenerator<SpeechEvent> {
  for await (const event of readSse(body, signal)) {
    if (event.data === '[DONE]') continue;
    let parsed: any;
    try {
      parsed = JSON.parse(event.data);
    } catch {
      throw new UpstreamError(502, 'The upstream speech stream carried a frame that is not JSON.');
    }
    if (event.event === 'error' || parsed?.type === 'error' || parsed?.error)
      throw new UpstreamError(
        502,
        `The upstream speech stream failed: ${parsed?.error?.message ?? parsed?.message ?? 'unknown error'}.`,
      );
    if (parsed?.type === 'speech.audio.delta' && typeof parsed.audio === 'string') {
      yield { type: 'audio', audio: Buffer.from(parsed.audio, 'base64'), frame: event.data };
    } else if (parsed?.type === 'speech.audio.done') {
      yield { type: 'done', usage: parsed.usage, frame: event.data };
      return;
    } else {
      yield { type: 'other', frame: event.data };
    }
  }
  throw new UpstreamError(502, 'The upstream speech stream ended before its speech.audio.done event.');
}

/** An upstream that ignored `stream_format: "sse"` and sent the audio itself: its bytes, and no usage. */
async function* plainAudio(body: Readable, signal: AbortSignal): AsyncGenerator<SpeechEvent> {
  try {
    for await (const chunk of body) yield { type: 'audio', audio: chunk as Buffer, frame: null };
  } catch (error) {
    if (signal.aborted) throw signal.reason ?? error;
    throw new UpstreamError(502, 'The upstream audio stream broke.', { cause: error });
  }
}

/**
 * Reads one entry of an OpenAI-style `/models` list; OpenRouter's entries add name, context, modalities, USD prices
 * and `supported_parameters` (only its strings kept: a list of other things says nothing).
 */
/**
 * An audio-to-text answer (transcription, translation): its JSON, or, for `response_format: text|srt|vtt` (plain
 * text), the text wrapped with its content type, so the gateway can meter it alike.
 */
async function audioText(response: UpstreamResponse): Promise<Record<string, any>> {
  const type = response.header('content-type') ?? '';
  return type.includes('json') ? readJson(response) : { text: await response.text(), contentType: type };
}

function upstreamModelFromList(entry: any): UpstreamModel {
  const price = (value: unknown) =>
    typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
  return {
    id: entry.id,
    name: typeof entry.name === 'string' ? entry.name : undefined,
    contextLength: Number.isInteger(entry.context_length) ? entry.context_length : undefined,
    maxOutputTokens: Number.isInteger(entry.top_provider?.max_completion_tokens)
      ? entry.top_provider.max_completion_tokens
      : undefined,
    inputModalities: Array.isArray(entry.architecture?.input_modalities)
      ? entry.architecture.input_modalities
      : undefined,
    outputModalities: Array.isArray(entry.architecture?.output_modalities)
      ? entry.architecture.output_modalities
      : undefined,
    supportedParameters: Array.isArray(entry.supported_parameters)
      ? entry.supported_parameters.filter((parameter: unknown) => typeof parameter === 'string')
      : undefined,
    usdPricing: entry.pricing
      ? {
          prompt: price(entry.pricing.prompt),
          completion: price(entry.pricing.completion),
          request: price(entry.pricing.request),
          image: price(entry.pricing.image),
          cacheRead: price(entry.pricing.input_cache_read),
          cacheWrite: price(entry.pricing.input_cache_write),
          cacheWrite1h: price(entry.pricing.input_cache_write_1h),
          reasoning: price(entry.pricing.internal_reasoning),
          audioInput: price(entry.pricing.audio),
          audioOutput: price(entry.pricing.audio_output),
          webSearch: price(entry.pricing.web_search),
        }
      : undefined,
  };
}
