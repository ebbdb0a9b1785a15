import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import { principalOf } from '../../platform/http/server.ts';
import type { ResponsesDeps } from './deps.ts';
import { resolveModel } from '../../gateway/common.ts';
import { estimateInputTokens } from '../../gateway/input-estimate.ts';
import { ApiErrorSchema } from '#wire/errors.ts';
import { CreateResponseBody } from './schemas.ts';
import { prepare } from './create.ts';
import type { ResponsesRequest } from './parse.ts';

const InputTokensAnswer = Type.Object({
  object: Type.Literal('response.input_tokens'),
  input_tokens: Type.Integer({ minimum: 0, description: "The input's tokens, as Tollgate counts them." }),
});

/**
 * `POST /api/v1/responses/input_tokens` (`client.responses.inputTokens.count` in the official SDKs): the input
 * tokens of a Responses body, before it is sent — the count a client sizes its context with.
 *
 * Invariants: not billed and nothing held; the same credentials, permissions and model checks as
 * `POST /api/v1/responses` (an unknown model, or one the key may not call, is refused as the call would be); the
 * body is read by the same parser, so what the call would refuse is refused here alike, and
 * `previous_response_id` counts the stored conversation it continues. The count is the one the hold takes for
 * text and tools, the o200k tokenizer's (the echo provider bills exactly it), with images at the model's
 * image-token budget and a PDF estimated by its pages.
 */
export function registerInputTokensRoute(app: App, ctx: ResponsesDeps): void {
  app.post(
    '/api/v1/responses/input_tokens',
    {
      schema: {
        tags: ['ai'],
        summary: 'Count the input tokens of a Responses request (not billed)',
        description:
          "The body of `POST /api/v1/responses` (fields only a generation reads, such as `max_output_tokens` or `stream`, change nothing). Tollgate's count: its tokenizer (o200k) over the instructions, input, tools and text format, as the hold counts them; images at the model's image-token budget; a PDF estimated by its pages. The stored conversation of `previous_response_id` is counted too.",
        security: [{ bearer: [] }],
        body: CreateResponseBody,
        response: { 200: InputTokensAnswer, 400: ApiErrorSchema, 403: ApiErrorSchema, 404: ApiErrorSchema },
      },
      config: { auth: ['ai:chat', 'ai:completions'] },
    },
    async (request) => {
      const principal = principalOf(request);
      const { call } = await prepare(ctx, principal, request.body as ResponsesRequest);
      const model = await resolveModel(ctx, call.model, principal);
      return {
        object: 'response.input_tokens' as const,
        input_tokens: await estimateInputTokens(ctx, principal, call, model),
      };
    },
  );
}
