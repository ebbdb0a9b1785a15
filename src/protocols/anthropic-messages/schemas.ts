import Type from 'typebox';
import { AnthropicErrorSchema } from '#wire/errors.ts';
import { MODEL_ID_PATTERN } from '../../models/routes.ts';

/**
 * The TypeBox schemas of the Messages routes, for validation and the OpenAPI document. Validation here is
 * the shape a client gets wrong most (types of the top-level fields); blocks are checked one by one in
 * `parse.ts`, whose messages name the path of the block at fault (Ajv's `anyOf` errors would not).
 */

const CacheControl = Type.Object(
  { type: Type.String(), ttl: Type.Optional(Type.String()) },
  {
    additionalProperties: true,
    description:
      'Anthropic prompt caching (`{ type: "ephemeral" }`, 5-minute lifetime); passed to Anthropic upstreams.',
  },
);

/** One content block; the types accepted are listed in the description and checked by the parser. */
const ContentBlock = Type.Object(
  {
    type: Type.String({
      description:
        "`text`, `image` (source `base64` or `url`), `document` (source `base64` PDF, `text`, `content` or `url`; a PDF or a document with citations holds the model's whole context, a `file` source is refused), `tool_use`, `tool_result`, `thinking` or `redacted_thinking`; an earlier web search replayed in an assistant turn (`server_tool_use`, `web_search_tool_result`) on an Anthropic model only.",
    }),
    cache_control: Type.Optional(Type.Union([CacheControl, Type.Null()])),
  },
  { additionalProperties: true },
);

const Message = Type.Object(
  {
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('system')], {
      description:
        '`user`, `assistant`, or `system` (a mid-conversation system message, text only, as Claude Code sends).',
    }),
    content: Type.Union([Type.String(), Type.Array(ContentBlock)]),
  },
  { additionalProperties: false },
);

// name and input_schema are required of a custom tool by the parser, which first refuses another type by name
// (a server tool has no input_schema, a toolset no name).
const Tool = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: "The tool's name (required)." })),
    description: Type.Optional(Type.String()),
    input_schema: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: "A JSON Schema of the tool's input (required)." }),
    ),
    type: Type.Optional(
      Type.String({
        description:
          "`custom` (or none), or `web_search_20250305`: Anthropic's web search, on a model of the `anthropic` provider with a `pricing.webSearch` price, its `max_uses` set to `WEB_SEARCH_DEFAULT_MAX_USES` when absent and lowered to `WEB_SEARCH_MAX_USES`, each allowed search held for. Other server tools and Anthropic-defined tools (bash, text_editor…) are a 400 UNSUPPORTED_PARAMETER naming `tools[i].type`.",
      }),
    ),
    cache_control: Type.Optional(Type.Union([CacheControl, Type.Null()])),
  },
  { additionalProperties: true },
);

const ToolChoice = Type.Object(
  {
    type: Type.Union([Type.Literal('auto'), Type.Literal('any'), Type.Literal('tool'), Type.Literal('none')]),
    name: Type.Optional(Type.String()),
    disable_parallel_tool_use: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const Thinking = Type.Object(
  {
    type: Type.Union([
      Type.Literal('enabled'),
      Type.Literal('disabled'),
      Type.Literal('adaptive'),
      Type.Literal('between_tools'),
    ]),
    budget_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    display: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  {
    additionalProperties: false,
    description: 'Extended thinking; its tokens are output tokens, bounded by `max_tokens`.',
  },
);

const JsonOutputFormat = Type.Object(
  { type: Type.Literal('json_schema'), schema: Type.Object({}, { additionalProperties: true }) },
  { additionalProperties: true },
);

const OutputConfig = Type.Object(
  {
    effort: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    format: Type.Optional(Type.Union([JsonOutputFormat, Type.Null()])),
  },
  { additionalProperties: false },
);

/** The fields both routes read; `max_tokens` is required by `/messages` (checked by the parser, with its own message). */
const commonFields = {
  model: Type.String({
    pattern: MODEL_ID_PATTERN,
    maxLength: 300,
    description: 'A model id `<vendor>/<model>`, e.g. `anthropic/claude-sonnet-4`.',
  }),
  messages: Type.Array(Message, { minItems: 1 }),
  system: Type.Optional(Type.Union([Type.String(), Type.Array(ContentBlock)])),
  tools: Type.Optional(Type.Array(Tool)),
  tool_choice: Type.Optional(ToolChoice),
  thinking: Type.Optional(Thinking),
  output_config: Type.Optional(OutputConfig),
  cache_control: Type.Optional(Type.Union([CacheControl, Type.Null()])),
};

/** `POST /api/v1/messages`. */
export const MessagesBodySchema = Type.Object(
  {
    ...commonFields,
    max_tokens: Type.Optional(
      Type.Integer({ minimum: 1, description: 'Required: the most output tokens (thinking included).' }),
    ),
    stream: Type.Optional(Type.Boolean()),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    top_k: Type.Optional(Type.Integer({ minimum: 0 })),
    stop_sequences: Type.Optional(Type.Array(Type.String())),
    metadata: Type.Optional(
      Type.Object({ user_id: Type.Optional(Type.Union([Type.String(), Type.Null()])) }, { additionalProperties: true }),
    ),
  },
  { additionalProperties: true },
);

/** `POST /api/v1/messages/count_tokens`: the same body without `max_tokens` (sampling fields are ignored). */
export const CountTokensBodySchema = Type.Object(commonFields, { additionalProperties: true });

const Usage = Type.Object(
  {
    input_tokens: Type.Integer({
      description: "Input tokens beside the cache (Anthropic's meaning: cache reads and writes are not in it).",
    }),
    output_tokens: Type.Integer(),
    cache_creation_input_tokens: Type.Integer(),
    cache_read_input_tokens: Type.Integer(),
    server_tool_use: Type.Optional(
      Type.Object(
        { web_search_requests: Type.Integer() },
        { additionalProperties: true, description: 'The web searches billed (at `pricing.webSearch`), when some ran.' },
      ),
    ),
    cost: Type.Number({ description: 'What the call cost, in credits.' }),
  },
  { additionalProperties: true },
);

/** The Message object answered (non-streamed). */
export const MessageSchema = Type.Object(
  {
    id: Type.String({ description: '`msg_…`' }),
    type: Type.Literal('message'),
    role: Type.Literal('assistant'),
    model: Type.String({ description: 'The public model id that answered.' }),
    content: Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }), {
      description:
        '`text`, `thinking`, `redacted_thinking` and `tool_use` blocks; with web search, `server_tool_use`, `web_search_tool_result` and text `citations` as Anthropic sent them.',
    }),
    stop_reason: Type.Union([
      Type.String({ description: '`end_turn`, `max_tokens`, `stop_sequence`, `tool_use` or `refusal`.' }),
      Type.Null(),
    ]),
    stop_sequence: Type.Union([Type.String(), Type.Null()]),
    usage: Usage,
  },
  { additionalProperties: true },
);

/** `{ input_tokens }` of count_tokens. */
export const CountTokensSchema = Type.Object({ input_tokens: Type.Integer() });

/** The error statuses both routes may answer. */
export const ERROR_RESPONSES = Object.fromEntries(
  [400, 401, 402, 403, 404, 413, 415, 429, 500, 502, 503, 504].map((status) => [status, AnthropicErrorSchema]),
);
