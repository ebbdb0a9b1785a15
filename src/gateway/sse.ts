import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/**
 * Server-Sent Events as every inbound protocol writes them: the response is taken from Fastify once the
 * first upstream event is in hand (a failure before it is an ordinary JSON error), then frames are written
 * as they come, never buffered whole.
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

/**
 * Writes one frame, waiting for the socket to drain when it is full; false when the client is gone.
 * Frames written in one turn of the event loop (an upstream read often carries several) leave in one
 * socket write: the response is corked until the turn's queued work is done. Each frame its own write was
 * a system call per token.
 */
export async function writeFrame(raw: ServerResponse, frame: string): Promise<boolean> {
  if (raw.destroyed || raw.writableEnded) return false;
  if (raw.writableCorked === 0) {
    raw.cork();
    process.nextTick(() => raw.uncork());
  }
  if (raw.write(frame)) return true;
  await new Promise<void>((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.once('drain', done);
    raw.once('close', done);
  });
  return !raw.destroyed;
}
