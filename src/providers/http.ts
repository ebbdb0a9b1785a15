import { isAbortError, UpstreamError } from './types.ts';

/**
 * Sends one request upstream and returns the response once its status is known to be 2xx. A network failure
 * or a non-2xx answer becomes an {@link UpstreamError} carrying the upstream's own message; an abort is
 * rethrown as-is so the caller can tell its client's disconnect or its deadline from a provider fault.
 */
export async function upstreamFetch(url: string, init: RequestInit & { signal: AbortSignal }): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    if (isAbortError(error) || init.signal.aborted) throw error;
    throw new UpstreamError(502, `The upstream provider is unreachable (${(error as Error).message}).`, { cause: error });
  }
  if (response.ok) return response;
  const text = await response.text().catch(() => '');
  throw new UpstreamError(response.status, `The upstream provider answered ${response.status}${upstreamMessage(text)}.`);
}

/** The provider's own error message from an error body (OpenAI and Anthropic shapes), for our message. */
function upstreamMessage(text: string): string {
  try {
    const body = JSON.parse(text);
    const message = body?.error?.message ?? body?.message ?? body?.detail;
    if (typeof message === 'string' && message) return `: ${message.slice(0, 500)}`;
  } catch {}
  return '';
}

/** Reads a 2xx JSON body; a body that is not JSON is a provider fault. */
export async function readJson(response: Response): Promise<any> {
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

/**
 * Parses a Server-Sent Events body incrementally, yielding each event as soon as its blank line arrives (no
 * buffering of the whole stream). A body that ends or breaks mid-stream throws {@link UpstreamError}, unless
 * the signal was aborted, in which case the abort error is rethrown.
 */
export async function* readSse(body: ReadableStream<Uint8Array> | null, signal: AbortSignal): AsyncGenerator<SseEvent> {
  if (!body) throw new UpstreamError(502, 'The upstream provider answered an empty stream.');
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  const reader = body.getReader();
  try {
    while (true) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (signal.aborted || isAbortError(error)) throw signal.reason ?? error;
        throw new UpstreamError(502, 'The upstream stream broke.', { cause: error });
      }
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, buffer[newline - 1] === '\r' ? newline - 1 : newline);
        buffer = buffer.slice(newline + 1);
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
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
    reader.cancel().catch(() => {});
  }
}

/** Joins a base URL and a path without doubling the slash. */
export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}
