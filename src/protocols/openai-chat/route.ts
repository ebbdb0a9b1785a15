import Type from 'typebox';
import { ApiErrorSchema } from '#wire/errors.ts';
import type { App } from '../../platform/http/server.ts';
import { jsonOrEventStream } from '../../platform/http/openapi.ts';
import type { GatewayDeps } from '../../gateway/deps.ts';
import { MODEL_ID_PATTERN } from '../../models/routes.ts';
import type { ChatRequest } from '../../gateway/chat-plan.ts';
import { answerCall } from '../../gateway/answer-call.ts';
import { chatRefusal, parseChat } from './parse.ts';
import { ChatStreamRenderer, renderCompletion } from './render.ts';
import { openAiStyleWire } from './stream-render.ts';

/** The chat request as validated: only what the gateway must read; every other OpenAI field passes through. */
const ChatBodySchema = Type.Object(
  {
    model: Type.String({
      pattern: MODEL_ID_PATTERN,
      maxLength: 300,
      description: 'A model id `<vendor>/<model>`, e.g. `tollgate/echo`.',
    }),
    messages: Type.Array(Type.Object({ role: Type.String({ maxLength: 64 }) }, { additionalProperties: true }), {
      minItems: 1,
    }),
    stream: Type.Optional(Type.Boolean()),
    stream_options: Type.Optional(
      Type.Union([
        Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, { additionalProperties: true }),
        Type.Null(),
      ]),
    ),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    max_completion_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    n: Type.Optional(Type.Integer({ minimum: 1, maximum: 16 })),
  },
  { additionalProperties: true },
);

/** The chat answer as the OpenAPI document lists it (the SDK's ChatCompletion type must accept every one). */
export const ChatCompletionSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('chat.completion'),
    created: Type.Integer(),
    model: Type.String(),
    choices: Type.Array(
      Type.Object(
        {
          index: Type.Integer(),
          message: Type.Object(
            { role: Type.String(), content: Type.Union([Type.String(), Type.Null()]) },
            { additionalProperties: true },
          ),
          finish_reason: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: true },
      ),
    ),
    usage: Type.Optional(
      Type.Object(
        {
          prompt_tokens: Type.Integer(),
          completion_tokens: Type.Integer(),
          total_tokens: Type.Optional(Type.Integer()),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { additionalProperties: true },
);

/** `POST /api/v1/chat/completions`: OpenAI-compatible chat, streamed or not, run through the call pipeline. */
export function registerChatRoute(app: App, ctx: GatewayDeps): void {
  app.post(
    '/api/v1/chat/completions',
    {
      schema: {
        tags: ['ai'],
        summary: 'Create a chat completion (OpenAI-compatible; `stream: true` answers Server-Sent Events)',
        description:
          "The OpenAI chat fields on the provider's pass-through allow-list (tools, response_format, vision parts, …) reach the provider; another field is a 400 UNSUPPORTED_PARAMETER naming it. The call holds its worst-case cost before going upstream (each image part at the model's image-token budget; a file part with inline file_data, a PDF, at the model's whole context length, its bytes uncounted so the output cap is not lowered for it, and a 400 UNSUPPORTED_PARAMETER naming messages[i].content[j] on a model without one or on an OpenRouter model that does not read files; a Claude model gets the PDF as a document block and refuses an input_audio part by its path) and is charged what it used; without max_tokens, the output cap is lowered to what the payer can afford. reasoning_effort reaches an OpenAI model in a level it has (none as minimal on gpt-5; the o-series low to high) and turns a Claude model's thinking on as its generation takes it (adaptive with output_config.effort from Claude 4.6 on, a budget_tokens share of the cap before); with a temperature other than 1, top_k, top_p below 0.95 or a forced tool_choice, which Anthropic refuses beside thinking, it is a 400 UNSUPPORTED_PARAMETER naming that field. Claude's thinking comes back as the message's `reasoning`.",
        security: [{ bearer: [] }],
        body: ChatBodySchema,
        response: {
          200: ChatCompletionSchema,
          400: ApiErrorSchema,
          402: ApiErrorSchema,
          404: ApiErrorSchema,
          429: ApiErrorSchema,
          502: ApiErrorSchema,
          504: ApiErrorSchema,
        },
      },
      config: {
        auth: ['ai:chat', 'ai:completions'],
        documentedResponses: {
          200: jsonOrEventStream(
            ChatCompletionSchema,
            'The completion, or with `stream: true` its chunks as Server-Sent Events.',
            '`data:` frames of `chat.completion.chunk` objects (with `stream_options.include_usage`, a last one carrying `usage`), then `data: [DONE]`; a failure after output began, or after a slow upstream had the stream opened (`STREAM_OPEN_AFTER_MS`; until then only `: keep-alive` comments), is a last `event: error` frame `{"error": {…}}`.',
          ),
        },
      },
    },
    async (request, reply) => {
      const body = request.body as ChatRequest;
      const call = parseChat(body);
      const wire = openAiStyleWire(renderCompletion, ChatStreamRenderer, body);
      return answerCall(ctx, request, reply, call, { refuses: chatRefusal(body, call) }, wire);
    },
  );
}
