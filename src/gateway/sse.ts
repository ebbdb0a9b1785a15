import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { CanonicalEvent } from './canonical.ts';
import type { ApiError } from '../platform/errors.ts';
import { logFailure, toApiError } from '../platform/http/server.ts';
import { ClientGone } from './upstream.ts';

/**
 * Server-Sent Events as every inbound protocol writes them: the response is taken from Fastify once the
 * first upstream event is in hand, or once the upstream has been slow to begin for `STREAM_OPEN_AFTER_MS`
 * ({@link startEventStream}; a failure while nothing was written is an ordinary JSON error), then frames are
 * written as they come, never buffered whole.
 */

/** Takes the raw response from Fastify and writes the event-stream head (with any headers set on the reply). */
export function openEventStream(reply: FastifyReply): ServerResponse {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  return raw;
}

/** Uncorks a response corked by {@link writeFrame} for one turn of the event loop. */
function uncork(raw: ServerResponse): void {
  raw.uncork();
}

/**
 * Writes one frame (or one chunk of a relayed body, as speech's audio): true when it was taken and the socket
 * has room, false when the client is gone, or a promise (the socket full) that settles to one of those once it
 * drained. Not async: the common case costs no promise, and a stream writes one frame per token.
 *
 * Frames written in one turn of the event loop (an upstream read often carries several) leave in one
 * socket write: the response is corked until the turn's queued work is done. Each frame its own write was
 * a system call per token.
 */
export function writeFrame(raw: ServerResponse, frame: string | Buffer): boolean | Promise<boolean> {
  if (raw.destroyed || raw.writableEnded) return false;
  if (raw.writableCorked === 0) {
    raw.cork();
    process.nextTick(uncork, raw);
  }
  if (raw.write(frame)) return true;
  return new Promise<boolean>((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve(!raw.destroyed);
    };
    raw.once('drain', done);
    raw.once('close', done);
  });
}

/** How a protocol turns a pipeline stream into its frames. */
export interface EventRelay {
  /** The frames of one event, back to back (null or '' for none). */
  render(event: CanonicalEvent): string | null;
  /** Runs once an event is rendered, before its frames are written (e.g. storing a response the client is about to read is done). */
  beforeWrite?(event: CanonicalEvent): Promise<void>;
  /**
   * The frame telling the client the stream failed in the gateway (a throw while iterating or rendering),
   * after logging it; without it the error is rethrown once the response ended.
   */
  failure?(error: unknown): string;
}

/**
 * How long a stream may write nothing before it gets a comment line. A reasoning model can be silent for
 * minutes between two deltas, while its client gives up on a silent connection much sooner: Node's `fetch`,
 * which the official SDKs use, after 300 s; a proxy or load balancer in front, often after 60 s. Upstreams do
 * the same (Anthropic's `ping` events, OpenRouter's comments); a comment is ignored by every SSE reader.
 */
export const KEEPALIVE_INTERVAL_MS = 15_000;

/** The comment a silent stream gets each {@link KEEPALIVE_INTERVAL_MS}. */
const KEEPALIVE_FRAME = ': keep-alive\n\n';

/**
 * Relays a pipeline stream (`streamCall`) onto an opened event stream, one protocol's frames per event,
 * for the three protocols alike. A stream that wrote nothing for a whole `keepAliveMs` gets a comment line
 * ({@link KEEPALIVE_INTERVAL_MS}), so that an upstream's long silence does not end it at the client.
 *
 * Invariant: whatever ends the loop — the stream's end, the client gone (a write refused), a failure — the
 * stream's iterator is returned (the pipeline stops the upstream and settles for what was produced) and the
 * response ends only after that, so a client reading its wallet once the stream closed sees the charge.
 */
