import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MessagesDeps } from './deps.ts';
import { ApiError } from '../../platform/errors.ts';
import { principalOf, type App } from '../../platform/http/server.ts';
import { jsonOrEventStream } from '../../platform/http/openapi.ts';
import { clientSignal } from '../../gateway/common.ts';
import { relayEvents, startEventStream } from '../../gateway/sse.ts';
import { ClientGone, completeCall, streamCall, type RunOptions } from '../../gateway/run-call.ts';
import type { CanonicalCall } from '../../gateway/canonical.ts';
import { messagesRefusal, parseMessagesRequest, type MessagesRequest } from './parse.ts';
import { renderMessage } from './render.ts';
import { AnthropicStreamRenderer } from './stream.ts';
import { ERROR_RESPONSES, MessageSchema, MessagesBodySchema } from './schemas.ts';
import { anthropicErrorBody, anthropicErrorFrame } from './errors.ts';

/**
 * `POST /api/v1/messages`: Anthropic's Messages API on the gateway's pipeline (any provider), billed by hold
 * and settle like chat. The Anthropic SDK reaches it with `baseURL: <tollgate>/api`, Claude Code with
 * `ANTHROPIC_BASE_URL=<tollgate>/api` (which adds `?beta=true`: any query string is accepted).
 */
export function registerMessagesRoute(app: App, ctx: MessagesDeps): void {
  app.post(
    '/api/v1/messages',
    {
      schema: {
        tags: ['ai'],
        summary: "Create a message (Anthropic Messages; `stream: true` answers Anthropic's Server-Sent Events)",
        description: [
          "Anthropic's request and answer, on any model of the catalogue. An Anthropic upstream receives the body as sent (model and max_tokens",
          'set by the gateway; `cache_control`, thinking and `top_k` kept) and its answer is relayed; any other upstream is translated. The call',
          'holds its worst-case cost before going upstream and is charged what the upstream reported (cache reads and writes included);',
          "`usage.cost` says how much, in credits. Errors come in Anthropic's envelope with Tollgate's `code` inside. The credential may be",
          'sent as `x-api-key` or `Authorization: Bearer`; `anthropic-version` and `anthropic-beta` are accepted.',
        ].join(' '),
        body: MessagesBodySchema,
        response: { 200: MessageSchema, ...ERROR_RESPONSES },
      },
      config: {
        auth: ['ai:chat', 'ai:completions'],
        apiKeyHeader: true,
        errorRenderer: anthropicErrorBody,
        documentedResponses: {
          200: jsonOrEventStream(
            MessageSchema,
            'The message, or with `stream: true` its events as Server-Sent Events.',
            "Anthropic's named events: `message_start`, `content_block_start` / `_delta` / `_stop`, `message_delta` (with `usage`), `message_stop`, and `ping`; a failure after output began, or after a slow upstream had the stream opened (`STREAM_OPEN_AFTER_MS`; until then only `: keep-alive` comments), is an `error` event in Anthropic's envelope.",
          ),
        },
      },
    },
    async (request, reply) => {
      const call = parseMessagesRequest(request.body as MessagesRequest, {
        requireMaxTokens: true,
        webSearch: ctx.config,
      });
      const signal = clientSignal(reply, ctx.shutdown);
      const options = { refuses: messagesRefusal(call) };
      if (!call.stream) {
        try {
          return renderMessage(await completeCall(ctx, principalOf(request), call, signal, options));
        } catch (error) {
          if (error instanceof ClientGone) return reply.hijack();
          throw error;
        }
      }
      return streamMessage(ctx, request, reply, call, signal, options);
    },
  );
}

/**
 * A streamed message, written event by event as the upstream produces them.
 *
 * Invariants: (1) nothing is written before the pipeline has the upstream's first event, unless the upstream is
 * slow to begin (`STREAM_OPEN_AFTER_MS`, `startEventStream`): then the stream opens with `: keep-alive` comments
 * only, and a failure before the first event is Anthropic's `event: error` frame, as after output; a failure
 * while nothing was written is an ordinary JSON error; either way the hold is released and the fallbacks tried;
 * (2) once output began, the pipeline settles every exit (end, upstream broken, client gone) exactly once before
 * its iterator finishes, and the response ends only after that, so a client that reads its wallet after the
 * stream sees the charge.
 */
async function streamMessage(
  ctx: MessagesDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  call: CanonicalCall,
  signal: AbortSignal,
  options: RunOptions,
): Promise<FastifyReply> {
  const started = await startEventStream(
    reply,
    (onSlowStart) => streamCall(ctx, principalOf(request), call, signal, { ...options, onSlowStart }),
    anthropicErrorFrame,
  );
  if (!started) return reply;
  const { raw, stream } = started;
  const renderer = new AnthropicStreamRenderer(stream.model.id, stream.promptTokens);
  await relayEvents(raw, stream, {
    render: (event) => renderer.render(event),
    failure: (error) => {
      request.log.error({ err: error }, 'a Messages stream failed');
      return renderer.error(new ApiError('INTERNAL_ERROR', 'The stream failed; the log has the request id.'));
    },
  });
  return reply;
}
