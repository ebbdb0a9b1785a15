import type { FastifyError } from 'fastify';
import type { AppContext } from '../../platform/context.ts';
import { ApiError } from '../../platform/errors.ts';
import { toApiError, type App } from '../../platform/http/server.ts';
import { anthropicErrorBody } from './errors.ts';

/**
 * SHIM, to delete once core's per-route error renderer lands (see /work/briefs/messages-needs.md item 1):
 * the error handler of the Fastify scope the Messages routes live in, answering every error (validation,
 * authentication, restrictions, upstream failures) in Anthropic's envelope. It does what the server's own
 * handler does (the same ApiError mapping, 5xx logged, restriction refusals counted), only the envelope
 * differs.
 */
export function useAnthropicErrorEnvelope(scope: App, ctx: AppContext): void {
  scope.setErrorHandler((error, request, reply) => {
    let apiError = toApiError(error);
    if ((error as FastifyError)?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const limit = request.routeOptions.bodyLimit ?? ctx.config.BODY_LIMIT_DEFAULT_BYTES;
      apiError = new ApiError('PAYLOAD_TOO_LARGE', `The request body is larger than the ${limit} bytes this route accepts.`, { details: { limit } });
    }
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
    if (['SPENDING_LIMIT_EXCEEDED', 'INSUFFICIENT_CREDITS', 'RATE_LIMITED'].includes(apiError.code)) ctx.metrics.restrictions.inc({ code: apiError.code });
    return reply.code(apiError.status).headers(apiError.headers).send({ ...anthropicErrorBody(apiError), request_id: String(request.id) });
  });
}
