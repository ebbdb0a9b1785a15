import Type from 'typebox';
import { ApiErrorSchema } from '#wire/errors.ts';
import type { App } from '../../platform/http/server.ts';
import { jsonOrEventStream } from '../../platform/http/openapi.ts';
import type { GatewayDeps } from '../../gateway/deps.ts';
import { MODEL_ID_PATTERN } from '../../models/routes.ts';
import { answerCall } from '../../gateway/answer-call.ts';
import { openAiStyleWire } from '../openai-chat/stream-render.ts';
import { completionRefusal, DEFAULT_COMPLETION_MAX_TOKENS, parseCompletion, type CompletionRequest } from './parse.ts';
import { renderTextCompletion, TextCompletionStreamRenderer } from './render.ts';

const errorContent = { 'application/json': { schema: ApiErrorSchema } };

/** The legacy completion request as validated: only what the gateway reads; the other fields are checked per provider. */
const CompletionBodySchema = Type.Object(
  {
    model: Type.String({
      pattern: MODEL_ID_PATTERN,
      maxLength: 300,
      description: 'A model id `<vendor>/<model>`, e.g. `tollgate/echo`.',
    }),
    prompt: Type.Union([Type.String(), Type.Array(Type.Unknown(), { minItems: 1, maxItems: 2048 })], {
      description: 'The text to continue, or several texts (one completion each). Token-id prompts are refused.',
    }),
    suffix: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    max_tokens: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
        description: `The output cap of each completion; omitted, ${DEFAULT_COMPLETION_MAX_TOKENS} (as OpenAI's).`,
      }),
    ),
    n: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 128 }), Type.Null()])),
    best_of: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 20 }), Type.Null()])),
    echo: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    stream_options: Type.Optional(
      Type.Union([
        Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, { additionalProperties: true }),
        Type.Null(),
      ]),
    ),
  },
  { additionalProperties: true },
);

const TextCompletionSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('text_completion'),
    created: Type.Integer(),
    model: Type.String(),
    choices: Type.Array(
      Type.Object(
        {
          index: Type.Integer(),
          text: Type.String(),
          finish_reason: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: true },
      ),
    ),
    usage: Type.Object(
      {
        prompt_tokens: Type.Integer(),
        completion_tokens: Type.Integer(),
        total_tokens: Type.Integer(),
        cost: Type.Number({ description: 'What the call was charged, in credits.' }),
      },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: true },
);

/**
 * `POST /api/v1/completions`: OpenAI's legacy text completions (the `openai` SDK's `completions.create`, code
 * editors' fill-in-the-middle), streamed or not, on the call pipeline with chat's permissions and billing.
 */
export function registerCompletionsRoute(app: App, ctx: GatewayDeps): void {
  const speaksCompletions = (provider: string) =>
    ctx.providers.get(provider)?.speaks.includes('openai-completions') === true;
  app.post(
    '/api/v1/completions',
    {
      schema: {
        tags: ['ai'],
        summary: 'Create a legacy text completion (OpenAI-compatible; `stream: true` answers Server-Sent Events)',
        description:
          "A model of an OpenAI-compatible provider gets the body on its own /completions (model and max_tokens replaced): it continues the prompt, with suffix, echo, logprobs, n and best_of as OpenAI takes them. A model of another provider (Anthropic, the echo model) gets one prompt as one user message, and a field it has no form for is a 400 UNSUPPORTED_PARAMETER naming it. The call holds its worst case first: the prompts and suffix as input, max_tokens (16 when omitted, as OpenAI's) for each of n, or best_of, per prompt as output; it is charged what the upstream reports. Prompts as token ids, and echo with stream, are refused.",
        security: [{ bearer: [] }],
        body: CompletionBodySchema,
      },
      config: {
        auth: ['ai:chat', 'ai:completions'],
        billed: true,
        documentedResponses: {
          400: { description: 'A field refused or malformed (`param` names it).', content: errorContent },
          404: { description: 'No such model, or not one the key may call.', content: errorContent },
          502: { description: 'The upstream failed before any output.', content: errorContent },
          504: { description: 'The upstream did not answer in time.', content: errorContent },
          200: jsonOrEventStream(
            TextCompletionSchema,
            'The completion, or with `stream: true` its chunks as Server-Sent Events.',
            '`data:` frames of `text_completion` objects (with `stream_options.include_usage`, a last one with no choices carrying `usage`), then `data: [DONE]`; a failure after output began, or after a slow upstream had the stream opened (`STREAM_OPEN_AFTER_MS`), is a last `event: error` frame `{"error": {…}}`.',
          ),
        },
      },
    },
    async (request, reply) => {
      const body = request.body as CompletionRequest;
      const call = parseCompletion(body);
      const wire = openAiStyleWire(renderTextCompletion, TextCompletionStreamRenderer, body);
      return answerCall(ctx, request, reply, call, { refuses: completionRefusal(body, speaksCompletions) }, wire);
    },
  );
}
