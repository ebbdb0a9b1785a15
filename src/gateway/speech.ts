import Type from 'typebox';
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { App } from '../platform/http/server.ts';
import { principalOf } from '../platform/http/server.ts';
import { nonJsonResponse, type DocumentedResponse } from '../platform/http/openapi.ts';
import { ApiError } from '../platform/errors.ts';
import { Meter } from '../billing/meter.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import { MODEL_ID_PATTERN } from '../models/routes.ts';
import { countTextTokens } from '../providers/tokens.ts';
import type { BinaryResponse, SpeechEvent } from '../providers/types.ts';
import type { GatewayDeps } from './deps.ts';
import { clientSignal, resolveModel } from './common.ts';
import { callWithFallbacks, candidatesOf, ClientGone, type UpstreamAttempt } from './upstream.ts';
import { openEventStream, writeFrame } from './sse.ts';
import {
  billsSpeechTokens,
  perCharacterSpeechCost,
  speechTokens,
  speechTokensCost,
  speechWorstCase,
} from './speech-billing.ts';

const SpeechBody = Type.Object(
  {
    model: Type.String({ pattern: MODEL_ID_PATTERN, maxLength: 300 }),
    input: Type.String({ minLength: 1, maxLength: 4096 }),
    instructions: Type.Optional(Type.String({ maxLength: 4096 })),
    voice: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);

/** The content type of each `response_format` (OpenAI's default: mp3). */
const AUDIO_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/**
 * The audio (bytes: `format: binary`) in the content type of its `response_format`, or with `stream_format: "sse"`
 * the provider's events, which are text.
 */
const SPEECH_ANSWER: DocumentedResponse = (() => {
  const audio = nonJsonResponse(
    'The audio, relayed as the provider sends it, in the `response_format` asked for (the provider\'s default: mp3); with `stream_format: "sse"`, the provider\'s `speech.audio.delta` and `speech.audio.done` events.',
    Object.values(AUDIO_TYPES),
    true,
  );
  const events = {
    type: 'string',
    description: '`speech.audio.delta` events (base64 audio), then `speech.audio.done`.',
  };
  return { ...audio, content: { ...audio.content, 'text/event-stream': { schema: events } } };
})();

type SpeechRequest = { model: string; input: string; [k: string]: unknown };

/** What the upstream that answered sent: the audio itself (per-character models), or its event stream. */
type Answer =
  | { kind: 'audio'; response: BinaryResponse }
  | { kind: 'events'; iterator: AsyncIterator<SpeechEvent>; first: IteratorResult<SpeechEvent> };

/**
 * `POST /api/v1/audio/speech`. A per-character model (tts-1) is billed `request` + `prompt` per 1M tokens of
 * `input` and `instructions` — known before the call, so the hold is the charge — and its audio relayed as it
 * arrives. A model whose entry prices `audioOutput` (gpt-4o-mini-tts) is asked upstream for its event stream,
 * whose `speech.audio.done` event alone reports the usage (the plain audio answer carries none): the client gets
 * what it asked for — the audio decoded from the `speech.audio.delta` events as they come, or, with
 * `stream_format: "sse"`, the events as sent — and the call is settled on the reported tokens
 * (`speech-billing.ts`), or on an estimate of what was produced when the stream was cut.
 */
export function registerSpeechRoute(app: App, ctx: GatewayDeps): void {
  app.post(
    '/api/v1/audio/speech',
    {
      schema: {
        tags: ['ai'],
        summary: 'Text to speech (OpenAI-compatible; answers the audio bytes)',
        security: [{ bearer: [] }],
        body: SpeechBody,
      },
      config: {
        auth: ['ai:audio'],
        billed: true,
        documentedResponses: {
          200: SPEECH_ANSWER,
        },
      },
    },
    async (request, reply) => {
      const body = request.body as SpeechRequest;
      // gpt-4o-mini-tts bills its `instructions` as input text too.
      const promptTokens =
        countTextTokens(body.input) + (typeof body.instructions === 'string' ? countTextTokens(body.instructions) : 0);
      const principal = principalOf(request);
      const model = await resolveModel(ctx, body.model, principal);
      const candidates = (await candidatesOf(ctx, model, principal)).filter((m) => {
        const adapter = ctx.providers.get(m.provider);
        return billsSpeechTokens(m) ? !!adapter?.speechEvents : !!adapter?.speech;
      });
      if (candidates[0]?.id !== model.id)
        throw new ApiError('INVALID_REQUEST', `The model "${model.id}" does not support speech.`);
      const meter = await Meter.open(
        ctx,
        principal,
        'speech',
        model.id,
        Math.max(...candidates.map((m) => speechWorstCase(m, promptTokens))),
      );
      const signal = clientSignal(reply, ctx.shutdown);
      let answered;
      try {
        answered = await callWithFallbacks<Answer>(ctx, candidates, signal, async (m, adapter, attempt) => {
          const upstreamBody = { ...body, model: m.upstreamModel };
          if (!billsSpeechTokens(m))
            return { kind: 'audio', response: await adapter.speech!(upstreamBody, { signal: attempt }) };
          const iterator = (await adapter.speechEvents!(upstreamBody, { signal: attempt }))[Symbol.asyncIterator]();
          // The first event is awaited here, so a stream that breaks before any audio can still fall back.
          return { kind: 'events', iterator, first: await iterator.next() };
        });
      } catch (error) {
        await meter.release(model, error instanceof ClientGone ? 'client_aborted' : 'upstream_error');
        if (error instanceof ClientGone) {
          reply.hijack();
          return reply;
        }
        throw error;
      }
      const { result, model: answering, attempt } = answered;
      if (result.kind === 'audio') {
        attempt.dispose();
        const cost = perCharacterSpeechCost(answering, promptTokens);
        await meter.settle({ model: answering, cost, promptTokens, completionTokens: 0, status: 'ok' });
        // A client that left while the call settled has no use for the audio, and the body its going aborted
        // would reach Fastify as an error of ours (a logged 500): nothing is sent, as for a client gone before.
        if (signal.aborted) {
          // Its abort error has no one to hear it (unheard, it would be an uncaught exception).
          result.response.body.on('error', () => {}).destroy();
          reply.hijack();
          return reply;
        }
        return reply.type(result.response.contentType).send(result.response.body);
      }
      await relaySpeechEvents(ctx, reply, { body, promptTokens, meter, model: answering, attempt, ...result });
      return reply;
    },
  );
}

/**
 * Relays a token-priced model's speech events to the client as it asked (the decoded audio, or the event stream
 * with `stream_format: "sse"`), then settles the meter: on the reported usage, or, when the stream ended without
 * it (the client left, the upstream broke), on what was produced — before the response ends, so a client that
 * read the whole answer sees the charge.
 */
async function relaySpeechEvents(
  ctx: GatewayDeps,
  reply: FastifyReply,
  call: {
    body: SpeechRequest;
    promptTokens: number;
    meter: Meter;
    model: CatalogueModel;
    attempt: UpstreamAttempt;
    iterator: AsyncIterator<SpeechEvent>;
    first: IteratorResult<SpeechEvent>;
  },
): Promise<void> {
  const { body, meter, model, attempt, iterator } = call;
  attempt.began();
  const asksEvents = body.stream_format === 'sse';
  const format = body.response_format ?? 'mp3';
  // The response is taken from Fastify before anything that may throw: from here every exit settles the meter.
  reply.hijack();
  const raw = reply.raw;
  let audioBytes = 0;
  let usage: unknown = undefined;
  let status: 'ok' | 'client_aborted' | 'upstream_error' = 'client_aborted';
  let failure: string | null = null;
  try {
    if (asksEvents) openEventStream(reply);
    else
      raw.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
        'content-type': AUDIO_TYPES[String(format)] ?? 'application/octet-stream',
      });
    for (let step = call.first; !step.done; step = await iterator.next()) {
      const event = step.value;
      if (event.type === 'done') usage = event.usage;
      if (event.type === 'audio') audioBytes += event.audio.length;
      const chunk = asksEvents
        ? `data: ${event.frame ?? JSON.stringify({ type: 'speech.audio.delta', audio: (event as { audio: Buffer }).audio.toString('base64') })}\n\n`
        : event.type === 'audio'
          ? event.audio
          : null;
      if (chunk !== null && chunk.length > 0 && !(await writeFrame(raw, chunk))) break;
    }
    if (!raw.destroyed) status = 'ok';
  } catch (error) {
    if (!(error instanceof ClientGone || attempt.signal.aborted || raw.destroyed)) {
      status = 'upstream_error';
      failure = (error as Error).message;
      ctx.log.warn({ err: error, model: model.id }, 'upstream speech stream failed after output began');
    }
  } finally {
    // Stops the upstream when it may still be producing (the client left, or a write failed mid-stream).
    await iterator.return?.(undefined).catch(() => {});
    attempt.dispose();
  }
  const tokens = speechTokens(usage, { promptTokens: call.promptTokens, audioBytes, format });
  let cost: number;
  try {
    cost = speechTokensCost(model, tokens);
  } catch (error) {
    // A count beyond what can be priced: charged its hold, as meteredCall does with a usage it cannot read.
    ctx.log.error({ err: error, model: model.id }, 'pricing the speech usage failed; the call is charged its hold');
    cost = meter.held;
  }
  await meter
    .settle({
      model,
      cost,
      promptTokens: tokens.input,
      completionTokens: tokens.output,
      status,
      details: { audioOut: tokens.output, ...(tokens.estimated ? { estimated: true } : {}) },
    })
    .catch((error) =>
      ctx.log.error({ err: error }, 'settling a speech stream failed; the hold expires and is released by the sweep'),
    );
  if (status === 'upstream_error') {
    // An event-stream client is told; an audio client gets a cut body, never a clean end of half the audio.
    if (asksEvents && !raw.destroyed) {
      raw.end(
        `data: ${JSON.stringify({ type: 'error', error: { code: 'UPSTREAM_ERROR', message: `${failure?.replace(/\.$/, '')}, after output began.` } })}\n\n`,
      );
    } else raw.destroy();
    return;
  }
  if (!raw.destroyed) raw.end();
}
