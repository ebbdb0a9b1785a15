import type { Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import { isAbortError, UpstreamError } from './types.ts';
import { DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS } from './config.ts';

/** What a provider reads of an upstream answer. */
export interface UpstreamResponse {
  /** A header by name (any case); null when absent. */
  header(name: string): string | null;
  /** The body as it arrives; read it once, as a stream or with `text()`. */
  body: Readable;
  text(): Promise<string>;
}

/** What one upstream request sends. */
export interface UpstreamRequest {
  method?: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string | FormData;
  signal: AbortSignal;
  /** The connection pool to send it on ({@link upstreamDispatcher}); unset: the one of the default timeouts. */
  dispatcher?: Dispatcher;
}

/** The connection pools by idle timeout: one per process in practice, shared by every provider. */
const dispatchers = new Map<number, Dispatcher>();

/**
 * The connection pool upstream requests go through, with undici's own timeouts made to agree with ours. undici's
 * defaults (300 s for the headers, 300 s of silence in a body) would cut a reasoning model's non-streaming answer
 * or a stream's pause at 5 minutes whatever `UPSTREAM_TIMEOUT_MS` says. So the wait for the headers is left to the
 * gateway's deadline (`UPSTREAM_TIMEOUT_MS`: every caller passes a signal that carries it), and a body's silence
 * is bounded by `UPSTREAM_IDLE_TIMEOUT_MS`. One Agent for all calls, pooled and kept alive as the global one was.
 */
export function upstreamDispatcher(config: { UPSTREAM_IDLE_TIMEOUT_MS: number }): Dispatcher {
  const idleMs = config.UPSTREAM_IDLE_TIMEOUT_MS;
  let dispatcher = dispatchers.get(idleMs);
  if (!dispatcher) dispatchers.set(idleMs, (dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: idleMs })));
  return dispatcher;
}

/** The pool of adapters built without one (tests, tools): the default idle timeout. */
const DEFAULT_DISPATCHER = upstreamDispatcher({ UPSTREAM_IDLE_TIMEOUT_MS: DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS });

/**
 * Sends one request upstream and returns the response once its status is known to be 2xx. A network failure
 * or a non-2xx answer becomes an {@link UpstreamError} carrying the upstream's own message; an abort is
 * rethrown as-is so the caller can tell its client's disconnect or its deadline from a provider fault.
 *
 * undici's `request` rather than `fetch` (which is undici too, under WHATWG streams and objects): the same
 * pooled keep-alive connections at half the cost — a bare forwarding proxy doubled its throughput on the
 * benchmark's machine (BENCHMARKS.md).
 */
export async function upstreamFetch(url: string, init: UpstreamRequest): Promise<UpstreamResponse> {
  let answer: Awaited<ReturnType<typeof request>>;
  try {
    const { headers, body } =
      typeof init.body === 'object'
        ? await multipart(init.headers, init.body)
        : { headers: init.headers, body: init.body };
    answer = await request(url, {
      method: init.method ?? 'GET',
      headers,
      body,
      signal: init.signal,
      dispatcher: init.dispatcher ?? DEFAULT_DISPATCHER,
    });
  } catch (error) {
    if (isAbortError(error) || init.signal.aborted) throw init.signal.reason ?? error;
    throw new UpstreamError(502, `The upstream provider is unreachable (${(error as Error).message}).`, {
      cause: error,
    });
  }
  const { statusCode, headers, body } = answer;
  const response: UpstreamResponse = {
    header: (name) => {
      const value = headers[name.toLowerCase()];
      return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
    },
    body,
    text: () => body.text(),
  };
  if (statusCode >= 200 && statusCode < 300) return response;
  const text = await body.text().catch(() => '');
  const said = upstreamMessage(text);
  const detail = said ? sentence(withoutCredentials(said, init.headers)) : undefined;
  throw new UpstreamError(
    statusCode,
    detail
      ? `The upstream provider answered ${statusCode}: ${detail}`
      : `The upstream provider answered ${statusCode}.`,
    { detail },
  );
}

/** Request headers that carry the operator's provider credential (OpenAI, Anthropic, Azure, Replicate). */
const CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'api-key'];

/**
 * `text` with every credential the request carried replaced by `[redacted]`. Security invariant: an upstream's
 * message reaches the caller (a 400 relays it) and the log, and some providers repeat the key they were sent
 * ("Incorrect API key provided: Bearer sk-…"; found by an outside check): the operator's key must reach neither.
 */
