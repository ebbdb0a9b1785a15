import Type from 'typebox';
import { MODEL_ID_PATTERN } from '../../models/routes.ts';

/**
 * The route schemas of the Responses API, for validation and the OpenAPI document. The request schema
 * checks the shape of each field; what an input item may hold is checked by the parser, which names the
 * offending `param` (the union of item types is too wide to explain in a schema error).
 */

const Loose = { additionalProperties: true } as const;

/** `POST /api/v1/responses` body. */
export const CreateResponseBody = Type.Object(
  {
    model: Type.String({
      pattern: MODEL_ID_PATTERN,
      maxLength: 300,
      description: 'A model id `<vendor>/<model>`, e.g. `tollgate/echo`.',
    }),
    input: Type.Optional(
      Type.Union([
        Type.String(),
        Type.Array(
          Type.Object(
            {},
            {
              ...Loose,
              description:
                "A `message` (role user/assistant/system/developer; content `input_text`, `input_image` with `image_url`, `input_file` with inline `file_data` (a PDF held at the model's whole context length), `output_text`), `function_call`, `function_call_output`, `reasoning` or `item_reference` item.",
            },
          ),
        ),
      ]),
    ),
    instructions: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    tools: Type.Optional(
      Type.Array(
        Type.Object(
          {
            type: Type.String({
              description:
                'Only `function` (and `namespace`, grouping functions) is supported; another type (a built-in tool, `custom`) is a 400 UNSUPPORTED_PARAMETER naming `tools[i].type`.',
            }),
          },
          Loose,
        ),
      ),
    ),
    tool_choice: Type.Optional(Type.Union([Type.String(), Type.Object({}, Loose)])),
    max_output_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
    temperature: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 2 }), Type.Null()])),
    top_p: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()])),
    text: Type.Optional(
      Type.Union([
        Type.Object({ format: Type.Optional(Type.Object({ type: Type.String() }, Loose)) }, Loose),
        Type.Null(),
      ]),
    ),
    reasoning: Type.Optional(
      Type.Union(
        [Type.Object({ effort: Type.Optional(Type.Union([Type.String(), Type.Null()])) }, Loose), Type.Null()],
        {
          description:
            '`effort` (`none` to `max`): an OpenAI model gets it in a level it has (`none` as `minimal` on gpt-5; the o-series `low` to `high`); a Claude model gets thinking as its generation takes it (adaptive with `output_config.effort` from Claude 4.6 on, a `budget_tokens` share of the cap before), and its thinking comes back as `reasoning` items. With a `temperature` other than 1, a `top_p` below 0.95 or a forced `tool_choice` (which Anthropic refuses beside thinking) that is a 400 UNSUPPORTED_PARAMETER naming the field.',
        },
      ),
    ),
    parallel_tool_calls: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    metadata: Type.Optional(
      Type.Union([
        Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 512 }), { maxProperties: 16 }),
        Type.Null(),
      ]),
    ),
    store: Type.Optional(
      Type.Union([
        Type.Boolean({
          description:
            "Keep the response so `previous_response_id` can continue it and `GET /api/v1/responses/:id` read it. Default **false** on Tollgate (OpenAI's default is true).",
        }),
        Type.Null(),
      ]),
    ),
    previous_response_id: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
    stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  },
  Loose,
);

/** The Response object (the `openai` SDK's `Response`). */
export const ResponseSchema = Type.Object(
  {
    id: Type.String({ description: '`resp_…`' }),
    object: Type.Literal('response'),
    created_at: Type.Integer(),
    status: Type.String({ description: '`completed`, `incomplete` (see `incomplete_details.reason`) or `failed`.' }),
    model: Type.String(),
    output: Type.Array(Type.Object({ type: Type.String(), id: Type.String() }, Loose)),
    usage: Type.Union([
      Type.Object(
        {
          input_tokens: Type.Integer(),
          input_tokens_details: Type.Object({ cached_tokens: Type.Integer() }, Loose),
          output_tokens: Type.Integer(),
          output_tokens_details: Type.Object({ reasoning_tokens: Type.Integer() }, Loose),
          total_tokens: Type.Integer(),
          cost: Type.Optional(Type.Number({ description: 'What the call was charged, in credits.' })),
        },
        Loose,
      ),
      Type.Null(),
    ]),
  },
  Loose,
);

/** `:id` of a stored response. */
export const ResponseIdParams = Type.Object({
  id: Type.String({ maxLength: 100, description: 'A response id, `resp_…`.' }),
});
