import Type from 'typebox';
import type { DocumentedResponse } from '../platform/http/openapi.ts';

/**
 * The success bodies of the OpenAI pass-through routes (embeddings, images, audio to text, realtime sessions), in
 * the OpenAI wire shape (openai-node 7.59's `resources/**.d.ts`) and with what Tollgate sets itself.
 *
 * They are given to the OpenAPI document only (`config.documentedResponses`), never as a route's `response`
 * schema: Fastify would serialise the answer with it and drop or coerce what it does not list, and an upstream's
 * new field must reach the client. For the same reason every object is `additionalProperties: true`, so that a
 * client validating strictly against the document does not refuse an answer for a field OpenAI added later.
 */

/** An open object: the fields OpenAI documents, and whatever else the upstream sends. */
const open = <P extends Record<string, Type.TSchema>>(properties: P, description?: string) =>
  Type.Object(properties, { additionalProperties: true, ...(description ? { description } : {}) });

const Integer = (description?: string) => Type.Integer(description ? { description } : {});
const Num = (description?: string) => Type.Number(description ? { description } : {});

const EmbeddingsAnswer = open({
  object: Type.Literal('list'),
  data: Type.Array(
    open({
      object: Type.Literal('embedding'),
      index: Integer('The position of its input in `input`.'),
      embedding: Type.Union([
        Type.Array(Type.Number()),
        Type.String({ description: 'With `encoding_format: "base64"`: little-endian float32, base64.' }),
      ]),
    }),
  ),
  model: Type.String({ description: "Tollgate's model id, as asked." }),
  usage: open(
    {
      prompt_tokens: Integer("The input tokens charged: the provider's count, else the gateway's."),
      total_tokens: Integer(),
      cost: Num('What the call was charged, in credits.'),
    },
    "The usage billed (never the provider's own `cost`).",
  ),
});

const TokenDetails = open({ image_tokens: Type.Optional(Integer()), text_tokens: Type.Optional(Integer()) });

const ImagesAnswer = open({
  created: Integer('When the images were made, in seconds since the epoch.'),
  data: Type.Optional(
    Type.Array(
      open({
        b64_json: Type.Optional(Type.String({ description: 'The image, base64 (GPT image models, or `b64_json`).' })),
        url: Type.Optional(Type.String({ description: 'Where to fetch the image (`response_format: "url"`).' })),
        revised_prompt: Type.Optional(Type.String()),
      }),
      { description: 'The images, as the provider returned them (charged: at most `n`).' },
    ),
  ),
  background: Type.Optional(Type.String()),
  output_format: Type.Optional(Type.String()),
  quality: Type.Optional(Type.String()),
  size: Type.Optional(Type.String()),
  usage: Type.Optional(
    open(
      {
        input_tokens: Type.Optional(Integer()),
        input_tokens_details: Type.Optional(TokenDetails),
        output_tokens: Type.Optional(Integer()),
        output_tokens_details: Type.Optional(TokenDetails),
        total_tokens: Type.Optional(Integer()),
        cost: Num('What the call was charged, in credits.'),
      },
      "The provider's token usage (GPT image models) as it reported it, never its own `cost`, with Tollgate's `cost`.",
    ),
  ),
});

const Segment = open({
  id: Type.Optional(Integer()),
  start: Type.Optional(Num('Seconds from the start of the audio.')),
  end: Type.Optional(Num()),
  text: Type.Optional(Type.String()),
});

const TextUsage = Type.Union([
  open({
    type: Type.Literal('tokens'),
    input_tokens: Type.Optional(Integer()),
    output_tokens: Type.Optional(Integer()),
    total_tokens: Type.Optional(Integer()),
  }),
  open({ type: Type.Literal('duration'), seconds: Num('The seconds of audio read.') }),
]);

/** OpenAI's `Transcription`, `TranscriptionVerbose` and `TranscriptionDiarized`, and the two of `Translation`. */
const AudioTextAnswer = open({
  text: Type.String({ description: 'The transcript (or its English translation).' }),
  language: Type.Optional(Type.String()),
  duration: Type.Optional(Num('The seconds of audio (`verbose_json`, `diarized_json`).')),
  task: Type.Optional(Type.String()),
  segments: Type.Optional(Type.Array(Segment)),
  words: Type.Optional(Type.Array(open({ word: Type.String(), start: Num(), end: Num() }))),
  logprobs: Type.Optional(Type.Array(open({}))),
  usage: Type.Optional(TextUsage),
});