export function withoutCredentials(text: string, headers: Record<string, string>): string {
  let clean = text;
  for (const [name, value] of Object.entries(headers)) {
    if (!CREDENTIAL_HEADERS.includes(name.toLowerCase()) || !value) continue;
    // The whole value, then the token after its scheme (`Bearer sk-…`), so that either form is caught.
    for (const secret of [value, value.replace(/^\S+\s+/, '')])
      if (secret.length >= 8) clean = clean.split(secret).join('[redacted]');
  }
  return clean;
}

/** Ends `text` with a full stop unless the provider's own message already ends a sentence ("…this model."). */
function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/**
 * A FormData as the bytes of its multipart body, with their content type. The npm undici's `request` takes
 * only a FormData of its own package instance, while the one Node's `FormData` global belongs to is Node's
 * own copy: which of the two dispatches depends on which undici first made the process-wide dispatcher
 * (the served bundle's is the npm one, and each transcription was a 502). Encoded by Node's `Response`, of
 * the same copy as the global, the body is plain bytes either way, and goes with its length.
 */
async function multipart(
  headers: Record<string, string>,
  form: FormData,
): Promise<{ headers: Record<string, string>; body: Buffer }> {
  const encoded = new Response(form);
  const body = Buffer.from(await encoded.arrayBuffer());
  return { headers: { ...headers, 'content-type': encoded.headers.get('content-type')! }, body };
}

/** The provider's own error message from an error body (OpenAI and Anthropic shapes), for our message. */
function upstreamMessage(text: string): string {
  try {
    const body = JSON.parse(text);
    const message = body?.error?.message ?? body?.message ?? body?.detail;
    if (typeof message === 'string' && message) return message.slice(0, 500);
  } catch {}
  return '';
}

/** Reads a 2xx JSON body; a body that is not JSON is a provider fault. */
export async function readJson(response: UpstreamResponse): Promise<any> {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError(502, 'The upstream provider answered a body that is not JSON.');
  }
}

/** One Server-Sent Events message. */
export interface SseEvent {
  event: string;
  data: string;
}

/** TextDecoder's option for a chunk that may end inside a character (one object for every chunk). */
const STREAMING = { stream: true } as const;

/**
 * Parses a Server-Sent Events body incrementally, yielding each event as soon as its blank line arrives (no
 * buffering of the whole stream). A body that ends or breaks mid-stream throws {@link UpstreamError}, unless
 * the signal was aborted, in which case the abort error is rethrown.
 */
export async function* readSse(body: Readable, signal: AbortSignal): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  const chunks = body[Symbol.asyncIterator]();
  try {
    while (true) {
      let chunk: IteratorResult<Uint8Array>;
      try {
        chunk = await chunks.next();
      } catch (error) {
        if (signal.aborted || isAbortError(error)) throw signal.reason ?? error;
        if ((error as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT')
          throw new UpstreamError(502, 'The upstream stream went silent for longer than UPSTREAM_IDLE_TIMEOUT_MS.', {
            cause: error,
          });
        throw new UpstreamError(502, 'The upstream stream broke.', { cause: error });
      }
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, STREAMING);
      let newline: number;
      while ((newline = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, buffer[newline - 1] === '\r' ? newline - 1 : newline);
        buffer = buffer.slice(newline + 1);
        if (line === '') {
          if (data.length > 0)
            yield { event: event || 'message', data: data.length === 1 ? data[0]! : data.join('\n') };
          event = '';
          data = [];
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line[5] === ' ' ? 6 : 5));
        } else if (line.startsWith('event:')) {
          event = line.slice(line[6] === ' ' ? 7 : 6);
        }
      }
    }
    if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
  } finally {
    // A consumer that stopped at the end marker leaves at most the stream's last bytes: they are read so the
    // keep-alive connection serves the next call (destroying the body closed it, and built an error with its
    // stack for every stream). More than that unread, or a broken stream, closes it.
    if (!body.readableEnded && !body.destroyed)
      (body as Readable & { dump(options: { limit: number }): Promise<void> })
        .dump({ limit: 64 * 1024 })
        .catch(() => {});
  }
}

/** Joins a base URL and a path without doubling the slash. */
export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}
