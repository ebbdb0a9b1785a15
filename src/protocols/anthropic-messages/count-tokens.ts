import type { AppContext } from '../../platform/context.ts';
import type { App } from '../../platform/http/server.ts';
import type { CanonicalCall } from '../../gateway/canonical.ts';
import { resolveModel } from '../../gateway/common.ts';
import { countTextTokens } from '../../providers/tokens.ts';
import { parseMessagesRequest, type MessagesRequest } from './parse.ts';
import { CountTokensBodySchema, CountTokensSchema, ERROR_RESPONSES } from './schemas.ts';

/** Framing tokens per message and the reply's priming, as the chat count has them (`providers/tokens.ts`). */
const PER_MESSAGE_TOKENS = 4;
const REPLY_PRIMING_TOKENS = 3;

/**
 * Prompt tokens of a canonical call by our tokenizer (OpenAI's o200k, as every hold counts): system,
 * messages (text, tool calls, tool results, reasoning), tool definitions, and each image at `imageTokens`.
 * SHIM until core exports its own canonical counter (messages-needs.md item 2): then this calls that one,
 * so that count_tokens says what the hold counts.
 */
export function countCallTokens(call: CanonicalCall, imageTokens: number): number {
  let total = REPLY_PRIMING_TOKENS;
  const text: string[] = [];
  for (const message of [{ content: call.system }, ...call.messages]) {
    total += PER_MESSAGE_TOKENS;
    for (const part of message.content) {
      if (part.type === 'text') text.push(part.text);
      else if (part.type === 'image') total += imageTokens;
      else if (part.type === 'tool_call') text.push(part.name, part.arguments);
      else if (part.type === 'tool_result') text.push(part.content);
      else if (part.type === 'reasoning') text.push(part.text);
    }
  }
  if (call.tools.length) text.push(JSON.stringify(call.tools));
  for (const piece of text) total += countTextTokens(piece);
  return total;
}

/**
 * `POST /api/v1/messages/count_tokens`: the input tokens of a Messages body, by our tokenizer (Anthropic's
 * own counts differ by a few percent; a call is billed on the upstream's). Not billed, nothing held; the
 * same credentials and permissions as the Messages route, and the model must exist (404 otherwise).
 */
export function registerCountTokensRoute(app: App, ctx: AppContext): void {
  app.post('/api/v1/messages/count_tokens', {
    schema: {
      tags: ['ai'],
      summary: 'Count the input tokens of an Anthropic Messages request (not billed)',
      description: 'The body of `POST /api/v1/messages` without `max_tokens`. Counted with Tollgate\'s tokenizer (o200k), images at the model\'s image-token budget.',
      security: [{ bearer: [] }, { apiKey: [] }],
      body: CountTokensBodySchema,
      response: { 200: CountTokensSchema, ...ERROR_RESPONSES },
    },
    config: { auth: ['ai:chat', 'ai:completions'], apiKeyHeader: true },
  }, async (request) => {
    const body = request.body as MessagesRequest;
    const call = parseMessagesRequest(body, { requireMaxTokens: false });
    const model = await resolveModel(ctx, call.model);
    return { input_tokens: countCallTokens(call, model.imageTokens ?? 0) };
  });
}
