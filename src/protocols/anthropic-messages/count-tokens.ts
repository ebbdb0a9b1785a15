import type { MessagesDeps } from './deps.ts';
import { principalOf, type App } from '../../platform/http/server.ts';
import type { CanonicalCall } from '../../gateway/canonical.ts';
import { resolveModel } from '../../gateway/common.ts';
import { countCallPromptTokens } from '../../gateway/run-call.ts';
import { documentHeldAtContext } from '../../gateway/chat-plan.ts';
import { parseMessagesRequest, type MessagesRequest } from './parse.ts';
import { CountTokensBodySchema, CountTokensSchema, ERROR_RESPONSES } from './schemas.ts';
import { anthropicErrorBody } from './errors.ts';

/** Images of a call (system and messages): each counts at the model's image-token budget, as the hold does. */
function imageParts(call: CanonicalCall): number {
  let images = 0;
  for (const message of [{ content: call.system }, ...call.messages])
    for (const part of message.content) if (part.type === 'image') images++;
  return images;
}

/**
 * `POST /api/v1/messages/count_tokens`: the input tokens of a Messages body, by our tokenizer (Anthropic's
 * own counts differ by a few percent; a call is billed on the upstream's). Not billed, nothing held; the
 * same credentials and permissions as the Messages route, and the model must exist (404 otherwise).
 */
export function registerCountTokensRoute(app: App, ctx: MessagesDeps): void {
  app.post(
    '/api/v1/messages/count_tokens',
    {
      schema: {
        tags: ['ai'],
        summary: 'Count the input tokens of an Anthropic Messages request (not billed)',
        description:
          "The body of `POST /api/v1/messages` without `max_tokens`. Counted with Tollgate's tokenizer (o200k), " +
          "images at the model's image-token budget, a text document as its title, context and text; a PDF (base64 or URL) or a document with " +
          "citations as the model's whole context, which is what a call holds for it (nothing smaller bounds what Anthropic bills for it).",
        body: CountTokensBodySchema,
        response: { 200: CountTokensSchema, ...ERROR_RESPONSES },
      },
      config: { auth: ['ai:chat', 'ai:completions'], apiKeyHeader: true, errorRenderer: anthropicErrorBody },
    },
    async (request) => {
      const body = request.body as MessagesRequest;
      const call = parseMessagesRequest(body, { requireMaxTokens: false, webSearch: ctx.config });
      const principal = principalOf(request);
      const model = await resolveModel(ctx, call.model, principal);
      const tokens = await ctx.promptCounts.countPrompt(principal, (count) => countCallPromptTokens(call, count));
      const counted = tokens + imageParts(call) * (model.imageTokens ?? 0);
      // A PDF (or a document with citations) counts as the hold counts it: the model's whole context.
      const whole = [call.system, ...call.messages.map((message) => message.content)].some((parts) =>
        parts.some(documentHeldAtContext),
      );
      return { input_tokens: whole && model.contextLength !== null ? Math.max(counted, model.contextLength) : counted };
    },
  );
}
