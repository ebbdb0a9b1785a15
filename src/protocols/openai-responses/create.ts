import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../../platform/http/server.ts';
import { principalOf } from '../../platform/http/server.ts';
import { jsonOrEventStream } from '../../platform/http/openapi.ts';
import type { ResponsesDeps } from './deps.ts';
import type { Principal } from '../../platform/http/principal.ts';
import { ApiError } from '../../platform/errors.ts';
import type { CanonicalCall } from '../../gateway/canonical.ts';
import { clientSignal } from '../../gateway/common.ts';
import { ClientGone, completeCall, streamCall } from '../../gateway/run-call.ts';
import { relayEvents, startEventStream } from '../../gateway/sse.ts';
import { newResponseId } from './ids.ts';
import { inputItems, responsesRefusal, toCanonicalCall, type InputItem, type ResponsesRequest } from './parse.ts';
import { renderResult, type ResponseFrame, type ResponseObject } from './render.ts';
import { ApiErrorSchema } from '#wire/errors.ts';
import { CreateResponseBody, ResponseSchema } from './schemas.ts';
import { referencedItems, requireResponse, saveResponse, storable } from './store.ts';
import { ResponsesEventWriter } from './stream.ts';

/** Stores the finished response (`store: true`), or null when it is not kept. */
type Keep = ((response: ResponseObject) => Promise<void>) | null;

/** `POST /api/v1/responses`: OpenAI's Responses API on any model, streamed or not, billed through the one pipeline. */
export function registerCreateResponseRoute(app: App, ctx: ResponsesDeps): void {
  app.post(
    '/api/v1/responses',
    {
      schema: {
        tags: ['ai'],
        summary: 'Create a model response (OpenAI Responses API; `stream: true` answers its Server-Sent Events)',
        description:
          "Text and image input, instructions, function tools and their outputs, `max_output_tokens`, `text.format`, `reasoning.effort`. Stateless by default: `store` defaults to **false** (OpenAI's default is true); with `store: true` the response is kept for its user and app and `previous_response_id` continues it. Built-in tools (web_search, file_search, …) are a 400 UNSUPPORTED_PARAMETER. Billed, limited and restricted exactly as chat (402/429 with the contract's fields).",
        security: [{ bearer: [] }],
        body: CreateResponseBody,
        response: {
          200: ResponseSchema,
          400: ApiErrorSchema,
          402: ApiErrorSchema,
          404: ApiErrorSchema,
          413: ApiErrorSchema,
          429: ApiErrorSchema,
          502: ApiErrorSchema,
          504: ApiErrorSchema,
        },
      },
      config: {
        auth: ['ai:chat', 'ai:completions'],
        documentedResponses: {
          200: jsonOrEventStream(
            ResponseSchema,
            'The response, or with `stream: true` its events as Server-Sent Events.',
            'Named events (`response.created`, `response.output_text.delta`, …, `response.completed`), each `data:` a JSON object with its `type` and an increasing `sequence_number`; a failure after output began, or after a slow upstream had the stream opened (`STREAM_OPEN_AFTER_MS`; until then only `: keep-alive` comments), is a `response.failed` event, then `error`.',
          ),
        },
      },
    },
    async (request, reply) => {
      const body = request.body as ResponsesRequest;
      const principal = principalOf(request);
      const store = body.store === true;
      const { call, conversation } = await prepare(ctx, principal, body);
      // Checked before anything is held or sent: a conversation too large to keep is refused, not silently unstored.
      const storedInput = store ? storable(ctx, conversation) : null;
      const createdAt = Math.floor(ctx.clock.now() / 1000);
      const frame: ResponseFrame = { id: newResponseId(), createdAt, model: call.model, request: body, store };
      const keep: Keep =
        storedInput === null ? null : (response) => saveResponse(ctx, principal, storedInput, response);
      return call.stream
        ? respondStreamed(ctx, request, reply, call, frame, keep)
        : respondWhole(ctx, reply, call, frame, keep);
    },
  );
}

/**
 * The canonical call, and the conversation it answers as items (the previous response's input and output
 * first, `item_reference`s replaced by the items they name), which is what `store: true` keeps.
 */
