import Type, { type Static } from 'typebox';
import { TIMER_MAX_MS } from '../platform/config.ts';

/** The AI API's settings: upload size, images, affordable output, transcriptions, realtime. Part of the one configuration schema (src/config.ts). */
export const GatewayConfigSection = Type.Object({
  BODY_LIMIT_UPLOAD_BYTES: Type.Integer({
    minimum: 1024,
    default: 25 * 1024 * 1024,
    description:
      "Largest upload: a transcription's or translation's audio file (`/api/v1/audio/transcriptions`, `/api/v1/audio/translations`), or an image edit's images and mask together (`/api/v1/images/edits`).",
  }),
  MAX_IMAGES_PER_REQUEST: Type.Integer({
    minimum: 1,
    maximum: 500,
    default: 20,
    description:
      "Most image parts one chat request may carry, and most source images of an image edit when lower than OpenAI's 16 (each is held at its model's image-token budget); more is a 400 `TOO_MANY_IMAGES`.",
  }),
  MIN_AFFORDABLE_OUTPUT_TOKENS: Type.Integer({
    minimum: 1,
    default: 256,
    description:
      "A chat without `max_tokens` that cannot afford its model's full output cap is sent with the cap it can afford, if at least this many tokens; below it the call is refused (402/429).",
  }),
  MAX_TRANSCRIPTION_SECONDS: Type.Integer({
    minimum: 1,
    maximum: 86400,
    default: 3600,
    description:
      "Longest audio a transcription accepts (a model's `maxPredictSeconds` lowers it); longer is a 400 `AUDIO_TOO_LONG`.",
  }),
  PROMPT_COUNT_MEMORY_ENTRIES: Type.Integer({
    minimum: 0,
    maximum: 1_000_000,
    default: 16_384,
    description:
      'Token counts of long prompt texts (1 K characters or more) remembered per credential (user, app and key), so that a conversation resent whole each turn is counted only for what is new (each entry ~180 bytes); 0 counts every text every time.',
  }),
  STREAM_OPEN_AFTER_MS: Type.Integer({
    minimum: 0,
    maximum: TIMER_MAX_MS,
    default: 10_000,
    description:
      "How long a streamed call (chat, Responses, Messages), its hold placed, waits for its upstream's first event before its stream is opened anyway: status 200, the event-stream headers, then a `: keep-alive` comment at once and each 15 s until the first event. A reasoning model may take minutes to begin, while Node's `fetch` (the official SDKs') gives up after 300 s without headers and a proxy in front often after 60 s. A failure before it is an ordinary JSON error with its status; after it, an SSE `event: error` frame (fallbacks are tried either way). 0 opens every stream as soon as its hold is placed, so even an immediate upstream failure is then an error frame.",
  }),
  REALTIME_ENABLED: Type.Boolean({
    default: false,
    description:
      'Enables `POST /api/v1/realtime/client_secrets` and `POST /api/v1/realtime/sessions` (off: 404). Each session is charged its worst case, set by the two caps below.',
  }),
  REALTIME_MAX_SESSION_SECONDS: Type.Integer({
    minimum: 10,
    maximum: 7200,
    default: 1800,
    description:
      "Realtime: the seconds each session is held and charged for (`second` price), and the lifetime of its client secret set upstream; keep it at or above the provider's own session limit (OpenAI: 30 minutes).",
  }),
  REALTIME_MAX_RESPONSE_OUTPUT_TOKENS: Type.Integer({
    minimum: 1,
    maximum: 4096,
    default: 1024,
    description:
      "Realtime: the output tokens per response set on the upstream session (`max_output_tokens` of a client secret's session, `max_response_output_tokens` of `/realtime/sessions`); a client may ask for fewer.",
  }),
});

/** This section, parsed. */
export type GatewayConfig = Static<typeof GatewayConfigSection>;