const RealtimeSessionAnswer = open({
  client_secret: open(
    {
      value: Type.String({ description: 'The ephemeral key the client connects to the provider with.' }),
      expires_at: Integer('When the key expires, in seconds since the epoch (within REALTIME_MAX_SESSION_SECONDS).'),
    },
    'The ephemeral key the browser uses with the provider.',
  ),
  model: Type.String({ description: "Tollgate's model id, as asked." }),
  id: Type.Optional(Type.String()),
  object: Type.Optional(Type.String()),
  modalities: Type.Optional(Type.Array(Type.String())),
  instructions: Type.Optional(Type.String()),
  voice: Type.Optional(Type.String()),
  input_audio_format: Type.Optional(Type.String()),
  output_audio_format: Type.Optional(Type.String()),
  max_response_output_tokens: Type.Optional(
    Type.Union([Integer("The gateway's cap (REALTIME_MAX_RESPONSE_OUTPUT_TOKENS)."), Type.String()]),
  ),
});

const json = (description: string, schema: object): Record<string, DocumentedResponse> => ({
  200: { description, content: { 'application/json': { schema } } },
});

/** `POST /api/v1/embeddings`: OpenAI's `CreateEmbeddingResponse`, its model and usage Tollgate's. */
export const EMBEDDINGS_ANSWERS = json(
  'The vectors, one per input, as the provider returned them (base64 when `encoding_format: "base64"` was asked); `model` is Tollgate\'s id and `usage` the tokens charged with `cost` in credits.',
  EmbeddingsAnswer,
);

/** `POST /api/v1/images/generations` and `/images/edits`: OpenAI's `ImagesResponse`, passed through. */
export const IMAGES_ANSWERS = json(
  "The images, in OpenAI's `ImagesResponse` shape, as the provider returned them; `usage.cost` is what the call was charged, in credits.",
  ImagesAnswer,
);

/**
 * `POST /api/v1/audio/transcriptions` and `/translations`: the JSON transcript (`json`, `verbose_json`,
 * `diarized_json`), the bare text for `response_format` `text`, `srt` or `vtt`, or a streamed transcription's events.
 */
export const AUDIO_TEXT_ANSWERS: Record<string, DocumentedResponse> = {
  200: {
    description:
      'The transcript as JSON (`response_format` `json`, the default, `verbose_json` or `diarized_json`), as text for `text`, `srt` and `vtt` (in the content type the provider gave it), or as Server-Sent Events with `stream: true`.',
    content: {
      'application/json': { schema: AudioTextAnswer },
      'text/plain': { schema: { type: 'string', description: 'The transcript, or its SRT or WebVTT captions.' } },
      'text/event-stream': {
        schema: {
          type: 'string',
          description:
            "With `stream: true` (the gpt-4o transcription models): the provider's `transcript.text.delta` events, then `transcript.text.done` with the usage charged, relayed once the provider has ended.",
        },
      },
    },
  },
};

/** `POST /api/v1/realtime/sessions`: OpenAI's `SessionCreateResponse`, its model Tollgate's id. */
export const REALTIME_SESSION_ANSWERS = json(
  "The session the provider minted, with its `client_secret`; `model` is Tollgate's id and the caps are the gateway's.",
  RealtimeSessionAnswer,
);

const RealtimeClientSecretAnswer = open({
  value: Type.String({ description: 'The ephemeral key (`ek_…`) the client connects to the provider with.' }),
  expires_at: Integer('When the key expires, in seconds since the epoch.'),
  session: open(
    { model: Type.Optional(Type.String({ description: "Tollgate's model id, as asked." })) },
    "The provider's effective session, its caps included; the model named by Tollgate's id.",
  ),
});

/** `POST /api/v1/realtime/client_secrets`: OpenAI's `ClientSecretCreateResponse`, its session's model Tollgate's id. */
export const REALTIME_CLIENT_SECRET_ANSWERS = json(
  "The ephemeral key the provider minted and the session it opens; the session's `model` is Tollgate's id and the caps are the gateway's.",
  RealtimeClientSecretAnswer,
);
