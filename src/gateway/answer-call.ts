import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiError } from '../platform/errors.ts';
import { principalOf } from '../platform/http/server.ts';
import type { CanonicalCall, CanonicalEvent, CanonicalResult } from './canonical.ts';
import type { GatewayDeps } from './deps.ts';
import { clientSignal } from './common.ts';
import { relayEvents, startEventStream } from './sse.ts';
import { ClientGone, completeCall, streamCall, type CallStream, type RunOptions } from './run-call.ts';

/** How one OpenAI-style protocol writes a call's answer: whole, or as its event stream. */
export interface CallWire<R> {
  /** The whole answer of a call without `stream`. */
  whole(result: CanonicalResult): R;
  /** The frames of one event of `stream` (a renderer made for that stream: its model, whether it is native). */
  frames(stream: CallStream): (event: CanonicalEvent) => string;
  /** The frame of a failure once the stream was opened (a slow upstream's), in the protocol's envelope. */
  failureFrame(error: ApiError): string;
}

/**
 * Runs a parsed call through the pipeline and answers it in the protocol's wire: whole, or with `call.stream` as
 * an event stream. Invariants: the stream is started by `startEventStream` (a failure while nothing was written
 * is a JSON error); leaving the relay (the client gone: a write failed) returns the pipeline's iterator, which
 * settles the call for what was produced, and the response ends only after that settle, so a client reading
 * its wallet once the stream closed sees the charge; a client gone before a whole answer has its hold released
 * and nothing written.
 */
export async function answerCall<R>(
  ctx: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  call: CanonicalCall,
  options: RunOptions,
  wire: CallWire<R>,
): Promise<R | FastifyReply> {
  const principal = principalOf(request);
  const signal = clientSignal(reply, ctx.shutdown);
  if (call.stream) {
    const started = await startEventStream(
      reply,
      (onSlowStart) => streamCall(ctx, principal, call, signal, { ...options, onSlowStart }),
      wire.failureFrame,
    );
    if (started) await relayEvents(started.raw, started.stream, { render: wire.frames(started.stream) });
    return reply;
  }
  try {
    return wire.whole(await completeCall(ctx, principal, call, signal, options));
  } catch (error) {
    if (error instanceof ClientGone) return reply.hijack();
    throw error;
  }
}