export async function prepare(
  ctx: ResponsesDeps,
  principal: Principal,
  body: ResponsesRequest,
): Promise<{ call: CanonicalCall; conversation: InputItem[] }> {
  let history: InputItem[] = [];
  if (typeof body.previous_response_id === 'string') {
    const previous = await requireResponse(ctx, principal, body.previous_response_id, 'previous_response_id');
    history = [...previous.inputItems, ...previous.response.output];
  }
  const own = inputItems(body.input);
  const references = await referencedItems(ctx, principal, own);
  const resolve = (id: string) => references.get(id) ?? null;
  const call = toCanonicalCall(body, history, resolve);
  const conversation = [
    ...history,
    ...own.map((item) => (item?.type === 'item_reference' ? resolve(String(item.id))! : item)),
  ];
  return { call, conversation };
}

/** A whole answer: the pipeline's result rendered as a Response object (kept first when `store: true`). */
async function respondWhole(
  ctx: ResponsesDeps,
  reply: FastifyReply,
  call: CanonicalCall,
  frame: ResponseFrame,
  keep: Keep,
): Promise<ResponseObject | FastifyReply> {
  let result;
  try {
    result = await completeCall(ctx, principalOf(reply.request), call, clientSignal(reply, ctx.shutdown), {
      refuses: responsesRefusal(call),
    });
  } catch (error) {
    // The client left before the answer: the pipeline released the hold; there is no one to answer.
    if (error instanceof ClientGone) return reply.hijack();
    throw error;
  }
  const response = renderResult(frame, result);
  if (keep) await keep(response);
  return response;
}

/**
 * A streamed answer, written event by event as the pipeline yields them.
 *
 * Invariants: (1) nothing is written before the pipeline's stream resolved, so a failure before output
 * (restriction, upstream) is an ordinary JSON error in the OpenAI envelope — unless the upstream is slow to begin
 * (`STREAM_OPEN_AFTER_MS`, `startEventStream`): then the stream opens with `: keep-alive` comments only, and a
 * failure before the first event (fallbacks tried, hold released) is `response.created`, `response.failed` and
 * `error` in the requested model's name; (2) once output began, the pipeline owns billing: ending its iterator
 * (`return()`) when the client goes away settles the call for what was produced, and a failure is rendered as
 * `response.failed` + `error` here, never thrown to Fastify.
 */
async function respondStreamed(
  ctx: ResponsesDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  call: CanonicalCall,
  frame: ResponseFrame,
  keep: Keep,
): Promise<FastifyReply> {
  const started = await startEventStream(
    reply,
    (onSlowStart) =>
      streamCall(ctx, principalOf(request), call, clientSignal(reply, ctx.shutdown), {
        refuses: responsesRefusal(call),
        onSlowStart,
      }),
    // No model answered: the Response is the one asked for, created and failed at once (SDK helpers that
    // accumulate the stream expect `response.created` first).
    (error) => {
      const writer = new ResponsesEventWriter(frame);
      return writer.begin() + writer.fail(error.code, error.message, error.toEnvelope().error);
    },
  );
  if (!started) return reply;
  const { raw, stream } = started;
  // The model that answers (a fallback's, when one did) is the one the Response names.
  const writer = new ResponsesEventWriter({ ...frame, model: stream.model.id });
  await relayEvents(raw, stream, {
    render: (event) => writer.write(event),
    // Kept before the client reads `response.completed`, so a follow-up with previous_response_id finds it.
    beforeWrite: async (event) => {
      if (event.type === 'end' && keep && writer.final && writer.final.status !== 'failed') {
        await keep(writer.final).catch((error) =>
          request.log.error({ err: error }, 'storing a streamed response failed'),
        );
      }
    },
    failure: (error) => {
      request.log.warn({ err: error, model: frame.model }, 'a responses stream failed after output began');
      const apiError =
        error instanceof ApiError
          ? error
          : new ApiError('UPSTREAM_ERROR', `The stream failed after output began: ${(error as Error).message}`);
      return writer.fail(apiError.code, apiError.message, apiError.toEnvelope().error);
    },
  });
  return reply;
}
