import type { FastifyBaseLogger } from 'fastify';
import type { MessagesDeps } from './deps.ts';
import { principalOf, type App } from '../../platform/http/server.ts';
import type { CanonicalCall } from '../../gateway/canonical.ts';
import type { CatalogueModel } from '../../models/catalogue.ts';
import { clientSignal, resolveModel } from '../../gateway/common.ts';
import { estimateInputTokens } from '../../gateway/input-estimate.ts';
import { answerDeadlineOf, ClientGone, UpstreamAttempt, upstreamFailure } from '../../gateway/upstream.ts';
import { UpstreamError } from '../../providers/types.ts';
import { groupThousands } from '../../platform/money.ts';
import { parseMessagesRequest, type MessagesRequest } from './parse.ts';
import { PDF_BYTES_PER_PAGE, PDF_PAGE_TOKENS } from '../../gateway/document-estimate.ts';
import { CountTokensBodySchema, CountTokensSchema, ERROR_RESPONSES } from './schemas.ts';
import { anthropicErrorBody } from './errors.ts';

/**
 * The fields of a Messages body that Anthropic's count_tokens takes (the SDK's `MessageCountTokensParams`), model
 * apart. What only a generation reads (`max_tokens`, `stream`, sampling, `stop_sequences`, `metadata`,
 * `service_tier`, `diagnostics`) changes no input token, and count_tokens refuses it as an extra input.
 */
const COUNTED_FIELDS = [
  'messages',
  'system',
  'tools',
  'tool_choice',
  'thinking',
  'output_config',
  'cache_control',
  'speed',
] as const;

/**
 * The longest a count waits for the provider (or the model's own `answerTimeoutMs` when shorter) before the gateway
 * counts itself: Anthropic answers a count in well under a second, and a client sizing its context should not wait
 * the minutes a generation may take to begin.
 */
export const UPSTREAM_COUNT_TIMEOUT_MS = 10_000;

/**
 * The provider's own count of the body (Anthropic's `count_tokens`), or null when its provider has none or it failed
 * (network, timeout, 429, 5xx, a 4xx such as an unknown model or refused credentials): the caller then counts itself,
 * and one warn line says why (model, status, the provider's message; no credential, no body). A 400 is Anthropic
 * saying the body is invalid: the same body sent to `/messages` would be refused alike, so it is answered as the
 * Messages route answers it (400 INVALID_REQUEST with the provider's message), not counted.
 *
 * Billing invariant: Anthropic's count_tokens is free, so nothing is held or charged for it; the body sent is the
 * parsed one (`call.native`: only fields the parser allows, `context_management` dropped), with the fields
 * count_tokens takes, the model replaced by the upstream id, as the Messages pass-through sends it.
 */
async function providerCount(
  ctx: MessagesDeps,
  call: CanonicalCall,
  model: CatalogueModel,
  client: AbortSignal,
  log: FastifyBaseLogger,
): Promise<number | null> {
  const adapter = ctx.providers.get(model.provider);
  if (!adapter?.countTokens || !call.native) return null;
  const body: Record<string, unknown> = { model: model.upstreamModel };
  for (const field of COUNTED_FIELDS) if (call.native.body[field] !== undefined) body[field] = call.native.body[field];
  const attempt = new UpstreamAttempt(client, Math.min(answerDeadlineOf(ctx, model), UPSTREAM_COUNT_TIMEOUT_MS));
  try {
    return await adapter.countTokens(body, { signal: attempt.signal });
  } catch (error) {
    if (client.aborted) throw new ClientGone('The client went away before the count.');
    if (error instanceof UpstreamError && error.status === 400 && !attempt.timedOut)
      throw upstreamFailure(error, attempt);
    log.warn(
      {
        model: model.id,
        provider: model.provider,
        status: attempt.timedOut ? 504 : error instanceof UpstreamError ? error.status : 502,
        reason: attempt.timedOut ? `no answer within ${attempt.timeoutMs} ms` : (error as Error).message,
      },
      "count_tokens: the provider's count failed; answering the gateway's own count",
    );
    return null;
  } finally {
    attempt.dispose();
  }
}

/**
 * `POST /api/v1/messages/count_tokens`: the input tokens of a Messages body. On a model whose provider counts
 * (Anthropic's), the provider's exact count; otherwise, or when that fails, the gateway's own (see
 * {@link estimateInputTokens}). Not billed, nothing held; the same credentials and permissions as the Messages route, and
 * the model must exist (404 otherwise).
 */
export function registerCountTokensRoute(app: App, ctx: MessagesDeps): void {
  app.post(
    '/api/v1/messages/count_tokens',
    {
      schema: {
        tags: ['ai'],
        summary: 'Count the input tokens of an Anthropic Messages request (not billed)',
        description:
          "The body of `POST /api/v1/messages` without `max_tokens`. On a model of the `anthropic` provider, Anthropic's own count " +
          '(its `count_tokens` endpoint, exact for PDFs, images, tools and thinking); a 400 from it about the body is answered as a 400. ' +
          `On another model, or when Anthropic's count fails (unreachable, no answer within ${UPSTREAM_COUNT_TIMEOUT_MS / 1000} seconds, 429, 5xx, another 4xx), Tollgate's ` +
          "estimate: its tokenizer (o200k), images at the model's image-token budget, a text document as its title, context and text, and a PDF " +
          `at ${groupThousands(PDF_PAGE_TOKENS)} tokens a page (its pages read from the file, else one per ${PDF_BYTES_PER_PAGE / 1000} KB; one page for a PDF by URL). A count is not what a call ` +
          "holds: a call with a PDF still holds the model's whole context.",
        body: CountTokensBodySchema,
        response: { 200: CountTokensSchema, ...ERROR_RESPONSES },
      },
      config: { auth: ['ai:chat', 'ai:completions'], apiKeyHeader: true, errorRenderer: anthropicErrorBody },
    },
    async (request, reply) => {
      const body = request.body as MessagesRequest;
      const call = parseMessagesRequest(body, { requireMaxTokens: false, webSearch: ctx.config });
      const principal = principalOf(request);
      const model = await resolveModel(ctx, call.model, principal);
      let counted: number | null;
      try {
        counted = await providerCount(ctx, call, model, clientSignal(reply, ctx.shutdown), request.log);
      } catch (error) {
        if (error instanceof ClientGone) return reply.hijack();
        throw error;
      }
      return { input_tokens: counted ?? (await estimateInputTokens(ctx, principal, call, model)) };
    },
  );
}