export async function relayEvents(
  raw: ServerResponse,
  stream: AsyncIterable<CanonicalEvent>,
  relay: EventRelay,
  keepAliveMs = KEEPALIVE_INTERVAL_MS,
): Promise<void> {
  const iterator = stream[Symbol.asyncIterator]();
  // One timer per stream, not one per frame: a frame only marks the interval as not silent.
  let silent = true;
  const keepAlive = setInterval(() => {
    if (silent && !raw.writableNeedDrain) writeFrame(raw, KEEPALIVE_FRAME);
    silent = true;
  }, keepAliveMs);
  keepAlive.unref();
  try {
    for (let step = await iterator.next(); !step.done; step = await iterator.next()) {
      const frames = relay.render(step.value);
      if (relay.beforeWrite) await relay.beforeWrite(step.value);
      if (!frames) continue;
      silent = false;
      const written = writeFrame(raw, frames);
      if (written !== true && !(await written)) break;
    }
  } catch (error) {
    if (!relay.failure) throw error;
    const frame = relay.failure(error);
    if (!raw.destroyed) await writeFrame(raw, frame);
  } finally {
    clearInterval(keepAlive);
    await iterator.return?.(undefined).catch(() => {});
    if (!raw.writableEnded) raw.end();
  }
}

/** A streamed call's opened response and its pipeline stream, its first event in hand. */
export interface StartedStream<S> {
  raw: ServerResponse;
  stream: S;
}

/**
 * Starts a streamed call and the event stream it is relayed on. `start` runs the call (the protocol's `streamCall`,
 * given `onSlowStart` in its options); `failureFrame` is the protocol's own frame of an error after its stream
 * began. Answers the response, opened, and the call's stream once its first event is in hand; or null when the call
 * ended here: the client gone, or a failure written on the already opened stream as `failureFrame`.
 *
 * Security and behaviour invariant: while nothing was written, every failure — a restriction's 402/429, a validation
 * error, an upstream's after its fallbacks — is thrown, for Fastify to answer as the JSON error with its status. The
 * response is opened early only when `onSlowStart` fires (the hold placed, still no first event after
 * `STREAM_OPEN_AFTER_MS`): status 200, the event-stream headers and a comment at once, then a comment each
 * `keepAliveMs`, so that a client (Node's `fetch` waits 300 s for headers) or a proxy (often 60 s) does not give up
 * on a model that thinks for minutes. From then on comments are all that is written until the first event, so the
 * pipeline still tries the fallbacks; its failure is the protocol's SSE error frame with the same envelope (its
 * status was sent already). Billing stays the pipeline's: a failure before output, or a client gone while only
 * comments were written, released the hold before `start` settled.
 */
export async function startEventStream<S>(
  reply: FastifyReply,
  start: (onSlowStart: () => void) => Promise<S>,
  failureFrame: (error: ApiError) => string,
  keepAliveMs = KEEPALIVE_INTERVAL_MS,
): Promise<StartedStream<S> | null> {
  let opened = null as ServerResponse | null;
  let keepAlive: NodeJS.Timeout | undefined;
  const onSlowStart = () => {
    // A client already gone aborted the call: the pipeline ends it (ClientGone) without a stream to open.
    if (reply.raw.destroyed) return;
    const raw = openEventStream(reply);
    opened = raw;
    // At once: the head leaves with the first bytes written, and the client knows the call is under way.
    writeFrame(raw, KEEPALIVE_FRAME);
    keepAlive = setInterval(() => {
      if (!raw.writableNeedDrain) writeFrame(raw, KEEPALIVE_FRAME);
    }, keepAliveMs);
    keepAlive.unref();
  };
  let stream: S;
  try {
    stream = await start(onSlowStart);
  } catch (error) {
    clearInterval(keepAlive);
    if (opened === null) {
      // The client left before the answer: the hold is released, and there is no one to answer.
      if (error instanceof ClientGone) {
        reply.hijack();
        return null;
      }
      throw error;
    }
    if (!(error instanceof ClientGone)) {
      const apiError = toApiError(error);
      logFailure(
        reply.request.log,
        error,
        { status: apiError.status, route: reply.request.routeOptions.url },
        'a streamed call failed before its first event, its stream already opened',
      );
      await writeFrame(opened, failureFrame(apiError));
    }
    if (!opened.writableEnded) opened.end();
    return null;
  }
  clearInterval(keepAlive);
  return { raw: opened ?? openEventStream(reply), stream };
}
